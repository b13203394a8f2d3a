"""One request, one trace; usage kept from yielded chunks; the model that answered names the span;
a bad price entry refused alone; a warning before init."""

from __future__ import annotations

import logging

import openai
import pytest

from infersight import sdk
from infersight.demo import FakeLLM


@pytest.fixture(scope="module")
def llm():
    server = FakeLLM(latency_s=(0.01, 0.01), stream_chunk_delay_s=0.001).start()
    yield server
    server.stop()


def test_a_rag_request_is_one_trace_under_the_request_span(spans, llm):
    client = openai.OpenAI(base_url=llm.url + "/v1", api_key="test", max_retries=0)

    @sdk.traced_retrieval(data_source="kb")
    def retrieve(query: str):
        return [{"id": "a", "text": "Invoices live under Billing.", "score": 0.8}, {"id": "b", "text": "x"}]

    @sdk.traced_rerank(model="bge-reranker")
    def rerank(query: str, documents: list):
        return documents[:1]

    @sdk.traced_llm(provider="openai")
    def answer(messages):
        return client.chat.completions.create(model="gpt-4o-mini", messages=messages)

    with sdk.request("acme", route="support.answer", user_id="u-1"):
        docs = rerank("invoice?", documents=retrieve("invoice?"))
        answer([{"role": "user", "content": f"invoice? {docs[0]['text']}"}])
    answer([{"role": "user", "content": "outside any request"}])  # a trace of its own

    *inside, alone = spans.get_finished_spans()
    root = next(s for s in inside if s.name == "request support.answer")
    assert root.parent is None
    assert {s.attributes.get("gen_ai.operation.name") for s in inside if s is not root} == {"retrieval", "rerank",
                                                                                           "chat"}
    for s in inside:
        assert s.context.trace_id == root.context.trace_id
        assert s is root or s.parent.span_id == root.context.span_id
        assert s.attributes["infersight.tenant.id"] == "acme"
    assert alone.context.trace_id != root.context.trace_id


def test_a_generator_yielding_provider_chunks_keeps_the_provider_usage(spans, llm):
    client = openai.OpenAI(base_url=llm.url + "/v1", api_key="test", max_retries=0)

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def stream(messages):
        yield from client.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True,
                                                  stream_options={"include_usage": True})

    usage = None
    for chunk in stream([{"role": "user", "content": "hello there"}]):
        usage = chunk.usage or usage
    (span,) = spans.get_finished_spans()
    a = span.attributes
    assert "infersight.usage.estimated" not in a
    assert a["gen_ai.usage.input_tokens"] == usage.prompt_tokens
    assert a["gen_ai.usage.output_tokens"] == usage.completion_tokens


def test_the_span_is_named_after_the_model_called_not_the_decorators_default(spans):
    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def ask(model: str):
        return {"model": f"{model}-2024-08-06", "usage": {"prompt_tokens": 1, "completion_tokens": 1}}

    ask(model="gpt-4o")
    (span,) = spans.get_finished_spans()
    assert span.name == "chat gpt-4o-2024-08-06"
    assert span.attributes["gen_ai.request.model"] == "gpt-4o"
    assert span.attributes["gen_ai.response.model"] == "gpt-4o-2024-08-06"


def test_retrieval_content_follows_the_capture_setting(make_sdk):
    spans = make_sdk(capture_content=False)

    @sdk.traced_retrieval
    def retrieve(query: str):
        return ["secret doc"]

    retrieve("secret query")
    (span,) = spans.get_finished_spans()
    assert "gen_ai.retrieval.query.text" not in span.attributes
    assert "gen_ai.retrieval.documents" not in span.attributes
    assert span.attributes["infersight.retrieval.returned"] == 1


def test_a_bad_price_entry_is_refused_alone_with_a_warning(make_sdk, caplog):
    with caplog.at_level(logging.WARNING, logger="infersight.sdk"):
        spans = make_sdk(prices={"bad": {"input_mtok": "free"}, "my-llama": {"input_mtok": 0.2, "output_mtok": 0.6}})
    assert any("'bad'" in r.getMessage() for r in caplog.records)

    @sdk.traced_llm(provider="vllm", model="my-llama")
    def ask():
        return {"usage": {"prompt_tokens": 1_000_000, "completion_tokens": 0}}

    ask()
    (span,) = spans.get_finished_spans()
    assert span.attributes["infersight.cost.usd"] == pytest.approx(0.2)


def test_a_decorated_call_before_init_warns_once(caplog, monkeypatch):
    from infersight.sdk import _lifecycle

    monkeypatch.setattr(_lifecycle, "_warned_before_init", False)

    @sdk.traced_llm
    def ask():
        return 1

    with caplog.at_level(logging.WARNING, logger="infersight.sdk"):
        assert [ask(), ask()] == [1, 1]
    assert len([r for r in caplog.records if "before infersight.sdk.init()" in r.getMessage()]) == 1

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from genai_prices import Usage, calc_price
from opentelemetry.trace import StatusCode

from infersight import sdk


def only_span(spans):
    finished = spans.get_finished_spans()
    assert len(finished) == 1
    return finished[0]


def expected_cost(model: str, provider: str, **usage: int) -> float:
    return float(calc_price(Usage(**usage), model, provider_id=provider).total_price)


def test_sync_openai_object_gets_semconv_attributes_tokens_and_cost(spans):
    response = SimpleNamespace(
        model="gpt-4o-2024-08-06",
        choices=[SimpleNamespace(finish_reason="stop")],
        usage=SimpleNamespace(
            prompt_tokens=1200,
            completion_tokens=300,
            prompt_tokens_details=SimpleNamespace(cached_tokens=200),
            completion_tokens_details=SimpleNamespace(reasoning_tokens=0),
        ),
    )

    @sdk.traced_llm(provider="openai", model="gpt-4o")
    def ask(question: str):
        return response

    assert ask("hi") is response
    span = only_span(spans)
    a = span.attributes
    assert span.name == "chat gpt-4o-2024-08-06"  # the model that answered, not the decorator's default
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.provider.name"] == "openai"
    assert a["gen_ai.request.model"] == "gpt-4o"
    assert a["gen_ai.response.model"] == "gpt-4o-2024-08-06"
    assert a["gen_ai.usage.input_tokens"] == 1200
    assert a["gen_ai.usage.output_tokens"] == 300
    assert a["gen_ai.usage.cache_read.input_tokens"] == 200
    assert tuple(a["gen_ai.response.finish_reasons"]) == ("stop",)
    want = expected_cost("gpt-4o-2024-08-06", "openai", input_tokens=1200, output_tokens=300, cache_read_tokens=200)
    assert a["infersight.cost.usd"] == pytest.approx(want, rel=1e-9)
    assert span.status.status_code is StatusCode.UNSET


def test_async_anthropic_dict_counts_cache_tokens_as_input(spans):
    @sdk.traced_llm(provider="anthropic")
    async def ask(model: str):
        await asyncio.sleep(0)
        return {
            "model": model,
            "stop_reason": "end_turn",
            "usage": {
                "input_tokens": 100,
                "output_tokens": 40,
                "cache_read_input_tokens": 1000,
                "cache_creation_input_tokens": 50,
            },
        }

    asyncio.run(ask(model="claude-sonnet-4-5"))
    a = only_span(spans).attributes
    assert a["gen_ai.request.model"] == "claude-sonnet-4-5"  # read from the call's model=
    assert a["gen_ai.usage.input_tokens"] == 1150
    assert a["gen_ai.usage.cache_read.input_tokens"] == 1000
    assert a["gen_ai.usage.cache_creation.input_tokens"] == 50
    assert tuple(a["gen_ai.response.finish_reasons"]) == ("end_turn",)
    want = expected_cost(
        "claude-sonnet-4-5", "anthropic",
        input_tokens=1150, output_tokens=40, cache_read_tokens=1000, cache_write_tokens=50,
    )
    assert a["infersight.cost.usd"] == pytest.approx(want, rel=1e-9)


def test_tiered_price_above_threshold_matches_genai_prices(spans):
    @sdk.traced_llm(provider="google", model="gemini-2.5-pro")
    def ask():
        return {"usage": {"prompt_tokens": 250_000, "completion_tokens": 1000}}

    ask()
    want = expected_cost("gemini-2.5-pro", "google", input_tokens=250_000, output_tokens=1000)
    assert only_span(spans).attributes["infersight.cost.usd"] == pytest.approx(want, rel=1e-9)


def test_unknown_model_records_tokens_but_never_a_cost(spans):
    @sdk.traced_llm(provider="self-hosted", model="acme-llama-ft-7")
    def ask():
        return {"usage": {"prompt_tokens": 10, "completion_tokens": 5}}

    ask()
    a = only_span(spans).attributes
    assert a["gen_ai.usage.input_tokens"] == 10
    assert "infersight.cost.usd" not in a
    assert a["infersight.cost.unknown_model"] is True


def test_exception_is_reraised_unchanged_and_recorded(spans):
    class RateLimited(Exception):
        pass

    boom = RateLimited("429 slow down")

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def ask():
        raise boom

    with pytest.raises(RateLimited) as caught:
        ask()
    assert caught.value is boom
    span = only_span(spans)
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"].endswith("RateLimited")
    assert [e.name for e in span.events] == ["exception"]


def test_async_exception_is_reraised(spans):
    @sdk.traced_llm(model="gpt-4o-mini")
    async def ask():
        raise TimeoutError("upstream")

    with pytest.raises(TimeoutError):
        asyncio.run(ask())
    assert only_span(spans).status.status_code is StatusCode.ERROR


def test_hostile_result_is_returned_unchanged_and_a_failing_hook_is_counted(spans):
    class Hostile:
        @property
        def usage(self):
            raise RuntimeError("broken provider object")

    result = Hostile()

    def broken_hook(response):
        raise ValueError("no such header")

    @sdk.traced_llm(model="gpt-4o", queue_wait_from=broken_hook)
    def ask():
        return result

    before = sdk.failure_count("internal")
    assert ask() is result
    # an unreadable field is a missing field, not an SDK failure; the app's hook raising is counted
    assert sdk.failure_count("internal") == before + 1
    (span,) = spans.get_finished_spans()
    assert "gen_ai.usage.input_tokens" not in span.attributes


def test_tenant_crosses_await_and_does_not_leak_between_tasks(spans):
    @sdk.traced_llm(model="gpt-4o-mini")
    async def ask(i: int):
        await asyncio.sleep(0.01 * (i % 3))
        return {"usage": {"prompt_tokens": i, "completion_tokens": 1}}

    async def request(tenant_id: str, i: int):
        with sdk.tenant(tenant_id, user_id=f"user-{tenant_id}"):
            await asyncio.sleep(0.005 * (3 - i % 3))
            await ask(i)

    async def main():
        await asyncio.gather(*(request(t, i) for i, t in enumerate(["acme", "globex"] * 10)))
        await ask(99)  # outside any tenant block

    asyncio.run(main())
    finished = spans.get_finished_spans()
    assert len(finished) == 21
    for span in finished:
        i = span.attributes["gen_ai.usage.input_tokens"]
        if i == 99:
            assert "infersight.tenant.id" not in span.attributes
            continue
        tenant_id = ["acme", "globex"][i % 2]
        assert span.attributes["infersight.tenant.id"] == tenant_id
        assert span.attributes["infersight.user.id"] == f"user-{tenant_id}"


def test_nested_tenant_block_inherits_user_and_route(spans):
    @sdk.traced_llm(model="gpt-4o-mini")
    def ask():
        return None

    with sdk.tenant("acme", user_id="u-1", route="support"), sdk.tenant("acme-eu"):
        ask()
    a = only_span(spans).attributes
    assert (a["infersight.tenant.id"], a["infersight.user.id"], a["infersight.route"]) == ("acme-eu", "u-1", "support")


def test_price_override_for_a_self_hosted_model():
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sdk.init(
        service_name="t", tracer_provider=provider, export=False,
        prices={"my-llama": {"input_mtok": 0.2, "output_mtok": 0.6}},
    )
    try:
        @sdk.traced_llm(provider="vllm", model="my-llama")
        def ask():
            return {"usage": {"prompt_tokens": 1_000_000, "completion_tokens": 500_000}}

        ask()
        a = exporter.get_finished_spans()[0].attributes
        assert a["infersight.cost.usd"] == pytest.approx(0.2 + 0.3)
        assert a["infersight.cost.source"] == "override"
    finally:
        sdk.shutdown()


def test_nested_calls_share_the_trace(spans):
    @sdk.traced_retrieval(data_source="kb", top_k=3)
    def retrieve(query: str):
        return ["a", "b"]

    @sdk.traced_rerank(model="bge-reranker")
    def rerank(query: str, documents: list[str]):
        return documents[:1]

    @sdk.traced_llm(model="gpt-4o-mini")
    def answer(query: str):
        return rerank(query, documents=retrieve(query))

    answer("q")
    by_op = {s.attributes["gen_ai.operation.name"]: s for s in spans.get_finished_spans()}
    assert set(by_op) == {"retrieval", "rerank", "chat"}
    root = by_op["chat"]
    for child in (by_op["retrieval"], by_op["rerank"]):
        assert child.context.trace_id == root.context.trace_id
        assert child.parent.span_id == root.context.span_id
    assert by_op["retrieval"].attributes["gen_ai.data_source.id"] == "kb"
    assert by_op["retrieval"].attributes["gen_ai.request.top_k"] == 3
    assert by_op["retrieval"].attributes["infersight.retrieval.returned"] == 2
    assert by_op["rerank"].attributes["infersight.rerank.candidates"] == 2
    assert by_op["rerank"].attributes["infersight.rerank.returned"] == 1


def test_decorators_work_before_init():
    @sdk.traced_llm
    def ask():
        return 42

    assert ask() == 42


def test_second_init_warns_and_keeps_the_first(spans):
    with pytest.warns(UserWarning, match="already called"):
        sdk.init(service_name="other", export=False)


def test_without_init_spans_follow_the_apps_global_provider(monkeypatch):
    # The tracer on the app's provider is kept between calls; a provider swapped in gets the spans.
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from infersight.sdk import _setup

    exporters = [InMemorySpanExporter(), InMemorySpanExporter()]
    providers = [TracerProvider(), TracerProvider()]
    for provider, exporter in zip(providers, exporters, strict=True):
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    current = [providers[0]]
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: current[0])

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def ask():
        return {"usage": {"prompt_tokens": 3, "completion_tokens": 1}}

    ask()
    assert _setup.tracer() is _setup.tracer()
    ask()
    current[0] = providers[1]
    ask()
    assert [len(e.get_finished_spans()) for e in exporters] == [2, 1]
    assert exporters[1].get_finished_spans()[0].attributes["gen_ai.usage.input_tokens"] == 3

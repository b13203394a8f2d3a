"""The prompt is recorded whenever content capture is on, also when the decorated function passes no
``messages=``: from the provider's request where the real clients keep it (streams, errors), else
from the function's arguments; failed calls keep theirs, and the judge scores such a route."""

from __future__ import annotations

import dataclasses
import json
import time

import anthropic
import openai
import pydantic
import pytest

from infersight import sdk
from infersight.collector.store import Store
from infersight.demo import FakeJudge, FakeLLM
from infersight.judges import JudgeRunner, Sampler, SamplingPolicy, load_rubrics, recent_scores
from infersight.sdk import semconv
from tests import http
from tests.conftest import LiveCollector, wait_for
from tests.judges.conftest import make_client

QUESTION = "Where is my invoice? Mail it to jane.doe@example.com"
DOCS = [{"id": "kb-12", "text": "Invoices are under Billing > History.", "score": 0.82}]


@pytest.fixture(scope="module")
def llm():
    server = FakeLLM(latency_s=(0, 0), stream_chunk_delay_s=0.0).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def failing_llm():
    server = FakeLLM(latency_s=(0, 0), error_rate=1.0).start()
    yield server
    server.stop()


def readme_route(client: openai.OpenAI):
    """The README's example, as written there."""

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def answer(question: str, docs: list[dict]):
        messages = [{"role": "system", "content": "Answer from: " + " ".join(d["text"] for d in docs)},
                    {"role": "user", "content": question}]
        return client.chat.completions.create(model="gpt-4o-mini", messages=messages)

    return answer


def only(spans):
    (span,) = spans.get_finished_spans()
    return span


def inputs(attributes) -> list[tuple[str, str]]:
    return [(m["role"], m["parts"][0]["content"]) for m in json.loads(attributes[semconv.INPUT_MESSAGES])]


def test_the_readme_route_records_its_arguments_as_the_prompt(spans, llm):
    answer = readme_route(openai.OpenAI(base_url=llm.url + "/v1", api_key="test", max_retries=0))
    failures = sdk.failure_count()

    answer(QUESTION, DOCS)

    a = only(spans).attributes
    assert a[semconv.INPUT_SOURCE] == "arguments"
    ((role, text),) = inputs(a)
    assert role == "user"
    assert json.loads(text) == {"question": QUESTION.replace("jane.doe@example.com", "[EMAIL]"), "docs": DOCS}
    assert "jane.doe" not in a[semconv.INPUT_MESSAGES]  # redacted like any other content
    assert a[semconv.OUTPUT_MESSAGES]
    assert sdk.failure_count() == failures


def test_a_failed_call_keeps_the_prompt_the_provider_was_sent(spans, failing_llm):
    answer = readme_route(openai.OpenAI(base_url=failing_llm.url + "/v1", api_key="test", max_retries=0))

    with pytest.raises(openai.RateLimitError):
        answer(QUESTION, DOCS)

    span = only(spans)
    assert span.attributes["error.type"] == "RateLimitError"
    assert span.attributes[semconv.INPUT_SOURCE] == "request"  # the error keeps its request: exact messages
    assert inputs(span.attributes) == [("system", "Answer from: Invoices are under Billing > History."),
                                       ("user", "Where is my invoice? Mail it to [EMAIL]")]


def test_a_failed_call_with_messages_keeps_them(spans):
    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def ask(messages):
        raise TimeoutError("no answer")

    with pytest.raises(TimeoutError):
        ask([{"role": "user", "content": "hello?"}])
    a = only(spans).attributes
    assert inputs(a) == [("user", "hello?")] and semconv.INPUT_SOURCE not in a


def test_a_stream_records_the_request_it_was_made_from(spans, llm):
    client = openai.OpenAI(base_url=llm.url + "/v1", api_key="test", max_retries=0)

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def answer(question: str):
        return client.chat.completions.create(
            model="gpt-4o-mini", stream=True, messages=[{"role": "system", "content": "Be brief."},
                                                        {"role": "user", "content": question}])

    for _ in answer("What is TTFT?"):
        pass
    a = only(spans).attributes
    assert a[semconv.INPUT_SOURCE] == "request"
    assert inputs(a) == [("system", "Be brief."), ("user", "What is TTFT?")]


def test_an_anthropic_error_keeps_the_system_blocks_and_messages(spans, failing_llm):
    client = anthropic.Anthropic(base_url=failing_llm.url, api_key="test", max_retries=0)

    @sdk.traced_llm(provider="anthropic", model="claude-3-5-haiku-latest")
    def answer(question: str):
        return client.messages.create(model="claude-3-5-haiku-latest", max_tokens=64,
                                      system=[{"type": "text", "text": "You are terse."}],
                                      messages=[{"role": "user", "content": question}])

    with pytest.raises(anthropic.RateLimitError):
        answer("Refund policy?")
    assert inputs(only(spans).attributes) == [("system", "You are terse."), ("user", "Refund policy?")]


class Ticket(pydantic.BaseModel):
    subject: str
    body: str


@dataclasses.dataclass
class Customer:
    name: str
    tier: str


class Opaque:
    def __str__(self) -> str:
        raise AssertionError("the SDK must not call str() on an argument it does not know")


def test_arguments_of_any_shape_become_json_and_self_is_left_out(spans):
    class Bot:
        @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
        def reply(self, ticket, customer, *extra, helper=None, **options):
            return "ok"

    Bot().reply(Ticket(subject="Refund", body="Order 1234"), Customer("Ann", "gold"), 1, 2, helper=Opaque(),
                temperature_hint=0.3)

    ((_, text),) = inputs(only(spans).attributes)
    assert json.loads(text) == {
        "ticket": {"subject": "Refund", "body": "Order 1234"}, "customer": {"name": "Ann", "tier": "gold"},
        "extra": [1, 2], "helper": "<Opaque>", "temperature_hint": 0.3,
    }


def test_huge_arguments_are_cut_at_the_content_limit(make_sdk):
    spans = make_sdk(max_content_chars=200)

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def summarise(chapters):
        return "short"

    summarise(["x" * 10_000] * 1_000)  # 10 MB of text: converting it all would cost the export thread

    a = only(spans).attributes
    assert len(a[semconv.INPUT_MESSAGES]) < 400
    assert a[semconv.CONTENT_TRUNCATED] is True


def test_nothing_is_recorded_with_content_capture_off(make_sdk, failing_llm):
    spans = make_sdk(capture_content=False)
    answer = readme_route(openai.OpenAI(base_url=failing_llm.url + "/v1", api_key="test", max_retries=0))

    with pytest.raises(openai.RateLimitError):
        answer(QUESTION, DOCS)

    a = only(spans).attributes
    assert semconv.INPUT_MESSAGES not in a and semconv.INPUT_SOURCE not in a


@pytest.fixture
def judge():
    server = FakeJudge().start()
    yield server
    server.stop()


def test_the_judge_scores_a_route_written_like_the_readme(collector: LiveCollector, store: Store, llm, failing_llm,
                                                          judge):
    since_ns = time.time_ns() - 60 * 10**9
    sdk.init(service_name="support-bot", endpoint=collector.url)
    try:
        answer = readme_route(openai.OpenAI(base_url=llm.url + "/v1", api_key="test", max_retries=0))
        broken = readme_route(openai.OpenAI(base_url=failing_llm.url + "/v1", api_key="test", max_retries=0))
        for i in range(6):
            with sdk.request("acme", route="support.answer", user_id=f"u-{i}"):
                answer(f"Where is invoice {i}?", DOCS)
        with sdk.request("acme", route="support.answer"), pytest.raises(openai.RateLimitError):
            broken("Where is invoice 99?", DOCS)
    finally:
        sdk.shutdown()
    summary = wait_for(lambda: (found := http.get(f"{collector.url}/api/v1/summary").json())["llm_calls"] >= 7
                       and found)
    assert summary and summary["llm_calls"] == 7, summary

    stored = wait_for(lambda: store.query(
        "SELECT StatusCode AS status, SpanAttributes[{input:String}] AS input FROM otel_traces"
        " WHERE ResourceAttributes['infersight.project'] = {p:String} AND SpanAttributes[{input:String}] != ''",
        {"p": collector.project, "input": semconv.INPUT_MESSAGES}))
    assert sorted(row["status"] for row in stored) == ["Error"] + ["Unset"] * 6  # the failed call kept its prompt

    client = make_client(judge)
    try:
        runner = JudgeRunner(store, client, [load_rubrics()["helpfulness"]], project=collector.project,
                             sampler=Sampler(store, SamplingPolicy(rate=1.0), use_detections=False))
        report = runner.run(since_ns)
    finally:
        client.close()
    assert (report.sampled_spans, report.no_content_spans, report.scored) == (6, 0, 6)
    assert len(recent_scores(store, collector.project, since_ns)) == 6
    judged = " ".join(json.dumps(r) for r in judge.requests)
    assert all(f"Where is invoice {i}?" in judged for i in range(6))  # the judge read the question

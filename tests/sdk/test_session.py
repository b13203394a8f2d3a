"""``request(session_id=...)``: every span of the request, the SDK's and other instrumentations',
carries the conversation as ``gen_ai.conversation.id`` (the column the collector's Sessions page
reads), nested requests keep it, and it travels to downstream services in baggage."""

from __future__ import annotations

from opentelemetry import baggage

from infersight import sdk
from infersight.sdk import _setup, semconv


def _answer_and_retrieve():
    @sdk.traced_retrieval(data_source="kb")
    def retrieve(query: str):
        return [{"id": "a", "text": "x"}]

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def answer(prompt: str):
        return {"model": "gpt-4o-mini", "usage": {"prompt_tokens": 3, "completion_tokens": 2}}

    return retrieve, answer


def test_every_span_of_a_request_carries_its_session(spans):
    retrieve, answer = _answer_and_retrieve()
    foreign = _setup._state.provider.get_tracer("openinference.instrumentation.openai")
    with sdk.request("acme", route="support.answer", user_id="u-1", session_id="chat-42"):
        retrieve("q")
        answer("q")
        with foreign.start_as_current_span("ChatCompletion"):
            pass
    with sdk.request("acme", route="support.answer", user_id="u-1"):  # another conversation's turn: none
        answer("q")

    *turn, other_root = spans.get_finished_spans()
    other = [s for s in turn if s.context.trace_id == other_root.context.trace_id]
    turn = [s for s in turn if s.context.trace_id != other_root.context.trace_id]
    assert len(turn) == 4
    assert {s.attributes.get(semconv.CONVERSATION_ID) for s in turn} == {"chat-42"}
    assert all(semconv.CONVERSATION_ID not in s.attributes for s in [*other, other_root])


def test_a_session_without_a_tenant_keeps_the_enclosing_tenant(spans):
    _, answer = _answer_and_retrieve()
    with sdk.tenant("acme", user_id="u-1"), sdk.request(session_id="chat-7", route="support"):
        answer("q")
    llm, root = spans.get_finished_spans()
    for span in (llm, root):
        a = span.attributes
        assert (a[semconv.TENANT], a[semconv.USER], a[semconv.ROUTE], a[semconv.CONVERSATION_ID]) == (
            "acme", "u-1", "support", "chat-7")


def test_a_nested_request_inherits_the_session_unless_it_names_one(spans):
    _, answer = _answer_and_retrieve()
    with sdk.request("acme", session_id="outer"):
        with sdk.request(name="inner"):
            answer("kept")
        with sdk.tenant("acme", session_id="other"):
            answer("replaced")
    kept, inner, replaced, _root = spans.get_finished_spans()
    assert inner.attributes[semconv.CONVERSATION_ID] == kept.attributes[semconv.CONVERSATION_ID] == "outer"
    assert replaced.attributes[semconv.CONVERSATION_ID] == "other"


def test_the_session_rides_in_baggage_to_downstream_services(spans):
    with sdk.request("acme", session_id="chat-9"):
        assert baggage.get_baggage(semconv.CONVERSATION_ID) == "chat-9"
    assert baggage.get_baggage(semconv.CONVERSATION_ID) is None


def test_a_session_id_whose_str_raises_is_counted_not_raised(spans):
    class Hostile:
        def __str__(self) -> str:
            raise RuntimeError("boom")

    _, answer = _answer_and_retrieve()
    before = sdk.failure_count()
    with sdk.request("acme", session_id=Hostile()):  # type: ignore[arg-type]
        answer("q")
    assert sdk.failure_count() == before + 1
    assert all(semconv.CONVERSATION_ID not in s.attributes for s in spans.get_finished_spans())

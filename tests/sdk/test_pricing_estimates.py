"""A cost is priced only from what is known: half an estimate is unknown, a whole one is marked."""

from __future__ import annotations

from infersight import sdk
from infersight.collector.store import LLM, operations_of
from infersight.sdk._processor import LLM_OPERATIONS


def test_half_an_estimate_is_not_priced(spans):
    # No messages= and no usage reported: the answer's tokens can be estimated, the prompt's not.
    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def ask(question_id):
        return "a fairly long answer that the provider did not count for us"

    ask(question_id=7)
    a = spans.get_finished_spans()[0].attributes
    assert a["infersight.usage.estimated"] is True
    assert "gen_ai.usage.input_tokens" not in a and a["gen_ai.usage.output_tokens"] > 0
    # Its output alone priced ~40% of the call as if it were the cost: now no cost at all.
    assert "infersight.cost.usd" not in a


def test_a_whole_estimate_is_priced_and_marked(spans):
    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def ask(prompt):
        return "an answer"

    ask(prompt="a question of some length")
    a = spans.get_finished_spans()[0].attributes
    assert a["infersight.usage.estimated"] is True
    assert a["infersight.cost.usd"] > 0  # the collector sums it apart from known cost


def test_an_unknown_input_count_has_no_price():
    assert sdk.cost_usd("gpt-4o-mini", input_tokens=None, output_tokens=500) is None
    assert sdk.cost_usd("gpt-4o-mini", input_tokens=100, output_tokens=None) is not None  # embeddings: no output
    assert sdk.cost_usd("gpt-4o-mini", input_tokens=100, output_tokens=0) == sdk.cost_usd(
        "gpt-4o-mini", input_tokens=100, output_tokens=None)


def test_the_sdk_knows_the_llm_operations_of_the_collectors_table():
    # The SDK cannot import the collector; its copy must be the table's (store/_kinds.py).
    assert frozenset(operations_of(LLM)) == LLM_OPERATIONS
    assert "completion" in LLM_OPERATIONS  # OpenLLMetry's llm.request.type


def test_a_client_span_under_our_completion_span_is_marked_as_the_same_call(spans):
    from infersight.sdk import _setup

    foreign = _setup._state.provider.get_tracer("opentelemetry.instrumentation.openai")

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini", operation="completion")
    def complete(prompt):
        with foreign.start_as_current_span("openai.completion"):
            pass
        return "done"

    complete(prompt="x")
    inner, outer = spans.get_finished_spans()
    assert inner.attributes["infersight.parent_llm_span"] == format(outer.context.span_id, "016x")

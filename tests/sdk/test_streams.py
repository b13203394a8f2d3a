"""Streams: every shape, consumed fully, partially, abandoned; TTFT and inter-token latency."""

from __future__ import annotations

import asyncio
import gc
import json
import time

import pytest
from opentelemetry.trace import StatusCode

from infersight import sdk


def one(spans):
    finished = spans.get_finished_spans()
    assert len(finished) == 1, [s.name for s in finished]
    return finished[0].attributes, finished[0]


def slow_words(first_delay: float, gap: float, words: list[str]):
    time.sleep(first_delay)
    for i, w in enumerate(words):
        if i:
            time.sleep(gap)
        yield w


def test_sync_generator_timing_matches_known_delays(make_sdk):
    spans = make_sdk(stall_threshold_s=0.15)

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def stream(prompt: str):
        yield from slow_words(0.12, 0.03, ["a", "b", "c", "d"])
        time.sleep(0.2)  # one stall
        yield "e"

    assert "".join(stream(prompt="hello")) == "abcde"
    a, span = one(spans)
    assert 0.11 <= a["gen_ai.response.time_to_first_chunk"] < 0.5
    assert 0.025 <= a["infersight.itl.p50_s"] < 0.15
    assert 0.19 <= a["infersight.itl.max_s"] < 0.6
    assert a["infersight.itl.stalls"] == 1
    assert a["infersight.stream.chunks"] == 5
    assert "infersight.stream.aborted" not in a
    # no usage from the provider: estimated, and marked as such
    assert a["infersight.usage.estimated"] is True
    assert a["gen_ai.usage.output_tokens"] >= 1
    assert json.loads(a["gen_ai.output.messages"])[0]["parts"][0]["content"] == "abcde"
    assert span.status.status_code is StatusCode.UNSET


def test_generator_closed_early_ends_span_as_aborted(spans):
    @sdk.traced_llm(model="gpt-4o-mini")
    def stream():
        yield from ["x", "y", "z"]

    gen = stream()
    assert next(gen) == "x"
    gen.close()
    a, _ = one(spans)
    assert a["infersight.stream.aborted"] is True
    assert a["infersight.stream.chunks"] == 1


def test_abandoned_generator_ends_span_when_collected(spans):
    @sdk.traced_llm(model="gpt-4o-mini")
    def stream():
        yield from ["x", "y", "z"]

    gen = stream()
    next(gen)
    del gen
    gc.collect()
    a, _ = one(spans)
    assert a["infersight.stream.aborted"] is True


def test_async_generator_error_midstream_is_recorded_and_reraised(spans):
    @sdk.traced_llm(model="gpt-4o-mini")
    async def stream():
        yield "partial "
        await asyncio.sleep(0.01)
        raise ConnectionResetError("peer went away")

    async def consume():
        out = []
        with pytest.raises(ConnectionResetError):
            async for chunk in stream():
                out.append(chunk)
        return out

    assert asyncio.run(consume()) == ["partial "]
    a, span = one(spans)
    assert span.status.status_code is StatusCode.ERROR
    assert a["infersight.error.class"] == "transient"
    assert a["infersight.stream.chunks"] == 1


def test_async_generator_fully_consumed(spans):
    @sdk.traced_llm(model="gpt-4o-mini")
    async def stream():
        for w in ["one ", "two"]:
            await asyncio.sleep(0.02)
            yield w

    async def consume():
        return [c async for c in stream()]

    assert asyncio.run(consume()) == ["one ", "two"]
    a, _ = one(spans)
    assert a["gen_ai.response.time_to_first_chunk"] >= 0.015
    assert "infersight.stream.aborted" not in a


def test_returned_iterator_is_wrapped_and_span_waits_for_it(spans):
    @sdk.traced_llm(model="gpt-4o-mini")
    def call():
        return iter(["a", "b"])

    stream = call()
    assert spans.get_finished_spans() == ()  # still open while the stream is unread
    assert list(stream) == ["a", "b"]
    a, _ = one(spans)
    assert a["infersight.stream.chunks"] == 2


def test_child_spans_inside_a_generator_are_parented(spans):
    @sdk.traced_retrieval(data_source="kb")
    def retrieve():
        return ["doc"]

    @sdk.traced_llm(model="gpt-4o-mini")
    def stream():
        retrieve()
        yield "x"

    list(stream())
    by_op = {s.attributes["gen_ai.operation.name"]: s for s in spans.get_finished_spans()}
    assert by_op["retrieval"].parent.span_id == by_op["chat"].context.span_id


LOOP_UNIT = "I will check the order status again and report back. "


@pytest.mark.parametrize("shape", ["generator", "returned-stream", "async-generator"])
def test_stream_guard_stops_a_looping_stream(spans, shape):
    produced = []

    def words():
        yield "Sure, let me look into that. "
        for _ in range(200):  # a model stuck until max_tokens
            for word in LOOP_UNIT.split(" "):
                produced.append(word)
                yield word + " "

    if shape == "generator":
        @sdk.traced_llm(model="gpt-4o-mini", stream_guard=True)
        def stream():
            yield from words()
        consumed = list(stream())
    elif shape == "returned-stream":
        @sdk.traced_llm(model="gpt-4o-mini", stream_guard=True)
        def stream():
            return words()
        consumed = list(stream())
    else:
        @sdk.traced_llm(model="gpt-4o-mini", stream_guard=True)
        async def stream():
            for chunk in words():
                yield chunk

        async def consume():
            return [c async for c in stream()]
        consumed = asyncio.run(consume())

    assert len(produced) < 200  # stopped long before max_tokens: 200 copies would be 2,000 words
    assert len(consumed) <= len(produced) + 1
    a, span = one(spans)
    assert a["infersight.stream.guard_stopped"] is True
    assert "check the order status" in a["infersight.stream.loop_unit"]
    assert "infersight.stream.aborted" not in a
    assert span.status.status_code is StatusCode.UNSET


def test_stream_guard_leaves_normal_streams_alone(spans):
    text = ("The refund was issued on Monday. It takes three to five business days to appear. "
            "If it does not, reply to this message with your order number and we will trace it. ") * 1
    words = text.split(" ")

    @sdk.traced_llm(model="gpt-4o-mini", stream_guard=True)
    def stream():
        for w in words:
            yield w + " "

    assert len(list(stream())) == len(words)
    a, _ = one(spans)
    assert "infersight.stream.guard_stopped" not in a


def _tool_call_chunks(delay_s: float) -> list:
    """A streamed tool call as OpenAI sends it: a role-only chunk, then argument deltas, no text."""
    from openai.types.chat import ChatCompletionChunk

    def chunk(delta: dict, finish: str | None = None) -> ChatCompletionChunk:
        return ChatCompletionChunk.model_validate({
            "id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })

    call = {"index": 0, "id": "t1", "type": "function", "function": {"name": "lookup", "arguments": ""}}
    return [
        chunk({"role": "assistant", "content": None}),
        delay_s,
        chunk({"tool_calls": [call]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"q": 1}'}}]}),
        chunk({}, finish="tool_calls"),
    ]


@pytest.mark.parametrize("shape", ["openai", "anthropic", "responses"])
def test_streamed_tool_call_has_a_ttft_from_its_first_delta(spans, shape):
    """A stream that answers with a tool call carries no text, only argument deltas: the first
    chunk with a tool-call delta is the first token (it was no TTFT at all), and the role-only
    chunk before it is not."""
    delay_s = 0.1
    items = {
        "openai": _tool_call_chunks(delay_s),
        "anthropic": [
            {"type": "message_start", "message": {"model": "claude-3-5-haiku", "usage": {"input_tokens": 5}}},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "name": "lookup"}},
            delay_s,
            {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"q"'}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": ": 1}"}},
        ],
        "responses": [
            {"type": "response.created"},
            delay_s,
            {"type": "response.function_call_arguments.delta", "delta": '{"q"'},
            {"type": "response.function_call_arguments.delta", "delta": ": 1}"},
        ],
    }[shape]

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def stream():
        for item in items:
            if isinstance(item, float):
                time.sleep(item)
            else:
                yield item

    assert len(list(stream())) == len(items) - 1
    a, _ = one(spans)
    assert a["gen_ai.response.time_to_first_chunk"] >= delay_s
    assert "infersight.itl.max_s" in a  # the second delta is a gap like any token's
    if shape == "openai":
        assert tuple(a["gen_ai.response.finish_reasons"]) == ("tool_calls",)

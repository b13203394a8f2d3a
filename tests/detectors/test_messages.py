"""The one reader of stored messages, and the surfaces that read messages through it agreeing."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from infersight.collector.ingest._detect import span_text
from infersight.dashboards._traces import messages as trace_view_messages
from infersight.detectors import ChatMessage, MessagePart, _messages, messages_text, parse_messages, prompt_hash
from infersight.judges._content import answer_text
from infersight.judges._content import parse_messages as judge_messages

TOOL_CALL = {"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {"q": "x"}}


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi"},
                                                {"type": "image", "uri": "x"},
                                                {"type": "text", "content": "there"}]}]), "Hi\nthere"),
        (json.dumps([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why?"}]),
         "Be brief.\nWhy?"),
        (json.dumps([{"role": "user", "content": [{"type": "text", "text": "OpenAI"}, {"type": "image_url"}]}]),
         "OpenAI"),
        (json.dumps({"role": "assistant", "parts": [{"type": "text", "content": "one message alone"}]}),
         "one message alone"),
        ("plain text, not JSON", "plain text, not JSON"),
        ('"a JSON string"', '"a JSON string"'),
        ("", ""),
        ('{"role": "user"}', ""),
        ("[" * 100_000, "[" * 100_000),
    ],
)
def test_messages_text(raw, text):
    assert messages_text(raw) == text


def test_parts_keep_their_order_and_other_parts_their_json():
    raw = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Let me look."}, TOOL_CALL]},
                      {"role": "assistant", "tool_calls": [{"id": "c2"}]}, 7])
    first, only_tool_calls, number = parse_messages(raw)
    assert first == ChatMessage("assistant", (MessagePart("text", "Let me look."),
                                              MessagePart("tool_call", json.dumps(TOOL_CALL))))
    assert first.text == "Let me look."
    # Nothing is dropped: a turn of tool calls only, or a stray value, is kept as JSON.
    assert only_tool_calls.parts == (MessagePart("json", json.dumps({"tool_calls": [{"id": "c2"}]})),)
    assert number == ChatMessage("", (MessagePart("json", "7"),))


def test_every_surface_reads_the_same_messages():
    output = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "The answer is 42."},
                                                         TOOL_CALL]}])
    prompt = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "What is it?"}]}])
    # The inline detectors, the judge and the trace view see the same text of the answer ...
    assert span_text({"gen_ai.output.messages": output}).output_text == "The answer is 42."
    assert answer_text(output) == "The answer is 42."
    shown = trace_view_messages(output)
    assert shown is not None and shown[0]["role"] == "assistant"
    assert shown[0]["text"].splitlines() == ["The answer is 42.", json.dumps(TOOL_CALL)]
    # ... and of the prompt; a prompt recorded as plain text is the same prompt to all of them.
    assert [(m.role, m.content) for m in judge_messages(prompt)] == [("user", "What is it?")]
    assert messages_text(prompt) == "What is it?"
    assert answer_text("The answer is 42.") == "The answer is 42."
    assert trace_view_messages("The answer is 42.") == [{"role": "?", "text": "The answer is 42."}]


def test_prompt_hash_reads_role_and_every_part():
    user = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi  there"}]}])
    assert prompt_hash(user) == prompt_hash(json.dumps([{"role": "user", "content": "hi there"}]))
    assert prompt_hash(user) != prompt_hash(json.dumps([{"role": "system", "content": "hi there"}]))
    with_tool = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi there"}, TOOL_CALL]}])
    assert prompt_hash(with_tool) != prompt_hash(user)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["role", "parts", "content", "type", "text", "x"]), inner, max_size=4),
    max_leaves=20,
)


@given(st.one_of(json_values.map(json.dumps), st.text(max_size=40)))
def test_never_raises_and_every_surface_answers(raw):
    messages = parse_messages(raw)
    assert all(isinstance(m.role, str) and all(isinstance(p.text, str) for p in m.parts) for m in messages)
    assert isinstance(messages_text(raw), str)
    assert isinstance(prompt_hash(raw), str)
    assert isinstance(answer_text(raw), str)
    assert trace_view_messages(raw) is None or all(isinstance(m["text"], str) for m in trace_view_messages(raw))


@given(st.one_of(json_values.map(json.dumps), json_values.map(lambda v: json.dumps(v, ensure_ascii=False)),
                 st.text(max_size=40)))
def test_messages_read_as_the_standard_parser_reads_them(raw):
    # The collector parses with orjson where it can (several times faster on an answer); the
    # messages must be those the standard library's parser gives.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_messages, "_fast_loads", None)
        expected = parse_messages(raw)
    assert parse_messages(raw) == expected


@pytest.mark.parametrize("raw", [
    '[{"role": "user", "content": "hi", "score": NaN}]',  # json reads NaN, orjson refuses it
    '[{"role": "user", "content": "hi", "id": 123456789012345678901234567890}]',  # past 64 bits
    '[{"role": "user", "content": "\\ud800 alone"}]',  # a lone surrogate
])
def test_what_orjson_refuses_or_reads_otherwise_is_read_as_before(raw):
    assert _messages._fast_loads is not None  # the collector's install: orjson is there
    (message,) = parse_messages(raw)
    assert message.role == "user" and message.parts[0].text.endswith(("hi", "alone"))


def test_a_long_integer_in_a_tool_call_stays_an_integer():
    # orjson would read it as a float: the tool call's JSON would say 1.2345678901234568e+29
    raw = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "id": 123456789012345678901234567890}]}])
    (message,) = parse_messages(raw)
    assert "123456789012345678901234567890" in message.parts[0].text

"""Content capture: redaction before export, truncation, opt-out."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infersight import sdk
from infersight.sdk import redact_builtin
from infersight.sdk._content import _PATTERNS, _ascii_digits, _replace, messages_json


@pytest.mark.parametrize(
    ("text", "marker", "secret"),
    [
        ("write to jane.doe@example.co.uk please", "[EMAIL]", "jane.doe"),
        ("call me on +44 20 7946 0958 tonight", "[PHONE]", "7946"),
        ("key sk-proj-abcdefghijklmnop1234567890", "[API_KEY]", "abcdefghijklmnop"),
        ("aws AKIAIOSFODNN7EXAMPLE here", "[API_KEY]", "AKIAIOSFODNN7"),
        ("card 4111 1111 1111 1111 exp 12/29", "[CARD]", "4111 1111"),
    ],
)
def test_builtin_redaction(text, marker, secret):
    out = redact_builtin(text)
    assert marker in out and secret not in out


@pytest.mark.parametrize(
    "text",
    ["order 1234567890123 shipped", "version 2.14.1 released 2026-11-29", "it costs $1,299.00", "ticket #48213"],
)
def test_builtin_redaction_leaves_ordinary_numbers(text):
    assert redact_builtin(text) == text


_EVERY_PATTERN = re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in _PATTERNS.items()))
# Pieces that make the patterns match, half-match and collide with each other.
_PIECES = st.sampled_from([
    "jane.doe@example.com", "@", "a@b", "x@y.io", "+44 20 7946 0958", "+1", "+", "4111 1111 1111 1111",
    "4111-1111-1111-1112", "1234567890123", "12", "0", "sk-", "sk-proj-abcdefghijklmnop12",
    "AKIAIOSFODNN7EXAMPLE",
    *(f"gh{c}_" + "a" * 30 for c in "pousr"), "xoxb-1234567890ab", "AIza" + "B" * 35,
    "isk_" + "c" * 16, " ", "-", ".", "_", "\n", "é", "日本",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=6)), max_size=12).map("".join))
def test_builtin_redaction_matches_the_full_scan(text):
    # The substring checks that skip impossible patterns must never change what is redacted.
    assert redact_builtin(text) == _EVERY_PATTERN.sub(_replace, text)


def messages(a):
    return json.loads(a["gen_ai.input.messages"]), json.loads(a["gen_ai.output.messages"])


def test_custom_redactor_runs_after_builtin(make_sdk):
    spans = make_sdk(redact=[lambda s: s.replace("Project Falcon", "[CODENAME]")])

    @sdk.traced_llm(model="gpt-4o-mini")
    def ask(messages):
        return "Project Falcon ships to bob@corp.com"

    ask(messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "status of Project Falcon?"}])
    (span,) = spans.get_finished_spans()
    inputs, outputs = messages(span.attributes)
    assert [m["role"] for m in inputs] == ["system", "user"]
    assert inputs[1]["parts"][0]["content"] == "status of [CODENAME]?"
    assert outputs[0]["parts"][0]["content"] == "[CODENAME] ships to [EMAIL]"


def test_truncation_is_marked(make_sdk):
    spans = make_sdk(max_content_chars=100)

    @sdk.traced_llm(model="gpt-4o-mini")
    def ask(prompt):
        return "y" * 500

    ask(prompt="x" * 500)
    (span,) = spans.get_finished_spans()
    inputs, outputs = messages(span.attributes)
    assert len(inputs[0]["parts"][0]["content"]) == 100
    assert len(outputs[0]["parts"][0]["content"]) == 100
    assert span.attributes["infersight.content.truncated"] is True


def test_capture_content_off_records_no_text(make_sdk):
    spans = make_sdk(capture_content=False)

    @sdk.traced_llm(model="gpt-4o-mini")
    def ask(prompt):
        return {"usage": {"prompt_tokens": 3, "completion_tokens": 2}, "choices": [{"message": {"content": "secret"}}]}

    ask(prompt="private")
    (span,) = spans.get_finished_spans()
    assert "gen_ai.input.messages" not in span.attributes
    assert "gen_ai.output.messages" not in span.attributes
    assert span.attributes["gen_ai.usage.output_tokens"] == 2


def test_cjk_aware_estimate_when_provider_reports_no_usage(spans):
    @sdk.traced_llm(model="gpt-4o-mini")
    def ask(prompt):
        return "你好世界，今天天气很好"

    ask(prompt="hello there, how are you doing today?")
    a = spans.get_finished_spans()[0].attributes
    assert a["infersight.usage.estimated"] is True
    assert a["gen_ai.usage.output_tokens"] >= 10  # one per CJK character, not one per four
    assert 8 <= a["gen_ai.usage.input_tokens"] <= 12


def test_expect_json_and_response_format_mark_json_answers(spans):
    @sdk.traced_llm(model="gpt-4o-mini", expect_json=True)
    def plain():
        return '{"a": 1}'

    schema = {"type": "object", "required": ["answer"]}

    @sdk.traced_llm(model="gpt-4o-mini")
    def structured(response_format):
        return '{"answer": 42}'

    plain()
    structured(response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": schema}})
    first, second = spans.get_finished_spans()
    assert first.attributes["gen_ai.output.type"] == "json"
    assert second.attributes["gen_ai.output.type"] == "json"
    assert json.loads(second.attributes["infersight.json_schema"]) == schema


# Text that JSON must escape or may keep: quotes, backslashes, control characters, line and
# paragraph separators, lone surrogates, characters beyond the BMP, digits of other scripts.
_TRICKY = st.text(
    alphabet=st.one_of(
        st.characters(codec=None, categories=None),
        st.sampled_from(['"', "\\", "\n", "\x00", "\x1f", "\x7f", "\u2028", "\u2029", "\ud800", "\udfff",
                         "😀", "٣", "０", "7", "/"]),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_TRICKY, st.lists(_TRICKY, max_size=3), st.one_of(st.none(), _TRICKY)), max_size=4))
def test_message_json_is_what_json_dumps_writes(shape):
    messages = []
    for role, texts, reason in shape:
        message = {"role": role, "parts": [{"type": "text", "content": t} for t in texts]}
        if reason is not None:
            message["finish_reason"] = reason
        messages.append(message)
    want = json.dumps(messages, ensure_ascii=False, separators=(",", ":"))
    assert messages_json(messages, (), 10**6) == (want, False)


@pytest.mark.parametrize("messages", [
    [{"parts": [{"type": "text", "content": "no role"}], "role": "user"}],  # keys in another order
    [{"role": "user", "parts": [{"type": "image", "content": "x"}]}],
    [{"role": "user", "parts": [{"type": "text", "content": "x"}], "name": "extra key"}],
])
def test_message_json_of_other_shapes_falls_back_to_json_dumps(messages):
    assert messages_json(messages, (), 10**6)[0] == json.dumps(messages, ensure_ascii=False, separators=(",", ":"))


@settings(max_examples=300, deadline=None)
@given(_TRICKY.map(lambda t: t * 3))
def test_digit_count_counts_ascii_digits_only(text):
    # What decides whether the card pattern runs: exactly the former ten str.count passes.
    assert _ascii_digits(text) == sum(map(text.count, "0123456789"))


_EMAIL_PIECES = st.sampled_from([
    "@", "a", "jane.doe", "x@y.io", "@example.com", ".com", "-", ".", "+", "%", "_", " ", "é", "日", "\n", "a@b",
    "@@", "io", "1", "x.y", "..",
])


@settings(max_examples=500, deadline=None)
@given(st.lists(_EMAIL_PIECES, max_size=16).map("".join))
def test_email_redaction_next_to_each_at_sign_matches_the_full_scan(text):
    # Addresses only (no digits to make a card, no +): the path that tries the pattern at each @.
    text = text.replace("+", "")
    assert redact_builtin(text) == _EVERY_PATTERN.sub(_replace, text)

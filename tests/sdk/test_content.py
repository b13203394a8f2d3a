"""Content capture: redaction before export, truncation, opt-out."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infersight import sdk
from infersight.sdk import redact_builtin
from infersight.sdk._content import _PATTERNS, _replace


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

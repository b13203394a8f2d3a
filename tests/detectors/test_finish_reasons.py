from __future__ import annotations

import pytest

from infersight.detectors import (
    FINISH_REASON_KINDS,
    JsonDetector,
    RefusalDetector,
    SpanText,
    TruncationDetector,
    finish_reason_kind,
    run_inline,
)

# Every documented value of each provider, as the provider spells it, and what it means.
PROVIDERS: dict[str, dict[str, str]] = {
    "openai": {
        "stop": "stop", "length": "length", "content_filter": "content_filter",
        "tool_calls": "tool_calls", "function_call": "tool_calls", "max_output_tokens": "length",
    },
    "anthropic": {
        "end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
        "model_context_window_exceeded": "length", "tool_use": "tool_calls", "pause_turn": "pause",
        "refusal": "content_filter",
    },
    "gemini": {
        "FINISH_REASON_UNSPECIFIED": "other", "STOP": "stop", "MAX_TOKENS": "length",
        "SAFETY": "content_filter", "RECITATION": "content_filter", "LANGUAGE": "other",
        "OTHER": "other", "BLOCKLIST": "content_filter", "PROHIBITED_CONTENT": "content_filter",
        "SPII": "content_filter", "MALFORMED_FUNCTION_CALL": "error",
        "IMAGE_SAFETY": "content_filter", "IMAGE_PROHIBITED_CONTENT": "content_filter",
        "IMAGE_RECITATION": "content_filter", "IMAGE_OTHER": "other", "NO_IMAGE": "other",
        "UNEXPECTED_TOOL_CALL": "error", "TOO_MANY_TOOL_CALLS": "error",
    },
    "bedrock": {
        "end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length",
        "stop_sequence": "stop", "guardrail_intervened": "content_filter",
        "content_filtered": "content_filter", "model_context_window_exceeded": "length",
    },
    "mistral": {
        "stop": "stop", "length": "length", "model_length": "length", "error": "error",
        "tool_calls": "tool_calls",
    },
    "cohere": {
        "COMPLETE": "stop", "STOP_SEQUENCE": "stop", "MAX_TOKENS": "length", "TOOL_CALL": "tool_calls",
        "ERROR": "error", "ERROR_TOXIC": "content_filter", "ERROR_LIMIT": "length",
        "USER_CANCEL": "other", "TIMEOUT": "error",
    },
    "openllmetry": {"tool_call": "tool_calls"},
}
CASES = [(p, r, k) for p, reasons in PROVIDERS.items() for r, k in reasons.items()]


@pytest.mark.parametrize(("provider", "reason", "kind"), CASES)
def test_every_documented_finish_reason_has_its_kind(provider, reason, kind):
    assert finish_reason_kind(reason) == kind
    assert reason.lower() in FINISH_REASON_KINDS


@pytest.mark.parametrize(("provider", "reason", "kind"), CASES)
def test_the_detectors_act_on_the_kind_whoever_spelt_it(provider, reason, kind):
    labels = {d.label for d in run_inline(SpanText(output_text="The causes are", finish_reason=reason))}
    assert ("truncation.length" in labels) == (kind == "length")
    assert ("refusal.provider_block" in labels) == (kind == "content_filter")


@pytest.mark.parametrize("reason", ["", "  ", None, 3])
def test_no_reason_has_no_kind(reason):
    assert finish_reason_kind(reason) == ""


def test_an_unknown_reason_is_other_not_an_alarm():
    assert finish_reason_kind("brand_new_reason") == "other"
    assert run_inline(SpanText(output_text="Fine.", finish_reason="brand_new_reason")) == []


def test_the_second_choice_cut_short_is_truncation():
    span = SpanText(output_text="First answer. Second", finish_reason="stop", finish_reasons=("stop", "length"))
    [found] = TruncationDetector().detect(span)
    assert found.evidence.startswith("finish_reason=length:")


def test_the_second_choice_blocked_is_a_provider_block():
    span = SpanText(output_text="A.", finish_reasons=("STOP", "SAFETY"))
    [found] = RefusalDetector().detect(span)
    assert (found.label, found.evidence) == ("refusal.provider_block", "finish_reason=safety")


def test_a_json_answer_whose_second_choice_was_cut_is_truncated_json():
    span = SpanText(output_text='{"a": [1, 2', expect_json=True, finish_reasons=("stop", "max_tokens"))
    [found] = JsonDetector().detect(span)
    assert found.label == "json.truncated"
    assert "finish_reason=max_tokens" in found.evidence


def test_a_malformed_finish_reasons_value_is_ignored():
    span = SpanText(output_text="Done.", finish_reason="stop", finish_reasons="length")  # type: ignore[arg-type]
    assert run_inline(span) == []

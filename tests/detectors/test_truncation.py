from __future__ import annotations

import pytest

from infersight.detectors import SpanText, TruncationDetector

detector = TruncationDetector()


@pytest.mark.parametrize("reason", ["length", "max_tokens", "MAX_TOKENS", "max_output_tokens"])
def test_token_limit_finish_reasons_are_truncation(reason):
    [found] = detector.detect(SpanText(output_text="The three causes are", finish_reason=reason))
    assert found.label == "truncation.length"
    assert found.evidence == f"finish_reason={reason.lower()}: …The three causes are"


@pytest.mark.parametrize("reason", ["", "stop", "end_turn", "content_filter", "tool_calls"])
def test_other_finish_reasons_are_not(reason):
    assert detector.detect(SpanText(output_text="Done.", finish_reason=reason)) == []


def test_json_answers_are_left_to_the_json_detector():
    span = SpanText(output_text='{"a": [1, 2', finish_reason="length", expect_json=True)
    assert detector.detect(span) == []

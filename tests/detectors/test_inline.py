from __future__ import annotations

import dataclasses

import pytest

from infersight.detectors import (
    BUILTIN_DETECTORS,
    Detection,
    SpanText,
    inline_failure_count,
    run_inline,
)


class Exploding:
    name = "exploding"
    version = "0"

    def detect(self, span: SpanText) -> list[Detection]:
        raise RuntimeError("boom")


class WrongType:
    name = "wrong"
    version = "0"

    def detect(self, span: SpanText) -> list[Detection]:
        return "not a list"  # type: ignore[return-value]


class Fixed:
    name = "fixed"
    version = "1"

    def detect(self, span: SpanText) -> list[Detection]:
        return [Detection("fixed", "1", "fixed.hit", 1.0, "x")]


def test_runs_every_builtin_detector():
    span = SpanText(
        output_text="I'm sorry, but I can't help with that. " + "I can't help with that. " * 20,
        finish_reason="length",
    )
    assert {d.detector for d in run_inline(span)} == {"repetition", "refusal", "truncation"}
    json_span = SpanText(output_text='{"a": [1,', finish_reason="length", expect_json=True)
    assert [d.label for d in run_inline(json_span)] == ["json.truncated"]


def test_nothing_to_report_is_an_empty_list():
    assert run_inline(SpanText(output_text="Paris is the capital of France.")) == []


def test_a_failing_detector_is_skipped_and_counted():
    before = inline_failure_count()
    found = run_inline(SpanText(output_text="hi"), [Exploding(), WrongType(), Fixed()])
    assert [d.label for d in found] == ["fixed.hit"]
    assert inline_failure_count() == before + 2


def test_builtins_are_the_default():
    assert {d.name for d in BUILTIN_DETECTORS} == {"repetition", "json", "refusal", "truncation"}


def test_detection_is_frozen_and_bounded():
    detection = Detection("d", "1", "d.x", 3.0, "e" * 1000 + "\ud800")
    assert len(detection.evidence) == 200
    assert detection.evidence.endswith("…")
    assert detection.score == 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        detection.label = "other"  # type: ignore[misc]


def test_detection_evidence_is_always_storable_as_utf8():
    detection = Detection("d", "1", "d.x", 0.5, "bad \ud800 surrogate")
    assert detection.evidence.encode("utf-8") == b"bad ? surrogate"

"""Truncation: the provider stopped the answer at the token limit."""

from __future__ import annotations

from ._base import LENGTH_FINISH_REASONS, Detection, SpanText, finish_reason_of, output_text_of

_TAIL_CHARS = 80


class TruncationDetector:
    """Report ``truncation.length`` when the finish reason says the token limit cut the answer.

    JSON answers are left to :class:`JsonDetector`, which reports ``json.truncated`` for the
    same cause, so one cut answer is not counted twice. Constant time, safe to share between
    threads, never raises from ``detect``.
    """

    name = "truncation"
    version = "1.0"

    def detect(self, span: SpanText) -> list[Detection]:
        """Return one ``truncation.length`` detection, or nothing."""
        if span.expect_json:
            return []
        reason = finish_reason_of(span)
        if reason not in LENGTH_FINISH_REASONS:
            return []
        tail = output_text_of(span)[-_TAIL_CHARS:].replace("\n", " ")
        return [
            Detection(
                self.name, self.version, "truncation.length", 1.0,
                f"finish_reason={reason}: …{tail}",
            )
        ]

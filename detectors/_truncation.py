"""Truncation: the provider stopped the answer at the token limit or the context window."""

from __future__ import annotations

from ._base import Detection, SpanText, finish_reasons_of, output_text_of
from ._finish_reasons import LENGTH, first_of_kind

_TAIL_CHARS = 80


class TruncationDetector:
    """Report ``truncation.length`` when a finish reason says a limit cut the answer.

    Every choice's reason is read (the second choice of a multi-choice answer cut short
    counts), in every provider's spelling (``length``, ``max_tokens``, ``MAX_TOKENS``,
    ``model_context_window_exceeded``, ...: see ``FINISH_REASON_KINDS``). JSON answers are
    left to :class:`JsonDetector`, which reports ``json.truncated`` for the same cause, so one
    cut answer is not counted twice. Constant time, safe to share between threads, never
    raises from ``detect``.
    """

    name = "truncation"
    version = "1.1"

    def detect(self, span: SpanText) -> list[Detection]:
        """Return one ``truncation.length`` detection, or nothing."""
        if span.expect_json:
            return []
        reason = first_of_kind(finish_reasons_of(span), LENGTH)
        if reason is None:
            return []
        tail = output_text_of(span)[-_TAIL_CHARS:].replace("\n", " ")
        return [
            Detection(
                self.name, self.version, "truncation.length", 1.0,
                f"finish_reason={reason}: …{tail}",
            )
        ]

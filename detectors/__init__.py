"""Soft-failure detectors: the failures that come back with HTTP 200.

Inline detectors run on one LLM span's output as the collector stores it; they are pure
Python, do no I/O and never raise:

    from infersight.detectors import SpanText, run_inline

    for d in run_inline(SpanText(output_text=text, finish_reason="length")):
        print(d.label, d.score, d.evidence)

Labels: ``repetition.loop``, ``repetition.suspect``, ``json.schema_invalid``, ``json.wrapped``,
``json.truncated``, ``json.malformed``, ``refusal.provider_block``, ``refusal.field``,
``refusal.phrase``, ``truncation.length``.
"""

from __future__ import annotations

from ._base import Detection, InlineDetector, SpanText
from ._inline import BUILTIN_DETECTORS, inline_failure_count, run_inline
from ._json import JsonDetector
from ._refusal import RefusalDetector
from ._repetition import RepetitionDetector
from ._truncation import TruncationDetector

__all__ = [
    "BUILTIN_DETECTORS",
    "Detection",
    "InlineDetector",
    "JsonDetector",
    "RefusalDetector",
    "RepetitionDetector",
    "SpanText",
    "TruncationDetector",
    "inline_failure_count",
    "run_inline",
]

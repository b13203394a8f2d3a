"""Soft-failure detectors: the failures that come back with HTTP 200.

Inline detectors run on one LLM span's output as the collector stores it; they are pure
Python, do no I/O and never raise:

    from infersight.detectors import SpanText, run_inline

    for d in run_inline(SpanText(output_text=text, finish_reason="length")):
        print(d.label, d.score, d.evidence)

Labels: ``repetition.loop``, ``repetition.suspect``, ``json.schema_invalid``,
``json.duplicate_keys``, ``json.wrapped``, ``json.truncated``, ``json.malformed``,
``refusal.provider_block``, ``refusal.field``, ``refusal.phrase``, ``refusal.partial``,
``truncation.length``.

Windowed detectors look at many calls at once. Drift detectors are estimators (``fit`` on a
reference window, ``score``/``detect`` on the current one); cost loops are a rule:

    from infersight.detectors import NumericDriftDetector, WindowedRunner

    report = NumericDriftDetector().fit(last_week).detect(last_hour)
    print(report.drifted, report.reason)

    runner = WindowedRunner(store)  # what the minute evaluator calls
    for run in runner.run_all(now, since=previous):
        store.insert("detections", encode_rows(run.rows), dedup_token=run.dedup_token)

Labels: ``drift.numeric.<feature>``, ``drift.text.prompts``, ``drift.text.outputs``,
``cost_loop.trace``, ``cost_loop.tenant``, ``context_stuffing.input_tokens``.

The drift detectors and the runner need numpy, SciPy and scikit-learn (the ``collector``
extra); they are imported on first use, so the SDK's stream guard, which imports this package
for the repetition detector, works without them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._base import Detection, InlineDetector, SpanText
from ._cost_loops import (
    ContextStuffingDetector,
    CostLoopDetector,
    LLMCall,
    SpanFinding,
    prompt_hash,
)
from ._finish_reasons import FINISH_REASON_KINDS, FINISH_REASON_SPELLINGS, finish_reason_kind
from ._fitted import NotFittedError
from ._inline import BUILTIN_DETECTORS, inline_failure_count, run_inline
from ._json import JsonDetector
from ._messages import ChatMessage, MessagePart, messages_text, parse_messages
from ._money_text import usd_text
from ._refusal import RefusalDetector
from ._repetition import RepetitionDetector
from ._row_time import row_time_day, row_time_ns, row_time_text
from ._schema import SchemaCheck, schema_check
from ._truncation import TruncationDetector

if TYPE_CHECKING:
    from ._drift import DriftReport, FeatureShift, NumericDriftDetector
    from ._text_drift import TermShift, TextDriftDetector, TextDriftReport
    from ._windowed import WindowedRun, WindowedRunner

_LAZY = {
    "DriftReport": "._drift",
    "FeatureShift": "._drift",
    "NumericDriftDetector": "._drift",
    "TermShift": "._text_drift",
    "TextDriftDetector": "._text_drift",
    "TextDriftReport": "._text_drift",
    "WindowedRun": "._windowed",
    "WindowedRunner": "._windowed",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "BUILTIN_DETECTORS",
    "ChatMessage",
    "ContextStuffingDetector",
    "CostLoopDetector",
    "Detection",
    "DriftReport",
    "FINISH_REASON_KINDS",
    "FINISH_REASON_SPELLINGS",
    "FeatureShift",
    "InlineDetector",
    "JsonDetector",
    "LLMCall",
    "MessagePart",
    "NotFittedError",
    "NumericDriftDetector",
    "RefusalDetector",
    "RepetitionDetector",
    "SchemaCheck",
    "SpanFinding",
    "SpanText",
    "TermShift",
    "TextDriftDetector",
    "TextDriftReport",
    "TruncationDetector",
    "WindowedRun",
    "WindowedRunner",
    "finish_reason_kind",
    "inline_failure_count",
    "messages_text",
    "parse_messages",
    "prompt_hash",
    "row_time_day",
    "row_time_ns",
    "row_time_text",
    "run_inline",
    "schema_check",
    "usd_text",
]

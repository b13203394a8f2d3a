"""Run the inline detectors on one span, whatever they do."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from ._base import Detection, InlineDetector, SpanText
from ._json import JsonDetector
from ._refusal import RefusalDetector
from ._repetition import RepetitionDetector
from ._truncation import TruncationDetector

logger = logging.getLogger("infersight.detectors")

BUILTIN_DETECTORS: tuple[InlineDetector, ...] = (
    RepetitionDetector(),
    JsonDetector(),
    RefusalDetector(),
    TruncationDetector(),
)

_lock = threading.Lock()
_failures = 0
_logged = False


def run_inline(
    span: SpanText, detectors: Iterable[InlineDetector] | None = None
) -> list[Detection]:
    """Run every detector on ``span`` and return all their detections.

    Args:
        span: the output of one LLM span.
        detectors: the detectors to run; :data:`BUILTIN_DETECTORS` when None.

    Returns:
        The detections in detector order; an empty list when nothing was found.

    Never raises: a detector that raises (or returns something other than a list of
    ``Detection``) is skipped, counted in :func:`inline_failure_count` and logged the first
    time. No I/O beyond that one log line; safe to call from several threads.
    """
    found: list[Detection] = []
    for detector in BUILTIN_DETECTORS if detectors is None else detectors:
        try:
            result = detector.detect(span)
            # Most spans find nothing: an empty list is checked without a generator.
            if not isinstance(result, list) or (
                result and not all(isinstance(item, Detection) for item in result)
            ):
                raise TypeError(f"detect() returned {type(result).__name__}, not list[Detection]")
        except Exception as exc:  # noqa: BLE001 - the contract says never raise
            _record_failure(detector, exc)
            continue
        found.extend(result)
    return found


def inline_failure_count() -> int:
    """How many detector calls :func:`run_inline` has skipped since the process started."""
    return _failures


def _record_failure(detector: object, exc: Exception) -> None:
    global _failures, _logged
    with _lock:
        _failures += 1
        first = not _logged
        _logged = True
    if first:
        logger.warning(
            "inline detector %r failed (further failures are counted, not logged)",
            getattr(detector, "name", detector),
            exc_info=exc,
        )

"""Mark resilience events on the current span: retries, fallbacks and cache hits.

Call these inside a traced function (or any code running under its span). Outside a
recording span they do nothing and cost a context lookup.
"""

from __future__ import annotations

from opentelemetry import trace

from . import semconv
from ._guard import record_failure

FALLBACK_KINDS = ("cache", "small_model", "rule", "other")


def mark_retry(attempt: int, *, reason: str | None = None) -> None:
    """Record that the current call is retry number ``attempt`` (the first retry is 1)."""
    try:
        span = trace.get_current_span()
        span.set_attribute(semconv.RETRY_ATTEMPT, int(attempt))
        if reason:
            span.set_attribute(semconv.RETRY_REASON, reason)
    except Exception as exc:  # noqa: BLE001 - telemetry must never break the host
        record_failure("mark_retry", exc)


def mark_fallback(kind: str, *, reason: str | None = None) -> None:
    """Record that the answer came from a fallback: ``cache``, ``small_model``, ``rule`` or ``other``.

    Sets ``infersight.degraded=true``; an unknown ``kind`` is recorded as ``other``.
    """
    try:
        span = trace.get_current_span()
        span.set_attribute(semconv.DEGRADED, True)
        span.set_attribute(semconv.FALLBACK, kind if kind in FALLBACK_KINDS else "other")
        if reason:
            span.set_attribute(semconv.FALLBACK_REASON, reason)
    except Exception as exc:  # noqa: BLE001 - telemetry must never break the host
        record_failure("mark_fallback", exc)


def mark_cache_hit(*, semantic: bool = True, similarity: float | None = None) -> None:
    """Record that the answer was served from a (semantic) cache instead of the model."""
    try:
        span = trace.get_current_span()
        span.set_attribute(semconv.CACHE_HIT, True)
        span.set_attribute(semconv.CACHE_SEMANTIC, semantic)
        if similarity is not None:
            span.set_attribute(semconv.CACHE_SIMILARITY, float(similarity))
    except Exception as exc:  # noqa: BLE001 - telemetry must never break the host
        record_failure("mark_cache_hit", exc)

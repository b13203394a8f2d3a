"""The SDK's own failures: swallowed, counted by reason, logged once per reason.

Telemetry must never break the host. Every code path of the SDK that runs inside the
application's call catches its own errors, so a bug in usage extraction or an unreachable
collector costs a counter increment, never an exception in the app. The reasons:

- ``internal``: the SDK's own code (or a hook the app gave it) raised; counted per event.
- ``unauthorized``, ``forbidden``, ``not_found``: the collector answered 401, 403 or 404;
  counted per response. Each is logged once with what to change.
- ``export_failed``: an attempt to send a batch failed (connection refused, no answer in time, an
  error status); counted per attempt, the batch itself is kept and retried unless refused.
- ``spans_dropped``: spans lost (export failed, queue full, or still queued when the process
  exits); counted per span.
"""

from __future__ import annotations

import logging
import threading

logger = logging.getLogger("infersight.sdk")

INTERNAL = "internal"
UNAUTHORIZED = "unauthorized"
FORBIDDEN = "forbidden"
NOT_FOUND = "not_found"
EXPORT_FAILED = "export_failed"
SPANS_DROPPED = "spans_dropped"
REASONS = (INTERNAL, UNAUTHORIZED, FORBIDDEN, NOT_FOUND, EXPORT_FAILED, SPANS_DROPPED)

_lock = threading.Lock()
_counts = dict.fromkeys(REASONS, 0)
_logged: set[str] = set()


def count(reason: str, n: int = 1) -> bool:
    """Add ``n`` to ``reason``; True the first time this reason is counted (the caller logs then)."""
    with _lock:
        _counts[reason] = _counts.get(reason, 0) + n
        first = reason not in _logged
        _logged.add(reason)
    return first


def is_instance(value: object, types: type | tuple[type, ...]) -> bool:
    """``isinstance``, False where the object's own ``__class__`` raises (strict mocks, broken
    proxies): ``isinstance`` reads it whenever the type alone does not answer."""
    try:
        return isinstance(value, types)
    except Exception:  # noqa: BLE001 - the app's object, not the SDK's failure
        return False


def plain_text(value: object, where: str) -> str | None:
    """``value`` as a plain ``str`` (``None`` stays ``None``); a value whose ``__str__`` raises is
    counted as a failure in ``where`` and becomes ``None``. Never runs a ``str`` subclass's methods."""
    if value is None or type(value) is str:
        return value
    try:
        return str.__str__(value) if issubclass(type(value), str) else str(value)
    except Exception as exc:  # noqa: BLE001 - the app's object must not break its own call
        record_failure(where, exc)
        return None


def first_time(key: str) -> bool:
    """True the first time ``key`` is seen in this process (the caller logs then), False after."""
    with _lock:
        first = key not in _logged
        _logged.add(key)
    return first


def record_failure(where: str, exc: BaseException) -> None:
    """Count one internal failure; log the first one with its traceback, later ones not at all."""
    if count(INTERNAL):
        logger.warning(
            "infersight SDK failure in %s (further failures are counted, not logged)",
            where,
            exc_info=exc,
        )


def failure_count(reason: str | None = None) -> int:
    """How many failures the SDK has swallowed since the process started: all, or one reason's.

    Reasons: ``internal``, ``unauthorized`` (401), ``forbidden`` (403), ``not_found`` (404),
    ``export_failed`` (per attempt) and ``spans_dropped`` (per span). Cheap and thread-safe.
    """
    if reason is None:
        return sum(_counts.values())
    return _counts.get(reason, 0)

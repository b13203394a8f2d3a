"""The SDK's own failures: swallowed, counted, logged once.

Telemetry must never break the host. Every code path of the SDK that runs inside the
application's call goes through :func:`swallowed`, so a bug in usage extraction or an exporter
misconfiguration costs a counter increment, never an exception in the app.
"""

from __future__ import annotations

import logging
import threading

logger = logging.getLogger("infersight.sdk")

_lock = threading.Lock()
_count = 0
_logged = False


def record_failure(where: str, exc: BaseException) -> None:
    """Count one internal failure; log the first one with its traceback, later ones not at all."""
    global _count, _logged
    with _lock:
        _count += 1
        first = not _logged
        _logged = True
    if first:
        logger.warning(
            "infersight SDK failure in %s (further failures are counted, not logged)",
            where,
            exc_info=exc,
        )


def failure_count() -> int:
    """How many internal failures the SDK has swallowed since the process started."""
    return _count

"""What one export attempt came to, in the words the SDK's warnings use.

A warning that says "unreachable" for a collector that answered 503, or that was still taking
spans when the process ended, sends the reader to the wrong place. Each attempt is one of:

- ``sent``: the collector answered 2xx.
- ``refused``: nothing listens at the address (connection refused).
- ``unreachable``: the connection could not be made or broke (DNS, reset, TLS).
- ``timed_out``: no answer within the exporter's timeout.
- ``answered``: the collector answered another status (``status``, and ``retry_after_s`` when
  it said when to come back).
- ``failed``: a span exporter other than the SDK's own reported a failure or raised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from http import HTTPStatus
from time import time

SENT = "sent"
REFUSED = "refused"
UNREACHABLE = "unreachable"
TIMED_OUT = "timed_out"
ANSWERED = "answered"
FAILED = "failed"

# Worth sending the same spans again: the collector may take them later. Another 4xx refuses
# what was sent, and would refuse it again.
_RETRY_STATUSES = frozenset({408, 429, 502, 503, 504})


@dataclass(frozen=True, slots=True)
class Outcome:
    """One export attempt: how it ended, where it went, and what the collector answered."""

    kind: str
    target: str = "the span exporter"
    status: int | None = None
    retry_after_s: float | None = None
    detail: str = ""

    @property
    def sent(self) -> bool:
        return self.kind == SENT

    def retryable(self) -> bool:
        """Whether sending the same spans again can succeed."""
        if self.kind == ANSWERED:
            return self.status is not None and (self.status in _RETRY_STATUSES or self.status >= 500)
        return self.kind != SENT

    def key(self) -> str:
        """One key per kind of failure (per status for answers): each is logged once."""
        return f"{self.kind}:{self.status}" if self.kind == ANSWERED else self.kind

    def describe(self) -> str:
        """The failure in one phrase, e.g. ``the collector at URL answered 503 Service Unavailable``."""
        if self.kind == SENT:
            return f"{self.target} took the spans"
        if self.kind == REFUSED:
            return f"connection refused at {self.target} (is the collector running?)"
        if self.kind == UNREACHABLE:
            return f"could not reach {self.target}: {self.detail}"
        if self.kind == TIMED_OUT:
            return f"timed out: no answer from {self.target} within {self.detail}"
        if self.kind == ANSWERED:
            text = f"the collector at {self.target} answered {self.status} {_phrase(self.status)}".rstrip()
            if self.retry_after_s is not None:
                text += f" (Retry-After {self.retry_after_s:g} s)"
            return text
        return f"{self.target} failed" + (f": {self.detail}" if self.detail else "")


def _phrase(status: int | None) -> str:
    try:
        return HTTPStatus(status).phrase if status is not None else ""
    except ValueError:
        return ""


def retry_after_s(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delay-seconds or an HTTP date), ``None`` if absent or bad."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - time()
        except (TypeError, ValueError, IndexError):
            return None
    return max(seconds, 0.0) if math.isfinite(seconds) else None

"""The text form of a time in a stored row (``otel_traces.Timestamp``, ``Events.Timestamp``, and
the ``ts`` of detections, judge scores, GenAI events and queue samples), written and read in one
place: ten digits of Unix seconds, a dot, nine of nanoseconds.

It lives in this package, the lowest one, because the collector's ingest, the judges and the
windowed detectors all write such rows. ClickHouse reads the text exactly into ``DateTime64(9)``
and drops the digits a ``DateTime64(3)`` column does not keep.
"""

from __future__ import annotations

_MAX_TS_NS = 2**63 - 1


def row_time_text(unix_ns: int) -> str:
    """A row's time from Unix nanoseconds, clamped to what Int64 holds: a span may claim any
    64-bit time, and ``DateTime64(9)`` holds none past 2262-04-11."""
    unix_ns = min(unix_ns, _MAX_TS_NS)
    # Ten digits of seconds: ClickHouse reads a shorter "5.000000000" as a date and fails.
    return f"{unix_ns // 1_000_000_000:010d}.{unix_ns % 1_000_000_000:09d}"


def row_time_ns(text: str) -> int:
    """Unix nanoseconds of a time :func:`row_time_text` wrote."""
    return int(text[:-10]) * 1_000_000_000 + int(text[-9:])


def row_time_day(text: str) -> int:
    """Days since 1970-01-01 (UTC) of a time :func:`row_time_text` wrote."""
    return int(text[:-10]) // 86_400

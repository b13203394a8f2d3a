"""The text form of a time in an ``otel_traces`` row (``Timestamp``, ``Events.Timestamp``), written
and read in one place: ten digits of Unix seconds, a dot, nine of nanoseconds."""

from __future__ import annotations

_MAX_TS_NS = 2**63 - 1


def ts_text(unix_nano: int) -> str:
    """A row's time from Unix nanoseconds (clamped to what Int64 holds)."""
    unix_nano = min(unix_nano, _MAX_TS_NS)
    # Ten digits of seconds: ClickHouse reads a shorter "5.000000000" as a date and fails.
    return f"{unix_nano // 1_000_000_000:010d}.{unix_nano % 1_000_000_000:09d}"


def ts_ns(text: str) -> int:
    """Unix nanoseconds of a time :func:`ts_text` wrote."""
    return int(text[:-10]) * 1_000_000_000 + int(text[-9:])


def ts_day(text: str) -> int:
    """Days since 1970-01-01 (UTC) of a time :func:`ts_text` wrote."""
    return int(text[:-10]) // 86_400

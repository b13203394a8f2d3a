"""Parse the ``since`` of read APIs and dashboards: a look-back like ``15m``/``24h``/``7d`` or an ISO time."""

from __future__ import annotations

import re
import time
from datetime import date, datetime, timedelta, timezone

from ..errors import BadRequest

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_LOOKBACK = re.compile(r"^(\d{1,7})([smhdw])$")
# DateTime64(9) holds 1970-01-01 to 2262-04-11; days and times outside would fail the query.
_FIRST_DAY, _LAST_DAY = date(1970, 1, 1), date(2262, 4, 10)
_LAST_NS = 9_223_372_036 * 10**9
_SHOWN_CHARS = 64


def since_to_unix_ns(since: str, *, now_s: float | None = None, name: str = "since") -> int:
    """Start of the range in Unix nanoseconds; a time past 2262-04-11 reads as that day.

    Raises :class:`BadRequest`, naming the parameter ``name``, when ``since`` is neither form or
    lies before 1970: the store holds nothing older, and a silently narrowed range would answer a
    question the caller did not ask.
    """
    now = time.time() if now_s is None else now_s
    text = since.strip()
    match = _LOOKBACK.match(text)
    if match:
        if int(match.group(1)) == 0:
            raise BadRequest(f"The '{name}' parameter must be a look-back longer than 0; got {shown(since)}.")
        start_ns = int((now - int(match.group(1)) * _UNITS[match.group(2)]) * 1e9)
    else:
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise BadRequest(
                f"The '{name}' parameter must be a look-back like 15m, 24h, 7d or an ISO 8601 time; "
                f"got {shown(since)}."
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        start_ns = min(int(moment.timestamp() * 1e9), _LAST_NS)
    if start_ns < 0:
        raise BadRequest(
            f"The '{name}' parameter must not reach before 1970-01-01T00:00:00Z (the store holds nothing "
            f"older); got {shown(since)}."
        )
    return start_ns


def shown(value: object) -> str:
    """``value`` as a refusal quotes it: ``repr``, cut to a readable length."""
    text = value if isinstance(value, str) else str(value)
    return repr(text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "...")


def day_or_yesterday(value: str | None) -> date:
    """A ``YYYY-MM-DD`` day (UTC), or yesterday when ``value`` is None."""
    if value is None:
        return datetime.now(timezone.utc).date() - timedelta(days=1)
    try:
        day = date.fromisoformat(value)
    except ValueError:
        raise BadRequest(f"The 'date' parameter must be YYYY-MM-DD; got {shown(value)}.") from None
    if not _FIRST_DAY <= day <= _LAST_DAY:
        raise BadRequest(
            f"The 'date' parameter must be between {_FIRST_DAY} and {_LAST_DAY} (what the store can hold); "
            f"got {value}."
        )
    return day


def clickhouse_time(moment: datetime) -> str:
    """``moment`` as ClickHouse reads a DateTime64(3) parameter or column value: UTC, milliseconds."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]

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


def since_to_unix_ns(since: str, *, now_s: float | None = None) -> int:
    """Start of the range in Unix nanoseconds; a start before 1970 is 1970 (nothing is older).

    Raises :class:`BadRequest` with the accepted forms when ``since`` is neither form.
    """
    now = time.time() if now_s is None else now_s
    match = _LOOKBACK.match(since.strip())
    if match:
        return max(int((now - int(match.group(1)) * _UNITS[match.group(2)]) * 1e9), 0)
    try:
        moment = datetime.fromisoformat(since.strip().replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(
            f"'since' must be a look-back like 15m, 24h, 7d or an ISO 8601 time; got {since!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return min(max(int(moment.timestamp() * 1e9), 0), _LAST_NS)


def day_or_yesterday(value: str | None) -> date:
    """A ``YYYY-MM-DD`` day (UTC), or yesterday when ``value`` is None."""
    if value is None:
        return datetime.now(timezone.utc).date() - timedelta(days=1)
    try:
        day = date.fromisoformat(value)
    except ValueError:
        raise BadRequest(f"'date' must be YYYY-MM-DD; got {value!r}") from None
    if not _FIRST_DAY <= day <= _LAST_DAY:
        raise BadRequest(f"'date' must be between {_FIRST_DAY} and {_LAST_DAY} (what the store can hold); got {value}")
    return day


def clickhouse_time(moment: datetime) -> str:
    """``moment`` as ClickHouse reads a DateTime64(3) parameter or column value: UTC, milliseconds."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]

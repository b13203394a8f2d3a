"""Parse the ``since`` of read APIs and dashboards: a look-back like ``15m``/``24h``/``7d`` or an ISO time."""

from __future__ import annotations

import re
import time
from datetime import date, datetime, timedelta, timezone

from ..errors import BadRequest

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_LOOKBACK = re.compile(r"^(\d{1,7})([smhdw])$")


def since_to_unix_ns(since: str, *, now_s: float | None = None) -> int:
    """Start of the range in Unix nanoseconds.

    Raises :class:`BadRequest` with the accepted forms when ``since`` is neither form.
    """
    now = time.time() if now_s is None else now_s
    match = _LOOKBACK.match(since.strip())
    if match:
        return int((now - int(match.group(1)) * _UNITS[match.group(2)]) * 1e9)
    try:
        moment = datetime.fromisoformat(since.strip().replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(
            f"'since' must be a look-back like 15m, 24h, 7d or an ISO 8601 time; got {since!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1e9)


def day_or_yesterday(value: str | None) -> date:
    """A ``YYYY-MM-DD`` day (UTC), or yesterday when ``value`` is None."""
    if value is None:
        return datetime.now(timezone.utc).date() - timedelta(days=1)
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise BadRequest(f"'date' must be YYYY-MM-DD; got {value!r}") from None


def clickhouse_time(moment: datetime) -> str:
    """``moment`` as ClickHouse reads a DateTime64(3) parameter or column value: UTC, milliseconds."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]

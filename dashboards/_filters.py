"""What a dashboard view shows: a time window and optional service/route/tenant/model filters.

Pages and the JSON API build the same :class:`View` from their query parameters, so both run
the same queries. Filter values are validated here and only ever reach SQL as bound
``{name:Type}`` parameters.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from infersight.collector.errors import BadRequest
from infersight.collector.store import check_choice, check_text, shown, since_ns, since_to_unix_ns

NS = 1_000_000_000
HOUR_NS = 3600 * NS
DIMENSIONS = ("service", "route", "tenant", "model")
FILTER_MAX_CHARS = 256

# The page menu: look-back -> (label, chart bucket in seconds). Each range gets 48-72 points, so
# an hour of fresh data is a line, not a dot. Buckets of an hour or more let the charts read the
# hourly rollups; shorter ones read llm_spans (the totals still read the rollups).
RANGES: dict[str, tuple[str, int]] = {
    "1h": ("last hour", 60),
    "6h": ("last 6 hours", 300),
    "24h": ("last day", 1800),
    "7d": ("last week", 3 * 3600),
    "30d": ("last 30 days", 12 * 3600),
}
DEFAULT_RANGE = "24h"
RANGES_S = {"1h": 3600, "6h": 6 * 3600, "24h": 86400, "7d": 7 * 86400, "30d": 30 * 86400}
_MAX_POINTS = 120
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_LAST_NS = int(datetime(2262, 4, 11, tzinfo=timezone.utc).timestamp()) * NS


@dataclass(frozen=True)
class View:
    """A time window ``[start_ns, end_ns)`` (Unix nanoseconds) plus equality filters.

    Attributes:
        start_ns, end_ns: the window.
        bucket_s: the width of one point in charts over time.
        filters: dimension -> value; a dimension absent from it is not filtered.
        range_key: the page menu entry this window came from, if any (for links).
        fixed: the window was given as ``start``/``end`` times, so links carry those, not a range.
    """

    start_ns: int
    end_ns: int
    bucket_s: int
    filters: dict[str, str] = field(default_factory=dict)
    range_key: str | None = None
    fixed: bool = False

    @property
    def hours(self) -> tuple[int, int]:
        """The whole hours inside the window, as Unix seconds ``[h0, h1)``; h0 >= h1 when none."""
        h0 = -(-self.start_ns // HOUR_NS) * 3600
        h1 = self.end_ns // HOUR_NS * 3600
        return h0, h1

    @property
    def label(self) -> str:
        """The window as a heading says it: the menu's words, or the fixed window's UTC times."""
        if self.fixed or not self.range_key:
            return f"{iso_time(self.start_ns)} to {iso_time(self.end_ns)}".replace("T", " ").replace("Z", "") + " UTC"
        return RANGES[self.range_key][0]

    @property
    def span_s(self) -> float:
        return (self.end_ns - self.start_ns) / NS

    def with_filters(self, **changes: str | None) -> View:
        filters = dict(self.filters)
        for key, value in changes.items():
            if value:
                filters[key] = value
            else:
                filters.pop(key, None)
        return replace(self, filters=filters)

    def query_args(self) -> dict[str, str]:
        """The page query string that reproduces this view (for links between pages)."""
        args = {"range": self.range_key} if self.range_key and not self.fixed else {}
        if self.fixed:
            args.update(start=iso_time(self.start_ns), end=iso_time(self.end_ns))
        args.update({k: v for k, v in self.filters.items() if k in DIMENSIONS})
        return args


def check_value(name: str, value: str | None) -> str | None:
    """A filter value as given, or ``None`` when empty; :class:`BadRequest` when unusable.

    Any printable text is fine (quotes, SQL, any script): values are bound, never formatted
    into SQL. Control characters and overly long values are refused.
    """
    return check_text(name, value, max_chars=FILTER_MAX_CHARS)


def bucket_for(span_s: float) -> int:
    """A chart bucket giving at most 120 points; a whole number of hours past two days."""
    for bucket in (60, 300, 900, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 7 * 86400):
        if span_s / bucket <= _MAX_POINTS and (bucket >= 3600 or span_s <= 2 * 86400):
            return bucket
    return 7 * 86400


def view_from_range(range_key: str | None, filters: dict[str, str | None], *, now_ns: int | None = None) -> View:
    """The view of a page: ``range_key`` from :data:`RANGES` (the default when absent) up to now.

    Raises :class:`BadRequest` for a range off the menu or an unusable filter value.
    """
    range_key = check_choice("range", range_key, RANGES, DEFAULT_RANGE)
    end = time.time_ns() if now_ns is None else now_ns
    start = since_to_unix_ns(range_key, now_s=end / NS)
    return View(start, end, RANGES[range_key][1], _checked(filters), range_key)


def view_from_window(
    range_key: str | None, start: str | None, end: str | None, filters: dict[str, str | None], *,
    now_ns: int | None = None,
) -> View:
    """The view of a page that also takes a fixed window: ``start`` and ``end`` (ISO 8601 times, as
    an alert links to the window it fired on) win over ``range``; one of them alone reaches back
    or forward by the range from it. Without either, :func:`view_from_range`."""
    if not (start or end):
        return view_from_range(range_key, filters, now_ns=now_ns)
    range_key = check_choice("range", range_key, RANGES, DEFAULT_RANGE)
    look_back = RANGES_S[range_key]
    now = time.time_ns() if now_ns is None else now_ns
    end_ns = _iso_ns("end", end) if end else None
    start_ns = _iso_ns("start", start) if start else None
    if start_ns is None:
        start_ns = (end_ns or now) - look_back * NS
    if end_ns is None:
        end_ns = min(start_ns + look_back * NS, max(now, start_ns + NS))
    if start_ns >= end_ns:
        raise BadRequest(f"The 'start' parameter must be before 'end'; got {shown(start)} and {shown(end)}.")
    return View(start_ns, end_ns, bucket_for((end_ns - start_ns) / NS), _checked(filters), range_key, fixed=True)


def _iso_ns(name: str, text: str) -> int:
    """An ISO 8601 time as Unix nanoseconds; :class:`BadRequest` naming ``name`` for a look-back or anything else."""
    if text.strip()[-1:].isalpha() and not text.strip().endswith("Z"):
        raise BadRequest(f"The '{name}' parameter must be an ISO 8601 time like 2026-01-31T13:45:00Z; "
                         f"got {shown(text)}.")
    unix_ns = since_to_unix_ns(text, name=name)
    if unix_ns >= _LAST_NS:  # since_to_unix_ns reads later times as this day; a window must not move
        raise BadRequest(f"The '{name}' parameter must be before 2262-04-11 (what the store can hold); "
                         f"got {shown(text)}.")
    return unix_ns


def iso_time(unix_ns: int) -> str:
    """Unix nanoseconds as the ISO 8601 UTC text the ``start``/``end`` parameters take (microseconds)."""
    moment = _EPOCH + timedelta(microseconds=unix_ns // 1000)
    return moment.isoformat(timespec="microseconds" if moment.microsecond else "seconds").replace("+00:00", "Z")


def view_from_since(since: str, filters: dict[str, str | None], *, now_ns: int | None = None) -> View:
    """The view of an API call: ``since`` as the read API takes it (``24h``, ISO time) up to now.

    A look-back that is on the page menu gives exactly the page's view.
    """
    if since.strip() in RANGES:
        return view_from_range(since.strip(), filters, now_ns=now_ns)
    end = time.time_ns() if now_ns is None else now_ns
    start = since_ns(since, now_ns=end)
    return View(start, end, bucket_for((end - start) / NS), _checked(filters))


def view_between(start_ns: int, end_ns: int, bucket_s: int, filters: dict[str, str | None] | None = None) -> View:
    """A fixed window (the weekly report)."""
    return View(start_ns, end_ns, bucket_s, _checked(filters or {}))


def _checked(filters: dict[str, str | None]) -> dict[str, str]:
    out = {}
    for name, value in filters.items():
        checked = check_value(name, value)
        if checked is not None:
            out[name] = checked
    return out


def where(view: View, params: dict[str, Any], *, dims: tuple[str, ...] = DIMENSIONS, prefix: str = "") -> str:
    """``AND column = {f_column:String}`` for each filter in ``dims``, binding the values into ``params``."""
    clauses = []
    for dim in dims:
        if dim in view.filters:
            params[f"f_{dim}"] = view.filters[dim]
            clauses.append(f" AND {prefix}{dim} = {{f_{dim}:String}}")
    return "".join(clauses)


def finite(value: Any) -> float | None:
    """``value`` as a float, or ``None`` for null, NaN and infinities."""
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None

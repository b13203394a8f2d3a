"""What the paging rules read from the store: one query per rule and evaluation, for every project.

LLM calls are ``kind = 'llm'`` rows (the span contract, ``store.LLM``), the same predicate the
store's call figures use; errors are those rows with ``status = 'error'`` and cost their
``cost_usd``. Every value is a bound parameter.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Any

import numpy as np

from ..store import LLM, Store
from ..store import clickhouse_time as _ts
from ._cost import HOUR, WINDOWS, TopTrace
from ._error_rate import BUCKET_S, BUCKETS, WINDOW, ServiceWindow
from ._queue import DepthSample
from ._unit_cost import RECENT, Key, Pair, UnitCosts, Window

_DT = "DateTime64(3)"
_IS_CALL = f"kind = '{LLM}'"


def _parse_ts(value: str) -> datetime:
    return datetime.fromisoformat(value).replace(tzinfo=timezone.utc)


@functools.lru_cache(maxsize=4096)
def _hour(epoch_s: int) -> datetime:
    return datetime.fromtimestamp(epoch_s, timezone.utc)


def error_windows(store: Store, now: datetime) -> dict[tuple[str, str], ServiceWindow]:
    """Every service's LLM calls, errors and transient errors of the last hour in 10 s buckets."""
    rows = store.query(
        "SELECT project, service, groupArray(b) AS bs, groupArray(n) AS ns, groupArray(e) AS es, groupArray(t) AS ts,"
        " groupArray(f) AS fs"
        f" FROM (SELECT project, service, intDiv(toUnixTimestamp64Milli(ts) - {{start_ms:Int64}}, {BUCKET_S * 1000})"
        " AS b, count() AS n, countIf(status = 'error') AS e,"
        " countIf(status = 'error' AND error_class = 'transient') AS t,"
        # failed requests: a client's retries share the trace, spans without one count alone
        " uniqExactIf(trace_id, status = 'error' AND trace_id != '') + countIf(status = 'error' AND trace_id = '') AS f"
        f" FROM llm_spans WHERE {_IS_CALL} AND ts >= {{start:{_DT}}} AND ts < {{now:{_DT}}}"
        " GROUP BY project, service, b) GROUP BY project, service",
        {"start": _ts(now - WINDOW), "now": _ts(now), "start_ms": int((now - WINDOW).timestamp() * 1000)},
    )
    out: dict[tuple[str, str], ServiceWindow] = {}
    for row in rows:
        buckets = np.clip(np.asarray(row["bs"], dtype=int), 0, BUCKETS - 1)
        failed = np.zeros(BUCKETS)
        window = ServiceWindow(np.zeros(BUCKETS), np.zeros(BUCKETS), np.zeros(BUCKETS), failed)
        for array, values in ((window.calls, row["ns"]), (window.errors, row["es"]), (window.transient, row["ts"]),
                              (failed, row["fs"])):
            np.add.at(array, buckets, np.asarray(values, dtype=float))
        out[(row["project"], row["service"])] = window
    return out


@dataclass
class DailyRatios:
    """Each service's daily error ratios of the last ``days`` complete days, read once a day,
    without their bursts: a minute with more errors than ``1 + 10 x burst_scale x calls`` is left
    out (as the creep test leaves it out), so provider 5xx bursts, which the outage test judges,
    do not double the ratio a creep is measured against."""

    days: int = 7
    """Complete days read."""
    min_calls: int = 50
    """A day with fewer calls (burst minutes out) has no ratio."""
    burst_scale: float = 0.005
    """The usual ratio the burst test assumes (the default SLO's budget)."""
    _day: date | None = None
    _ratios: dict[tuple[str, str], list[float]] = field(default_factory=dict)

    def get(self, store: Store, now: datetime) -> dict[tuple[str, str], list[float]]:
        today = now.date()
        if self._day != today:
            start = datetime.combine(today, datetime.min.time(), tzinfo=timezone.utc)
            rows = store.query(
                "SELECT project, service, toDate(minute, 'UTC') AS day,"
                " sumIf(mn, me <= 1 + floor({scale:Float64} * mn)) AS n,"
                " sumIf(me, me <= 1 + floor({scale:Float64} * mn)) AS e FROM ("
                " SELECT project, service, toStartOfMinute(ts) AS minute, count() AS mn,"
                f" countIf(status = 'error') AS me FROM llm_spans WHERE {_IS_CALL}"
                f" AND ts >= {{start:{_DT}}} AND ts < {{end:{_DT}}} GROUP BY project, service, minute)"
                " GROUP BY project, service, day",
                {"start": _ts(start - timedelta(days=self.days)), "end": _ts(start), "scale": 10 * self.burst_scale},
            )
            ratios: dict[tuple[str, str], list[float]] = defaultdict(list)
            for row in rows:
                if int(row["n"]) >= self.min_calls:
                    ratios[(row["project"], row["service"])].append(float(row["e"]) / int(row["n"]))
            self._day, self._ratios = today, dict(ratios)
        return self._ratios


Series = tuple[str, str, str, str]  # project, service, queue, instance


@dataclass(frozen=True, slots=True)
class SeriesRead:
    """One queue series as the rule reads it: its recent samples (or only its last, if silent),
    its first sample's time in the look-back, and the instance's pod, host and pid."""

    samples: list[DepthSample]
    first_at: datetime
    label: str = ""


def queue_series(store: Store, now: datetime, lookback: timedelta,
                 recent: timedelta = timedelta(minutes=30)) -> dict[Series, SeriesRead]:
    """Every (project, service, queue, instance) seen in ``lookback``: its samples of the last
    ``recent`` in time order, or only its last sample if it has none that recent (a silent series)."""
    rows = store.query(
        "SELECT project, service, queue, instance, toString(max(ts)) AS last_at, toString(min(ts)) AS first_at,"
        " argMax(depth, ts) AS last_depth, argMax(ended, ts) AS last_ended, argMax(instance_label, ts) AS label,"
        " arraySort(x -> x.1, groupArrayIf((toString(ts), depth, oldest_age_s, ended),"
        f" ts >= {{recent:{_DT}}})) AS samples"
        f" FROM queue_depth WHERE ts >= {{since:{_DT}}} AND ts <= {{now:{_DT}}}"
        " GROUP BY project, service, queue, instance",
        {"since": _ts(now - lookback), "now": _ts(now), "recent": _ts(now - recent)},
    )
    series: dict[Series, SeriesRead] = {}
    for row in rows:
        samples = [DepthSample(_parse_ts(at), float(depth), age, bool(ended))
                   for at, depth, age, ended in row["samples"]]
        last = DepthSample(_parse_ts(row["last_at"]), float(row["last_depth"]), ended=bool(row["last_ended"]))
        series[(row["project"], row["service"], row["queue"], row["instance"])] = SeriesRead(
            samples or [last], _parse_ts(row["first_at"]), str(row["label"]))
    return series


def _trimmed(column: str) -> str:
    # the key's spend less its costliest single trace (spans without a trace are never trimmed)
    return f"sum({column}) - max(if(trace_id = '', 0, {column}))"


def _call_units(prefix: str, when: str = "1") -> str:
    """Per trace, of its priced calls where ``when`` holds: their number (``<prefix>n``), and the
    sums of their log costs (``<prefix>1``) and of its squares (``<prefix>2``): a request's unit
    cost, see ``_unit_cost``."""
    priced, log = f"ifNull(cost_usd, 0) > 0 AND {when}", "log(ifNull(cost_usd, 0))"
    return (f"countIf({priced}) AS {prefix}n, sumIf({log}, {priced}) AS {prefix}1,"
            f" sumIf(pow({log}, 2), {priced}) AS {prefix}2")


def _units(prefix: str) -> str:
    """Per group of :func:`_call_units` rows: the traces with priced calls (``<prefix>k``), the sum
    of their unit costs (``<prefix>s``) and of its squares (``<prefix>q``); untraced calls count
    one each."""
    n, one, two = f"{prefix}n", f"{prefix}1", f"{prefix}2"
    return (f"sumIf(if(trace_id = '', {n}, 1), {n} > 0) AS {prefix}k,"
            f" sumIf(if(trace_id = '', {one}, {one} / {n}), {n} > 0) AS {prefix}s,"
            f" sumIf(if(trace_id = '', {two}, ({one} / {n}) * ({one} / {n})), {n} > 0) AS {prefix}q")


@dataclass(frozen=True, slots=True)
class HourWindows:
    """What the cost rule reads each minute, in one query over the last hour: the trimmed spend in
    each of :data:`WINDOWS` (minutes) of every tenant and route (``spent``, keyed (project,
    dimension, value)) and of every (project, tenant, route) pair (``pairs``), and per pair its
    requests' unit costs over the hour and its last ``RECENT`` minutes (see ``_unit_cost``)."""

    spent: dict[Key, dict[int, float]]
    pairs: dict[Pair, dict[int, float]]
    requests: list[Window]
    top: dict[Key, TopTrace] = field(default_factory=dict)
    """Each tenant's and route's costliest trace of the hour (the one its ``spent`` leaves out)."""


def cost_windows(store: Store, now: datetime) -> HourWindows:
    """The last hour's :class:`HourWindows`."""
    sums = ", ".join(f"sumIf(ifNull(cost_usd, 0), ts >= {{s{m}:{_DT}}}) AS c{m}" for m in WINDOWS)
    trimmed = ", ".join(f"{_trimmed(f'c{m}')} AS a{m}" for m in WINDOWS)
    params = {f"s{m}": _ts(now - timedelta(minutes=m)) for m in WINDOWS} | {"now": _ts(now)}
    traced = "trace_id != ''"
    top = (f"argMaxIf(trace_id, c60, {traced}) AS top_trace, maxIf(c60, {traced}) AS top60,"
           f" argMaxIf(c{RECENT}, c60, {traced}) AS top_recent,"
           f" toUnixTimestamp64Milli(argMaxIf(first_ts, c60, {traced})) AS top_first_ms,"
           f" sum(c{RECENT}) AS all_recent")
    rows = store.query(
        f"SELECT project, tenant, route, grouping(tenant, route) AS g, {trimmed}, {_units('u')}, {_units('r')}, {top}"
        f" FROM (SELECT project, tenant, route, trace_id, min(ts) AS first_ts, {sums}, {_call_units('u')},"
        f" {_call_units('r', f'ts >= {{s{RECENT}:{_DT}}}')}"
        f" FROM llm_spans WHERE {_IS_CALL} AND ts >= {{s{max(WINDOWS)}:{_DT}}} AND ts < {{now:{_DT}}}"
        " GROUP BY project, tenant, route, trace_id)"
        " GROUP BY GROUPING SETS ((project, tenant), (project, route), (project, tenant, route))",
        params,
    )
    out = HourWindows({}, {}, [])
    for row in rows:
        windows = {m: float(row[f"a{m}"]) for m in WINDOWS}
        if int(row["g"]) != 0:
            out.spent[_key(row)] = windows
            if row["top_trace"]:
                out.top[_key(row)] = TopTrace(str(row["top_trace"]), _hour(int(row["top_first_ms"]) // 1000),
                                              float(row["top60"]), float(row["top_recent"]),
                                              float(row["all_recent"]))
            continue
        pair = (str(row["project"]), str(row["tenant"]), str(row["route"]))
        out.pairs[pair] = windows
        if float(row["uk"]) > 0:
            out.requests.append((pair, float(row["uk"]), float(row["us"]), float(row["rk"]), float(row["rs"])))
    return out


def _key(row: dict[str, Any]) -> Key:
    """(project, dimension, value) of a row grouped by tenant (``g`` = 1) or by route (2)."""
    if int(row["g"]) == 1:
        return (str(row["project"]), "tenant", str(row["tenant"]))
    return (str(row["project"]), "route", str(row["route"]))


@dataclass
class CostHistory:
    """Trimmed hourly spend of every tenant and route, kept in memory and extended hour by hour:
    complete hours do not change, so each new hour costs one query over the last few hours.
    Beside each hour's spend, the sums of its traces' squared and cubed costs and its costliest
    trace (the one trimmed): what one trace of the key usually costs, see :meth:`trace_jumps`."""

    days: int
    hourly: dict[Key, dict[datetime, float]] = field(default_factory=lambda: defaultdict(dict))
    traces: dict[Key, dict[datetime, tuple[float, float, float]]] = field(default_factory=lambda: defaultdict(dict))
    first_seen: dict[Key, datetime] = field(default_factory=dict)
    units: UnitCosts = field(default_factory=UnitCosts)
    _until: datetime | None = None
    _typical: dict[Key, float] = field(default_factory=dict)
    _typical_at: datetime | None = None

    def update(self, store: Store, now: datetime) -> None:
        until = now.replace(minute=0, second=0, microsecond=0)
        if self._until == until:
            return
        oldest = until - timedelta(days=self.days)
        # re-read the last 3 hours too: spans arrive late, by a spool's or an exporter's delay
        start = oldest if self._until is None or self._until < oldest else self._until - 3 * HOUR
        # one row per key, its hours as arrays: a row per key and hour made a start-up read at
        # 1,000 tenants 700k rows, and decoding them took most of 10 s
        rows = store.query(
            "SELECT project, tenant, route, g, groupArray(toUInt32(toUnixTimestamp(hour))) AS hours,"
            " groupArrayIf(spend, g != 0) AS spend, groupArrayIf(squares, g != 0) AS squares,"
            " groupArrayIf(cubes, g != 0) AS cubes, groupArrayIf(top, g != 0) AS top,"
            " groupArrayIf((uk, us, uq), g = 0) AS units"
            " FROM (SELECT project, tenant, route, grouping(tenant, route) AS g, hour,"
            # spans without a trace are each their own event (sq), never one "trace" of them all
            f" {_trimmed('c')} AS spend, sum(if(trace_id = '', sq, c * c)) AS squares,"
            " sum(if(trace_id = '', cu, c * c * c)) AS cubes,"
            f" max(if(trace_id = '', 0, c)) AS top, {_units('u')}"
            f" FROM (SELECT project, tenant, route, toStartOfHour(ts) AS hour, trace_id, {_call_units('u')},"
            " sum(ifNull(cost_usd, 0)) AS c, sum(pow(ifNull(cost_usd, 0), 2)) AS sq,"
            " sum(pow(ifNull(cost_usd, 0), 3)) AS cu"
            f" FROM llm_spans WHERE {_IS_CALL} AND ts >= {{start:{_DT}}} AND ts < {{until:{_DT}}}"
            " GROUP BY project, tenant, route, hour, trace_id)"
            " GROUP BY GROUPING SETS ((project, tenant, hour), (project, route, hour), (project, tenant, route, hour)))"
            # pairs only feed the last week's cost per request
            f" WHERE g != 0 OR (uk > 0 AND hour >= {{week:{_DT}}}) GROUP BY project, tenant, route, g",
            {"start": _ts(start), "until": _ts(until), "week": _ts(until - timedelta(days=7))},
        )
        units: dict[datetime, dict[Pair, tuple[float, float, float]]] = defaultdict(dict)
        for row in rows:
            hours = [_hour(h) for h in row["hours"]]
            if int(row["g"]) == 0:
                pair = (str(row["project"]), str(row["tenant"]), str(row["route"]))
                for hour, sums in zip(hours, row["units"], strict=True):
                    units[hour][pair] = (float(sums[0]), float(sums[1]), float(sums[2]))
                continue
            key = _key(row)
            self.hourly[key].update(zip(hours, map(float, row["spend"]), strict=True))
            moments = zip(map(float, row["squares"]), map(float, row["cubes"]), map(float, row["top"]), strict=True)
            self.traces[key].update(zip(hours, moments, strict=True))
            first = min(hours)
            if key not in self.first_seen or first < self.first_seen[key]:
                self.first_seen[key] = first
        for table in (self.hourly, self.traces):
            for series in table.values():
                for hour in [h for h in series if h < oldest]:
                    del series[hour]
        hour = start
        while hour < until:  # an hour re-read without priced calls any more is emptied too
            self.units.set_hour(hour, units.get(hour, {}))
            hour += HOUR
        self.units.keep_week(until)
        self.units.learn()
        self._until = until

    def typical_hourly(self, key: Key) -> float:
        """Mean hourly spend over the last week (from the key's first hour if newer)."""
        if self._until is None:
            return 0.0
        if self._typical_at != self._until:
            self._typical, self._typical_at = {}, self._until
        if key not in self._typical:
            self._typical[key] = self._mean_hourly(key, self._until)
        return self._typical[key]

    def trace_jumps(self, key: Key, outliers: int = 2) -> tuple[float, float]:
        """What one trace of the key costs as a compound-Poisson "event", from the last week's
        traces with the ``outliers`` costliest left out (one long session must not make the key
        deaf for a week): the sum of squared costs over the sum of costs (the variance's event,
        ``E[c^2] / E[c]``) and the sum of cubes over the sum of squares (the skew's, ``E[c^3] /
        E[c^2]``). Where a few dear sessions come among many cheap calls the second is the
        sessions' cost and the first a fraction of it; ``(0, 0)`` without a priced trace."""
        if self._until is None:
            return 0.0, 0.0
        week_ago = self._until - timedelta(days=7)
        series, hourly = self.traces.get(key, {}), self.hourly.get(key, {})
        hours = [h for h in hourly if h >= week_ago and h in series]
        tops = sorted((series[h][2] for h in hours), reverse=True)[:outliers]
        spend = sum(hourly[h] + series[h][2] for h in hours) - sum(tops)
        squares = sum(series[h][0] for h in hours) - sum(t ** 2 for t in tops)
        cubes = sum(series[h][1] for h in hours) - sum(t ** 3 for t in tops)
        return (squares / spend if spend > 0 else 0.0), (cubes / squares if squares > 0 else 0.0)

    def top_trace_hour(self, key: Key, until: datetime) -> float:
        """The costliest trace of any complete hour the history holds (its ``days``) before
        ``until``: long sessions come a few a week, and one week's costliest says less about how
        large the key's sessions get than three weeks' do."""
        return max((moments[2] for hour, moments in self.traces.get(key, {}).items() if hour < until), default=0.0)

    def _mean_hourly(self, key: Key, until: datetime) -> float:
        week_ago = max(until - timedelta(days=7), self.first_seen.get(key, until))
        hours = max((until - week_ago) / HOUR, 1.0)
        return sum(v for h, v in self.hourly.get(key, {}).items() if h >= week_ago) / hours

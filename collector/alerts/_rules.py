"""The three paging rules over the store: each reads once per evaluation (for every project) and
returns its verdicts; the evaluator turns verdicts into pages (see ``_state.transition``)."""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta, timezone

from ..store import LLM, Store, encode_rows, usd_text
from ..store import clickhouse_time as _ts
from ._cost import WINDOWS, CostRule, KeyHour, TopTrace, calibration, dispersion
from ._error_rate import ErrorRateRule, ServiceMemory, error_alert, most_affected
from ._model import BREACH, CLEAR, HOLD, QUEUE_NOT_DRAINING, QUEUE_SILENT, Alert, Verdict
from ._queue import QueueRule, SeriesSpan, replaced
from ._reads import CostHistory, DailyRatios, HourWindows, cost_windows, error_windows, queue_series
from ._state import AlertState
from ._unit_cost import Key, UnitShift

_DT = "DateTime64(3)"
NOISE_WEEK = timedelta(days=7)
"""The hours a key's noise is learnt from."""
NOISE_WEEK_HOURS = 168
"""Residuals kept per key: the hours of :data:`NOISE_WEEK`."""
BASELINE_CACHE_MAX = 500_000
"""Baselines kept in memory (key and hour) before the cache is emptied and rebuilt on demand."""


class ErrorRule:
    """Error spikes of every service: one query for the last hour, one a day for the usual ratios."""

    def __init__(self, rule: ErrorRateRule) -> None:
        self.rule = rule
        self.daily = DailyRatios()
        self._memory: dict[tuple[str, str], ServiceMemory] = {}

    def prepare(self, store: Store, now: datetime) -> None:
        """Read the usual ratios, as the first verdicts at ``now`` would."""
        self.daily.get(store, now)

    def verdicts(self, store: Store, now: datetime) -> list[Verdict]:
        ratios = self.daily.get(store, now)
        out = []
        for (project, service), window in error_windows(store, now).items():
            key = (project, service)
            memory = self._memory.setdefault(key, ServiceMemory())
            verdict = memory.verdict(self.rule, project, service, window, self.rule.usual(ratios.get(key, [])), now)
            if verdict is not None and verdict.state == BREACH:
                top = _top_error_labels(store, project, service, verdict.alert.since, now)
                alert = _since_first_failure(store, verdict.alert, now)
                verdict = replace(verdict, alert=replace(alert, details=alert.details + most_affected(top)))
            if verdict is not None:
                out.append(verdict)
        return out


def _since_first_failure(store: Store, alert: Alert, now: datetime) -> Alert:
    """The alert dated from its first failed call in or after its first minute, its figures
    counted from there (the rule counts in 10-second buckets and floors to the minute: a page said
    13:43 of an outage whose first failure was at 13:44:43, and counted the calls before it)."""
    project, service = alert.labels["project"], alert.labels["service"]
    params = {"project": project, "service": service, "since": _ts(alert.since), "now": _ts(now)}
    where = (f"project = {{project:String}} AND service = {{service:String}} AND kind = '{LLM}'"
             f" AND ts < {{now:{_DT}}}")
    rows = store.query(
        f"SELECT toString(min(ts)) AS first FROM llm_spans WHERE {where} AND status = 'error'"
        f" AND ts >= {{since:{_DT}}}", params)
    first = rows[0]["first"] if rows else ""
    if not first or first.startswith("1970"):
        return alert
    began = datetime.fromisoformat(first).replace(tzinfo=timezone.utc, microsecond=0)
    counts = store.query(
        f"SELECT count() AS n, countIf(status = 'error') AS e,"
        f" countIf(status = 'error' AND error_class = 'transient') AS t FROM llm_spans"
        f" WHERE {where} AND ts >= {{began:{_DT}}}", {**params, "began": _ts(began)})[0]
    return error_alert(alert.labels, bool(alert.numbers.get("outage")), int(counts["n"]), int(counts["e"]),
                       int(counts["t"]), alert.numbers["usual_error_rate"], began, now)


def _top_error_labels(store: Store, project: str, service: str, start: datetime, end: datetime) -> dict[str, str]:
    out = {}
    for column in ("tenant", "model"):
        rows = store.query(
            f"SELECT {column} AS value, count() AS n FROM llm_spans"
            f" WHERE project = {{project:String}} AND service = {{service:String}} AND kind = '{LLM}'"
            f" AND status = 'error' AND ts >= {{start:{_DT}}} AND ts < {{end:{_DT}}}"
            " GROUP BY value ORDER BY n DESC LIMIT 1",
            {"project": project, "service": service, "start": _ts(start), "end": _ts(end)},
        )
        if rows and rows[0]["value"]:
            out[column] = f"{rows[0]['value']} ({rows[0]['n']} errors)"
    return out


def queue_verdicts(store: Store, rule: QueueRule, now: datetime) -> list[Verdict]:
    """Every queue series seen in the rule's ``forget_after``, each told whether a successor
    took over from it (another instance of its service and queue)."""
    found = queue_series(store, now, rule.forget_after)
    groups: dict[tuple[str, str, str], list[SeriesSpan]] = defaultdict(list)
    for key, read in found.items():
        groups[key[:3]].append(SeriesSpan(key, read.first_at, read.samples[-1].ts, read.samples[-1].ended))
    taken_over = set().union(*(replaced(spans, rule.successor_overlap) for spans in groups.values()))
    out = []
    for key, read in found.items():
        project, service, queue, instance = key
        out += rule.evaluate(project, service, queue, read.samples, now, instance=instance, label=read.label,
                             replaced=key in taken_over)
    return out


def forgotten_queue_alerts(stored: Iterable[AlertState], verdicts: list[Verdict], rule: QueueRule) -> list[Verdict]:
    """A clear for every firing queue alert the queue rule said nothing about: its series is
    beyond ``forget_after`` (or gone), and no rule will look at it again."""
    judged = {v.alert.fingerprint for v in verdicts}
    note = f"; no report for {_hours(rule.forget_after)}, no longer watched"
    return [Verdict(CLEAR, Alert(s.name, s.labels, s.summary + note, s.starts_at, details=s.details))
            for s in stored if s.name in (QUEUE_SILENT, QUEUE_NOT_DRAINING) and s.fingerprint not in judged]


def _hours(delta: timedelta) -> str:
    return f"{delta / timedelta(hours=1):g} h"


def retire_queue_series(store: Store, labels: dict[str, str]) -> bool:
    """Mark the series a queue alert's ``labels`` name as ended, as the SDK's clean shutdown
    would: its QueueStoppedReporting page resolves at the next evaluations without the series
    reporting again, and this silence never pages again. What an acknowledgement calls.
    Returns whether the series was found. Blocking (one query, one insert)."""
    params = {k: labels.get(k, "") for k in ("project", "service", "queue", "instance")}
    rows = store.query(
        "SELECT toString(max(ts)) AS last_at, argMax(depth, ts) AS depth, argMax(instance_label, ts) AS label"
        " FROM queue_depth WHERE project = {project:String} AND service = {service:String}"
        " AND queue = {queue:String} AND instance = {instance:String} HAVING count() > 0",
        params,
    )
    if not rows:
        return False
    # a millisecond after the last sample: still silent, so nothing looks alive that is not
    at = datetime.fromisoformat(rows[0]["last_at"]).replace(tzinfo=timezone.utc) + timedelta(milliseconds=1)
    store.insert("queue_depth", encode_rows([{**params, "ts": _ts(at), "depth": float(rows[0]["depth"]),
                                              "ended": True, "instance_label": rows[0]["label"]}]))
    return True


class CostRules:
    """Cost anomalies of every tenant and route: one query for the last hour's windows per
    evaluation, and one per new hour to extend the hourly history."""

    def __init__(self, rule: CostRule) -> None:
        self.rule = rule
        self.history = CostHistory(days=rule.history.days)
        self._baselines: dict[tuple[Key, datetime], float | None] = {}
        self._residuals: dict[Key, deque[tuple[float, float]]] = {}
        self._noise: dict[Key, tuple[float, float] | None] = {}  # dispersion, jump (see CostRule.evaluate)
        self._calibration: dict[Key, float] = {}
        self._judged_until: datetime | None = None

    def prepare(self, store: Store, now: datetime) -> None:
        """Read the hourly history and learn each key's noise up to ``now``'s hour, as the first
        verdicts would: at 1,000 tenants this is seconds, the minutes after it a fraction of one."""
        self.history.update(store, now)
        self._learn_noise(now.replace(minute=0, second=0, microsecond=0))

    def verdicts(self, store: Store, now: datetime) -> list[Verdict]:
        self.prepare(store, now)  # a new hour extends the history by one
        hour = cost_windows(store, now)
        expected = {key: exp for key in self._keys(hour.spent) if (exp := self._expected(key, now)) is not None}
        unit = self.history.units.shift(hour.requests)
        out = self._route_verdicts(hour, expected, unit, now)
        surging = self._surging_routes(out, hour, expected, unit)
        if surging:  # and its dearer requests are not the tenants' either
            unit = self.history.units.shift(hour.requests, skip_routes=surging)
        for key in (k for k in expected if k[1] == "tenant"):
            tenant_spent = hour.spent.get(key)
            if surging and tenant_spent is not None:
                # a pricier model on a route pages once, for the route: deflate that route's share
                tenant_spent = _deflated(key, tenant_spent, hour.pairs, surging)
            out[key] = self._verdict(key, tenant_spent, expected[key], now, unit.get(key), hour.top.get(key))
        for key, verdict in out.items():
            if verdict.state == BREACH:
                drivers = _drivers(store, key, now, hour.top.get(key))
                out[key] = replace(verdict, alert=replace(verdict.alert, details=" ".join(
                    part for part in (verdict.alert.details, drivers) if part)))
        return list(out.values()) + self._runaways(store, hour, expected, now)

    def _runaways(self, store: Store, hour: HourWindows, expected: dict[Key, dict[int, float]],
                  now: datetime) -> list[Verdict]:
        """Each tenant's costliest trace judged by its own spend (see ``CostRule.runaway``)."""
        before = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=self.rule.runaway_recent_hours - 1)
        out = []
        for key in (k for k in expected if k[1] == "tenant"):
            spent = hour.spent.get(key) or {m: 0.0 for m in WINDOWS}
            key_hour = KeyHour(spent, expected[key], self.history.typical_hourly(key))
            verdict = self.rule.runaway(key, hour.top.get(key), key_hour, self.history.top_trace_hour(key, before),
                                        now)
            if verdict.state == BREACH:
                verdict = _since_trace_began(store, key[0], hour.top[key], verdict, now)
            out.append(verdict)
        return out

    def _route_verdicts(self, hour: HourWindows, expected: dict[Key, dict[int, float]],
                        unit: dict[Key, UnitShift], now: datetime) -> dict[Key, Verdict]:
        """Every route's verdict; a breach one tenant made is held (that tenant pages)."""
        out = {k: self._verdict(k, hour.spent.get(k), expected[k], now, unit.get(k), hour.top.get(k)) for k in expected
               if k[1] == "route"}
        for key, verdict in out.items():
            if verdict.state == BREACH and self._one_tenant(key, hour):
                out[key] = replace(verdict, state=HOLD)
        return out

    def _surging_routes(self, routes: dict[Key, Verdict], hour: HourWindows, expected: dict[Key, dict[int, float]],
                        unit: dict[Key, UnitShift]) -> dict[tuple[str, str], float]:
        """(project, route) of the routes whose last hour is at the breach ratio, paged or not, or
        whose requests got dearer (over the hour, or over its last minutes), and not one tenant's:
        by how much. After a route's alert has cleared, the tenants' last hour still holds its
        surge and must not page for it (and the share of the spend to deflate is the same for
        dearer requests). Another project's route of the same name is another route."""
        spent = hour.spent
        hour_ratio = {k: spent[k][60] / expected[k][60] for k in routes if k in spent and expected[k][60] > 0}
        surges = {k: ratio for k, ratio in hour_ratio.items() if ratio >= self.rule.ratio}
        for k in routes:
            # a pricier model minutes old is plain in the last minutes' requests before the
            # route's hour doubles, and a tenant mostly on that route doubles first
            if k in unit and (self.rule.dearer_hour(unit[k]) or self.rule.dearer_lately(unit[k])):
                surges[k] = max(hour_ratio.get(k, 1.0), unit[k].ratio)  # a surging hour is in hour_ratio
        return {(k[0], k[2]): ratio for k, ratio in surges.items() if not self._one_tenant(k, hour)}

    def _one_tenant(self, route: Key, hour: HourWindows) -> bool:
        """Whether one tenant made at least ``one_tenant_share`` of a route's last hour."""
        project, _, name = route
        spent = hour.spent.get(route, {}).get(60, 0.0)
        shares = [pair[60] for (p, _, r), pair in hour.pairs.items() if p == project and r == name]
        return bool(shares) and max(shares) >= self.rule.one_tenant_share * spent

    def _learn_noise(self, until: datetime) -> None:
        """Each key's residuals (spend less baseline) of the complete hours of the last week, one
        new hour per hour: what :func:`dispersion` reads."""
        if self._judged_until == until:
            return
        week = until - NOISE_WEEK
        start = week if self._judged_until is None or self._judged_until < week else self._judged_until
        hours = [start + timedelta(hours=h) for h in range(int((until - start) / timedelta(hours=1)))]
        for key, hourly in self.history.hourly.items():
            residuals = self._residuals.setdefault(key, deque(maxlen=NOISE_WEEK_HOURS))
            # with the hour now starting, whose baseline every minute of it asks for
            for hour, base in zip(hours, self._baselines_of(key, [*hours, until]), strict=False):
                if base is not None:
                    residuals.append((hourly.get(hour, 0.0) - base, base))
            # the hours' residuals can be tiny when each hour's only trace is trimmed away; a
            # trace of the key is one event whatever the residuals say
            self._calibration[key] = scale = calibration(residuals)
            measured = dispersion(residuals, scale)
            event, jump = self.history.trace_jumps(key)
            self._noise[key] = None if measured is None else (max(measured, event), jump)
        self._judged_until = until

    def _baselines_of(self, key: Key, hours: list[datetime]) -> list[float | None]:
        """The baselines of ``hours``, those not known yet computed together."""
        first = self.history.first_seen.get(key)
        missing = [h for h in hours if (key, h) not in self._baselines]
        if missing:
            values: list[float | None] = (self.rule.expected_hours(self.history.hourly[key], first, missing)
                                          if first else [None] * len(missing))
            self._baselines.update(((key, h), v) for h, v in zip(missing, values, strict=True))
        return [self._baselines[(key, h)] for h in hours]

    def _keys(self, spent: dict[Key, dict[int, float]]) -> set[Key]:
        return set(spent) | set(self.history.hourly)

    def _verdict(self, key: Key, spent: dict[int, float] | None, expected: dict[int, float], now: datetime,
                 unit: UnitShift | None, left_out: TopTrace | None = None) -> Verdict:
        spent = spent or {m: 0.0 for m in WINDOWS}
        noise, jump = self._noise.get(key) or (None, None)
        return self.rule.evaluate(key, KeyHour(spent, expected, self.history.typical_hourly(key), noise, jump, unit,
                                               left_out), now)

    def _expected(self, key: Key, now: datetime) -> dict[int, float] | None:
        """The baseline of each window: every window (at most an hour) spans this clock hour and
        the one before, prorated."""
        if key not in self.history.first_seen:
            return None
        hour = now.replace(minute=0, second=0, microsecond=0)
        previous, current = self._baselines_of(key, [hour - timedelta(hours=1), hour])
        if current is None or previous is None:
            return None
        into = (now - hour) / timedelta(minutes=1)
        if len(self._baselines) > BASELINE_CACHE_MAX:  # hours long past
            self._baselines.clear()
        scale = self._calibration.get(key, 1.0) / 60
        return {m: (current * min(m, into) + previous * max(0.0, m - into)) * scale for m in WINDOWS}


def _since_trace_began(store: Store, project: str, top: TopTrace, verdict: Verdict, now: datetime) -> Verdict:
    """The runaway's page dated from the trace's first call, which may be hours before the hour read."""
    rows = store.query(
        f"SELECT toString(min(ts)) AS first FROM llm_spans WHERE project = {{project:String}}"
        f" AND trace_id = {{trace:String}} AND kind = '{LLM}' AND ts >= {{since:{_DT}}} AND ts < {{now:{_DT}}}",
        {"project": project, "trace": top.trace_id, "since": _ts(now - timedelta(days=1)), "now": _ts(now)},
    )
    if not rows or not rows[0]["first"] or rows[0]["first"].startswith("1970"):
        return verdict
    began = datetime.fromisoformat(rows[0]["first"]).replace(tzinfo=timezone.utc)
    alert = verdict.alert
    summary = alert.summary.replace(f"(since {alert.since:%H:%M} UTC)", f"(since {began:%H:%M} UTC)")
    return replace(verdict, alert=replace(alert, since=began, summary=summary))


def _deflated(key: Key, spent: dict[int, float], pairs: dict[Key, dict[int, float]],
              surging: dict[tuple[str, str], float]) -> dict[int, float]:
    project, _, tenant = key
    out = dict(spent)
    for (p, t, route), pair in pairs.items():
        if p == project and t == tenant and (p, route) in surging:
            for m in WINDOWS:
                out[m] -= pair[m] * (1 - 1 / max(surging[(p, route)], 1.0))
    return out


def _drivers(store: Store, key: Key, now: datetime, left_out: TopTrace | None = None) -> str:
    """Which routes, models and users (or tenants) carried the last hour's spend, against the
    same hour a week earlier; the trace the alert's spend leaves out is left out here too."""
    project, dimension, value = key
    parts = []
    for column in ("route", "tenant", "model", "user_id"):
        if column == dimension:
            continue
        rows = store.query(
            f"SELECT {column} AS value,"
            f" sumIf(ifNull(cost_usd, 0), ts >= {{start:{_DT}}}"
            " AND ({left_out:String} = '' OR trace_id != {left_out:String})) AS now_usd,"
            f" sumIf(ifNull(cost_usd, 0), ts < {{week_end:{_DT}}}) AS before_usd FROM llm_spans"
            f" WHERE project = {{project:String}} AND {dimension} = {{key:String}} AND kind = '{LLM}'"
            f" AND ((ts >= {{start:{_DT}}} AND ts < {{now:{_DT}}})"
            f" OR (ts >= {{week:{_DT}}} AND ts < {{week_end:{_DT}}}))"
            " GROUP BY value ORDER BY now_usd - before_usd DESC LIMIT 3",
            {"project": project, "key": value, "start": _ts(now - timedelta(hours=1)), "now": _ts(now),
             "left_out": left_out.trace_id if left_out is not None else "",
             "week": _ts(now - timedelta(weeks=1, hours=1)), "week_end": _ts(now - timedelta(weeks=1))},
        )
        drivers = [
            f"{r['value'] or '(none)'} {usd_text(float(r['now_usd']))}"
            f" ({usd_text(float(r['before_usd']))} a week earlier)"
            for r in rows if float(r["now_usd"]) > float(r["before_usd"])
        ]
        if drivers:
            parts.append(f"{column.replace('_id', '')}s: " + "; ".join(drivers))
    trimmed = " (without the trace left out)" if left_out is not None else ""
    return f"Excess driven by{trimmed} " + " | ".join(parts) + "." if parts else ""


"""The daily digest: everything worth knowing that must not page, once a day.

Latency percentiles and the slowest routes, top spenders, soft-failure rates by detector label,
judge score moves (like for like: same judge model and rubric version), drift findings, each
against the day before (judge scores against the week before). Sent through the alert channels
as a non-paging message; its tables are an HTML fragment that the dashboards' ``/digest`` page
frames. A day not over yet is the day so far, compared with the same hours of the day before.
The day's silences and acknowledgements are listed: what on-call chose not to hear about.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from ..store import Store, call_detections, call_figures, usd_text
from ._model import Alert
from ._silences import acks, silences_between

DIGEST = "DailyDigest"
_env = Environment(loader=PackageLoader("infersight.collector.alerts", "templates"),
                   autoescape=select_autoescape(default=True, default_for_string=True))


@dataclass
class Digest:
    """One project's day, with the day before beside it."""

    project: str
    day: date
    totals: dict[str, Any]
    previous: dict[str, Any]
    slowest_routes: list[dict[str, Any]] = field(default_factory=list)
    top_spenders: list[dict[str, Any]] = field(default_factory=list)
    detector_rates: list[dict[str, Any]] = field(default_factory=list)
    judge_moves: list[dict[str, Any]] = field(default_factory=list)
    drift: list[dict[str, Any]] = field(default_factory=list)
    service_errors: list[dict[str, Any]] = field(default_factory=list)
    silences: list[dict[str, Any]] = field(default_factory=list)
    acks: list[dict[str, Any]] = field(default_factory=list)
    until: datetime | None = None

    @property
    def period(self) -> str:
        """The day, and for a day not over yet how far it goes ("so far" is compared with the same
        hours of the day before)."""
        return f"{self.day}" + (f" until {self.until:%H:%M} UTC" if self.until else "")

    def lines(self) -> list[str]:
        """The digest as a few plain lines, for chat channels."""
        t, p = self.totals, self.previous
        out = [
            f"{self.project} on {self.period}: {t['llm_calls']:,} calls ({_delta(t['llm_calls'], p['llm_calls'])}), "
            f"error rate {t['llm_error_rate']:.2%}, "
            f"cost {usd_text(t['cost_usd'], t['unpriced_calls'], t['estimated_cost_usd'])}"
            f" ({_delta(t['cost_usd'], p['cost_usd'])}), "
            f"p95 latency {_ms(t['latency_s']['p95'])}"
        ]
        up = [r for r in self.service_errors if r["up"]]
        if up:
            out.append("Error rate up (under the pager): " + ", ".join(
                f"{r['service'] or '(none)'} {r['error_rate']:.2%} ({_rate(r['day_before'])} the day before, "
                f"{_rate(r['week_before'])} a week before)" for r in up[:4]
            ))
        if self.slowest_routes:
            out.append("Slowest routes (p95): "
                       + ", ".join(f"{r['route'] or '(none)'} {_ms(r['p95_s'])}" for r in self.slowest_routes[:3]))
        if self.top_spenders:
            out.append("Top spenders: " + ", ".join(
                f"{r['tenant'] or '(none)'} {usd_text(r['cost_usd'], r['unpriced_calls'], r['estimated_cost_usd'])}"
                for r in self.top_spenders[:3]
            ))
        moved = [r for r in self.detector_rates if r["per_1k"] >= 2 * max(r["previous_per_1k"], 0.5)]
        if moved:
            out.append("Soft failures up: " + ", ".join(
                f"{r['label']} {r['per_1k']:.1f}/1k (was {r['previous_per_1k']:.1f})" for r in moved[:4]
            ))
        drops = [r for r in self.judge_moves if r["change"] is not None and r["change"] <= -0.25]
        if drops:
            out.append("Judge scores down: " + ", ".join(
                f"{r['route']} {r['rubric_id']} v{r['rubric_version']} {r['change']:+.2f}" for r in drops[:3]
            ))
        if self.drift:
            out.append(f"Drift: {len(self.drift)} finding(s), e.g. {self.drift[0]['evidence'][:120]}")
        if self.silences:
            out.append("Silenced: " + "; ".join(
                f"{' '.join(_matcher_text(m) for m in s['matchers'])} by {s['createdBy']} ({s['comment'][:80]})"
                for s in self.silences[:3]))
        if self.acks:
            out.append("Acknowledged: " + "; ".join(
                f"{a['alertname']} by {a['ackedBy']}" + (f" ({a['note'][:80]})" if a["note"] else "")
                for a in self.acks[:3]))
        return out

    def html(self) -> str:
        """The digest's tables as an HTML fragment (autoescaped), which the dashboards' page frames."""
        return _env.get_template("digest.html").render(d=self, ms=_ms, delta=_delta, usd=usd_text,
                                                       matcher=_matcher_text)

    def as_alert(self, now: datetime) -> Alert:
        """The digest as an informational alert for the channels (sent with ``paging=False``)."""
        lines = self.lines()
        return Alert(name=DIGEST, labels={"project": self.project}, summary=lines[0], since=now,
                     details=" | ".join(lines[1:]), link=f"/digest?date={self.day.isoformat()}", severity="info")


def _ms(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds * 1000:,.0f} ms"


def _rate(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.2%}"


def _delta(now: float | None, before: float | None) -> str:
    if now is None:
        return "unknown" if before else "no change"
    if not before:
        return "new" if now else "no change"
    return f"{(now - before) / before:+.0%} vs the day before"


def _matcher_text(m: dict[str, Any]) -> str:
    op = {(True, False): "=", (False, False): "!=", (True, True): "=~", (False, True): "!~"}
    return f"{m['name']}{op[(m['isEqual'], m['isRegex'])]}{m['value']}"


_DAY = timedelta(days=1)


def _window(day: date, span: timedelta = _DAY) -> tuple[int, int]:
    start = datetime.combine(day, time(0), tzinfo=timezone.utc)
    return int(start.timestamp() * 1e9), int((start + span).timestamp() * 1e9)


_RANGE = (
    "project = {project:String} AND ts >= fromUnixTimestamp64Nano({start:Int64})"
    " AND ts < fromUnixTimestamp64Nano({end:Int64})"
)


def _totals(store: Store, project: str, day: date, span: timedelta) -> dict[str, Any]:
    start, end = _window(day, span)
    (figures,) = call_figures(store, project, start, until_ns=end)
    return figures


def build_digest(store: Store, project: str, day: date, now: datetime | None = None) -> Digest:
    """The digest of ``day`` (UTC) for ``project``; of ``day`` until ``now`` when ``now`` falls
    inside it (today so far), each comparison then over the same hours of the earlier day."""
    midnight = datetime.combine(day, time(0), tzinfo=timezone.utc)
    span = max(now - midnight, timedelta(milliseconds=1)) if now is not None and now < midnight + _DAY else _DAY
    start, end = _window(day, span)
    prev_start, prev_end = _window(day - timedelta(days=1), span)
    params = {"project": project, "start": start, "end": end}
    digest = Digest(project, day, _totals(store, project, day, span),
                    _totals(store, project, day - timedelta(days=1), span))
    digest.until = midnight + span if span < _DAY else None
    until = midnight + span
    digest.silences = [s.as_json(now or until) for s in silences_between(store, project, midnight, until)]
    digest.acks = [a.as_json() for a in acks(store, project, since=midnight) if a.acked_at < until]
    by_route = [r for r in call_figures(store, project, start, until_ns=end, by=("route",)) if r["llm_calls"] >= 5]
    digest.slowest_routes = [
        {"route": r["route"], "calls": r["llm_calls"], "p95_s": r["latency_s"]["p95"]}
        for r in sorted(by_route, key=lambda r: (-r["latency_s"]["p95"], r["route"]))[:5]
    ]
    digest.top_spenders = call_figures(store, project, start, until_ns=end, by=("tenant",))[:5]
    digest.service_errors = service_errors(store, project, day, span)
    llm_calls = {"now": digest.totals["llm_calls"], "before": digest.previous["llm_calls"]}
    rates = store.query(
        "SELECT label, countIf(ts >= fromUnixTimestamp64Nano({start:Int64})) AS now,"
        " countIf(ts < fromUnixTimestamp64Nano({prev_end:Int64})) AS before FROM " + call_detections(
            "project = {project:String} AND ts >= fromUnixTimestamp64Nano({prev:Int64})"
            " AND ts < fromUnixTimestamp64Nano({end:Int64}) AND detector NOT LIKE 'drift%'")
        + " GROUP BY label ORDER BY now DESC",
        {**params, "prev": prev_start, "prev_end": prev_end},
    )
    digest.detector_rates = [
        {"label": r["label"], "count": int(r["now"]),
         "per_1k": 1000 * int(r["now"]) / max(llm_calls["now"], 1),
         "previous_per_1k": 1000 * int(r["before"]) / max(llm_calls["before"], 1)}
        for r in rates
    ]
    digest.drift = store.query(
        "SELECT detector, label, route, evidence FROM detections WHERE " + _RANGE + " AND detector LIKE 'drift%'"
        " ORDER BY ts DESC LIMIT 10",
        params,
    )
    week_start, _ = _window(day - timedelta(days=7))
    digest.judge_moves = [
        {**r, "change": (r["mean_now"] - r["mean_before"]) if r["n_before"] and r["n_now"] else None}
        for r in store.query(
            "SELECT route, judge_model, rubric_id, rubric_version,"
            " countIf(ts >= fromUnixTimestamp64Nano({start:Int64})) AS n_now,"
            " avgIf(score, ts >= fromUnixTimestamp64Nano({start:Int64})) AS mean_now,"
            " countIf(ts < fromUnixTimestamp64Nano({start:Int64})) AS n_before,"
            " avgIf(score, ts < fromUnixTimestamp64Nano({start:Int64})) AS mean_before"
            " FROM judge_scores WHERE project = {project:String} AND ts >= fromUnixTimestamp64Nano({week:Int64})"
            " AND ts < fromUnixTimestamp64Nano({end:Int64})"
            " GROUP BY route, judge_model, rubric_id, rubric_version HAVING n_now > 0 ORDER BY route, rubric_id",
            {**params, "week": week_start},
        )
    ]
    return digest


def service_errors(store: Store, project: str, day: date, span: timedelta = _DAY) -> list[dict[str, Any]]:
    """Each service's LLM error rate on ``day``, the day before and a week before, worst first.

    ``up`` marks a rate at least 1.5x either earlier one (and 0.1 points above it, on 200 calls or
    more): a creep that stays under the pager is seen the next morning.
    """
    def rates(on: date) -> dict[str, dict[str, Any]]:
        start, end = _window(on, span)
        return {r["service"]: r for r in call_figures(store, project, start, until_ns=end, by=("service",))}

    now, day_before, week_before = rates(day), rates(day - timedelta(days=1)), rates(day - timedelta(days=7))
    out = []
    for service, r in now.items():
        if not r["llm_calls"]:
            continue
        earlier = [x[service]["llm_error_rate"] if x.get(service, {}).get("llm_calls") else None
                   for x in (day_before, week_before)]
        rate = r["llm_error_rate"]
        up = r["llm_calls"] >= 200 and any(e is not None and rate >= 1.5 * e and rate - e >= 0.001 for e in earlier)
        out.append({"service": service, "llm_calls": r["llm_calls"], "error_rate": rate,
                    "day_before": earlier[0], "week_before": earlier[1], "up": up})
    return sorted(out, key=lambda r: -r["error_rate"])


def projects_active(store: Store, day: date) -> list[str]:
    start, end = _window(day)
    rows = store.query(
        "SELECT DISTINCT project FROM llm_spans WHERE ts >= fromUnixTimestamp64Nano({start:Int64})"
        " AND ts < fromUnixTimestamp64Nano({end:Int64}) ORDER BY project",
        {"start": start, "end": end},
    )
    return [r["project"] for r in rows]

"""The weekly quality report: one self-contained HTML file (inline CSS and SVG, no external
assets) with the week's numbers against the week before, eight weeks of trends, the biggest
moves by tenant, route and model, and the notable items of the week.

It runs the dashboards' own queries over fixed windows (ISO weeks, Monday 00:00 UTC), so its
numbers are the pages' numbers for the same week. The collector serves it too (``/report/weekly``,
``/api/v1/report/weekly``), and the CLI asks that collector when it owns the data directory.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from functools import partial
from typing import Any

from infersight.collector.errors import BadRequest
from infersight.collector.store import Store, usd_text

from ._figures import cost_figures, latency_figures, quality_figures
from ._filters import NS, View, view_between
from ._quality import quality
from ._queries import LLM_OPERATIONS, alerts, cost, latency
from ._templates import env
from ._weekly_trends import (
    TREND_WEEKS,
    feedback_trend,
    judge_trend,
    moves,
    traces_link,
    trend_figures,
    trends,
    week_label,
)

_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")
DAY_S = 86400


def parse_week(week: str | None, *, now: datetime | None = None) -> datetime:
    """Monday 00:00 UTC of ISO week ``week`` (``2026-W48``), or of the last complete week.

    Raises ValueError with the accepted form.
    """
    if week is None:
        today = (now or datetime.now(timezone.utc)).date()
        monday = today - timedelta(days=today.weekday() + 7)
        return datetime(monday.year, monday.month, monday.day, tzinfo=timezone.utc)
    match = _WEEK.match(week.strip())
    try:
        if match is None:
            raise ValueError
        day = datetime.fromisocalendar(int(match.group(1)), int(match.group(2)), 1)
    except ValueError:
        raise ValueError(f"The 'week' parameter must be an ISO week like 2026-W48; got {week!r}.") from None
    return day.replace(tzinfo=timezone.utc)


class NoReportData(BadRequest):
    """No LLM calls for the project in the week asked for: there is nothing to review.

    ``weeks`` are the ISO weeks that have the project's calls, ``projects`` the projects with
    calls the caller may know of (every project for the CLI that holds the data directory; over
    the API, only the caller's own).
    """

    status_code = 404

    def __init__(self, project: str, week: str, weeks: list[str], projects: list[str]) -> None:
        where = f"no LLM calls for project {project!r} in week {week}"
        listed = f"weeks with data: {', '.join(weeks)}" if weeks else f"project {project!r} has no data"
        others = f"; projects with data: {', '.join(projects)}" if projects else "; no project has data yet"
        super().__init__(f"{where} ({listed}{others})")
        self.project, self.week, self.weeks, self.projects = project, week, weeks, projects

    def to_dict(self) -> dict[str, Any]:
        return {"detail": str(self), "project": self.project, "week": self.week,
                "weeks_with_data": self.weeks, "projects_with_data": self.projects}


def weeks_with_data(store: Store, project: str | None = None) -> dict[str, list[str]]:
    """Project -> the ISO weeks with its LLM calls, oldest first (one project, or all). Blocks."""
    params: dict[str, Any] = {"llm": list(LLM_OPERATIONS), "project": project or ""}
    rows = store.query(
        "SELECT project, toUnixTimestamp(toMonday(period)) AS week FROM llm_hourly"
        " WHERE operation IN {llm:Array(String)} AND ({project:String} = '' OR project = {project:String})"
        " GROUP BY project, week HAVING sum(requests) > 0 ORDER BY project, week",
        params,
    )
    out: dict[str, list[str]] = {}
    for row in rows:
        monday = datetime.fromtimestamp(int(row["week"]), tz=timezone.utc)
        out.setdefault(row["project"], []).append(week_label(monday))
    return out


def check_report_data(store: Store, project: str, monday: datetime, *, all_projects: bool) -> None:
    """:class:`NoReportData` unless ``project`` has LLM calls in the week of ``monday``. Blocks.

    ``all_projects`` names every project with data in the error (the CLI holding the data
    directory); otherwise only the caller's own (the API, where a key sees one project).
    """
    found = weeks_with_data(store, None if all_projects else project)
    week = week_label(monday)
    if week not in found.get(project, []):
        raise NoReportData(project, week, found.get(project, []), sorted(found))


def _week_view(monday: datetime) -> View:
    start = int(monday.timestamp()) * NS
    return view_between(start, start + 7 * DAY_S * NS, DAY_S)


def delta(current: float | None, previous: float | None, *, higher_is_better: bool = False) -> dict[str, Any]:
    """How ``current`` compares with ``previous``: change, relative change and whether it is bad."""
    if current is None or previous is None:
        return {"change": None, "relative": None, "direction": "flat", "bad": False}
    change = current - previous
    relative = change / previous if previous else None
    direction = "flat" if abs(change) < 1e-12 or (relative is not None and abs(relative) < 0.02) else (
        "up" if change > 0 else "down")
    bad = direction != "flat" and ((direction == "down") if higher_is_better else (direction == "up"))
    return {"change": change, "relative": relative, "direction": direction, "bad": bad}


@contextmanager
def _progress(enabled: bool, total: int) -> Iterator[Callable[[str], None]]:
    if not enabled:
        yield lambda _step: None
        return
    from tqdm import tqdm

    bar = tqdm(total=total, desc="weekly report", unit="step", leave=False)
    try:
        def step(name: str) -> None:
            bar.set_postfix_str(name)
            bar.update(1)

        yield step
    finally:
        bar.close()


def weekly_data(store: Store, project: str, monday: datetime, *, progress: bool = False) -> dict[str, Any]:
    """Everything the weekly report shows, for the week starting ``monday``. Blocks on the store.

    The page functions run once per week of the trend (:data:`TREND_WEEKS`, the report's week
    last), so each week's figures are the pages' figures for that week.
    """
    mondays = [monday - timedelta(days=7 * back) for back in range(TREND_WEEKS - 1, -1, -1)]
    steps: list[tuple[str, Callable[[], Any]]] = [("alerts", lambda: alerts(store, project, _week_view(monday)))]
    for day in mondays:
        view = _week_view(day)
        steps += [
            (f"latency {week_label(day)}", partial(latency, store, project, view)),
            (f"cost {week_label(day)}", partial(cost, store, project, view)),
            (f"quality {week_label(day)}", partial(quality, store, project, view)),
        ]
    results: dict[str, Any] = {}
    with _progress(progress, len(steps)) as step:
        for name, run in steps:
            results[name] = run()
            step(name)
    weeks = [{"monday": day, **{part: results[f"{part} {week_label(day)}"] for part in ("latency", "cost", "quality")}}
             for day in mondays]
    this, before = weeks[-1], weeks[-2]
    lat, lat_prev = this["latency"], before["latency"]
    spend, spend_prev = this["cost"], before["cost"]
    qual, qual_prev = this["quality"], before["quality"]
    fired = results["alerts"]
    end = monday + timedelta(days=7)
    return {
        "project": project,
        "week": week_label(monday),
        "start": monday,
        "end": end,
        "generated": datetime.now(timezone.utc),
        "latency": lat, "latency_prev": lat_prev,
        "cost": spend, "cost_prev": spend_prev,
        "quality": qual, "quality_prev": qual_prev,
        "alerts": fired,
        "headline": _headline(lat, lat_prev, spend, spend_prev, qual, qual_prev, monday),
        "tenants": _linked(_per_name(spend["tenants"], spend_prev["tenants"]), "tenant", monday),
        "routes": _linked(_route_latency(lat["routes"], lat_prev["routes"]), "route", monday),
        "detectors": _linked(_detectors(qual, qual_prev), "label", monday),
        "trends": trends(weeks),
        "moves": moves(this, before, monday, end),
        "judge_trend": judge_trend(qual, mondays),
        "feedback_trend": feedback_trend(weeks),
        "notable": notable(lat, lat_prev, spend, spend_prev, qual, qual_prev, fired),
    }


def _linked(rows: list[dict[str, Any]], dim: str, monday: datetime) -> list[dict[str, Any]]:
    """Each row with ``link``: the week's traces of its tenant, route or detector."""
    end = monday + timedelta(days=7)
    for row in rows:
        name = row.get("name", row.get("route", row.get("detector")))
        row["link"] = traces_link(monday, end, **{dim: name})
    return rows


def _headline(lat: dict[str, Any], lat_prev: dict[str, Any], spend: dict[str, Any], spend_prev: dict[str, Any],
              qual: dict[str, Any], qual_prev: dict[str, Any], monday: datetime) -> list[dict[str, Any]]:
    t, tp = lat["totals"], lat_prev["totals"]
    flagged = sum(d["spans"] for d in qual["detectors"])
    flagged_prev = sum(d["spans"] for d in qual_prev["detectors"])
    soft = flagged / qual["calls"] if qual["calls"] else None
    soft_prev = flagged_prev / qual_prev["calls"] if qual_prev["calls"] else None
    rows = [
        ("LLM calls", t["requests"], tp["requests"], "count", None),
        ("Error rate", t["error_rate"], tp["error_rate"], "pct", False),
        ("Spend", spend["totals"]["cost_usd"], spend_prev["totals"]["cost_usd"], "usd", False),
        ("Spend per 1k calls", spend["totals"]["cost_per_1k"], spend_prev["totals"]["cost_per_1k"], "usd", False),
        ("Latency p50", t["duration_s"]["p50"], tp["duration_s"]["p50"], "ms", False),
        ("Latency p95", t["duration_s"]["p95"], tp["duration_s"]["p95"], "ms", False),
        ("Latency p99", t["duration_s"]["p99"], tp["duration_s"]["p99"], "ms", False),
        ("TTFT p95", t["ttft_s"]["p95"], tp["ttft_s"]["p95"], "ms", False),
        ("Queue wait p95", t["queue_wait_s"]["p95"], tp["queue_wait_s"]["p95"], "ms", False),
        ("Soft failures (flags per call)", soft, soft_prev, "pct", False),
    ]
    end = monday + timedelta(days=7)
    week = traces_link(monday, end)
    # Where the calls behind a figure are: the week's failed calls for the error rate, the
    # week's calls for the rest (the traces page shows their latency and cost).
    links = {"Error rate": traces_link(monday, end, status="error")}
    out = []
    for label, current, previous, unit, higher_is_better in rows:
        d = delta(current, previous, higher_is_better=bool(higher_is_better))
        if higher_is_better is None:
            d["bad"] = False
        out.append({"label": label, "current": current, "previous": previous, "unit": unit, **d,
                    "link": links.get(label, week)})
    # Spend reads as on every surface: what is not in the sum is said beside it.
    out[2]["text"] = usd_text(spend["totals"]["cost_usd"], spend["totals"]["unpriced_calls"],
                              spend["totals"]["estimated_cost_usd"])
    out[2]["previous_text"] = usd_text(spend_prev["totals"]["cost_usd"], spend_prev["totals"]["unpriced_calls"],
                                       spend_prev["totals"]["estimated_cost_usd"])
    return out


def _per_name(current: list[dict[str, Any]], previous: list[dict[str, Any]]) -> list[dict[str, Any]]:
    before = {row["name"]: row for row in previous}
    out = []
    for row in current:
        prev = before.get(row["name"])
        prev_cost = prev["cost_usd"] if prev else 0.0  # absent the week before: spent nothing
        out.append({**row, "previous_cost_usd": prev_cost, **delta(row["cost_usd"], prev_cost)})
    return out


def _route_latency(current: list[dict[str, Any]], previous: list[dict[str, Any]]) -> list[dict[str, Any]]:
    before = {row["route"]: row for row in previous}
    out = []
    for row in current:
        prev = before.get(row["route"])
        p95_prev = prev["duration_s"]["p95"] if prev else None
        out.append({**row, "previous_p95": p95_prev, **delta(row["duration_s"]["p95"], p95_prev)})
    return out


def _detectors(qual: dict[str, Any], qual_prev: dict[str, Any]) -> list[dict[str, Any]]:
    before = {d["detector"]: d for d in qual_prev["detectors"]}
    now = {d["detector"]: d for d in qual["detectors"]}
    names = [d["detector"] for d in qual["detectors"]] + [n for n in before if n not in now]
    out = []
    for name in names:
        rate = now[name]["rate"] if name in now else 0.0 if qual["calls"] else None
        rate_prev = before[name]["rate"] if name in before else 0.0 if qual_prev["calls"] else None
        out.append({"detector": name, "rate": rate, "previous": rate_prev,
                    "spans": now[name]["spans"] if name in now else 0, **delta(rate, rate_prev)})
    return out


JudgeCell = tuple[str, str, int, str, str]
"""(judge model, rubric id, rubric version, route, app version)."""


def _judge_cells(qual: dict[str, Any]) -> dict[JudgeCell, dict[str, float]]:
    """(judge, rubric, version, route, app version) -> {week: mean}."""
    out: dict[JudgeCell, dict[str, float]] = {}
    for group in qual["judge"]["groups"]:
        for row in group["rows"]:
            key = (group["judge_model"], group["rubric_id"], group["rubric_version"],
                   row["route"], row["service_version"])
            out[key] = {w: c["mean"] for w, c in row["weeks"].items() if c["mean"] is not None}
    return out


def notable(lat: dict[str, Any], lat_prev: dict[str, Any], spend: dict[str, Any], spend_prev: dict[str, Any],
            qual: dict[str, Any], qual_prev: dict[str, Any], alert_log: dict[str, Any]) -> list[dict[str, str]]:
    """The week's notable items, worst first: each a ``kind`` and a one-line ``text``."""
    items: list[tuple[int, str, str]] = []
    total, total_prev = spend["totals"]["cost_usd"], spend_prev["totals"]["cost_usd"]
    total, total_prev = total or 0.0, total_prev or 0.0
    before = {row["name"]: row["cost_usd"] or 0.0 for row in spend_prev["tenants"]}
    for row in spend["tenants"]:
        prev, now = before.get(row["name"], 0.0), row["cost_usd"] or 0.0
        grew = now - prev
        if grew >= max(1.0, 0.05 * max(total, total_prev)) and (prev == 0 or grew / prev >= 0.25):
            text = (f"Tenant {row['name'] or '(none)'} spent {usd_text(now)}, up {usd_text(grew)} from {usd_text(prev)}"
                    if prev else f"Tenant {row['name'] or '(none)'} is new this week: {usd_text(now)}")
            items.append((1, "cost", text))
    p95, p95_prev = lat["totals"]["duration_s"]["p95"], lat_prev["totals"]["duration_s"]["p95"]
    if p95 and p95_prev and p95 / p95_prev >= 1.15:
        items.append((1, "latency",
                      f"LLM latency p95 rose {p95 / p95_prev - 1:.0%}: {p95:.2f} s (was {p95_prev:.2f} s)"))
    routes_before = {r["route"]: r for r in lat_prev["routes"]}
    for r in lat["routes"]:
        prev = routes_before.get(r["route"])
        now_p95, prev_p95 = r["duration_s"]["p95"], prev["duration_s"]["p95"] if prev else None
        if now_p95 and prev_p95 and now_p95 / prev_p95 >= 1.2 and r["requests"] >= 20:
            items.append((2, "latency",
                          f"Route {r['route'] or '(none)'}: p95 {now_p95:.2f} s, up {now_p95 / prev_p95 - 1:.0%}"))
    rate, rate_prev = lat["totals"]["error_rate"], lat_prev["totals"]["error_rate"]
    if rate >= 0.01 and rate >= 1.5 * rate_prev:
        items.append((1, "errors", f"Error rate {rate:.1%} (was {rate_prev:.1%})"))
    for d in _detectors(qual, qual_prev):
        if d["rate"] and d["rate"] >= 0.005 and d["rate"] >= 1.5 * (d["previous"] or 0.0):
            items.append((2, "soft failures",
                          f"{d['detector']} flagged {d['rate']:.1%} of calls (was {(d['previous'] or 0):.1%})"))
    cells = _judge_cells(qual)
    for key, weeks in cells.items():
        ordered = [weeks[w] for w in sorted(weeks, key=int)]
        if len(ordered) >= 2 and ordered[-1] <= ordered[-2] - 0.3:
            judge, rubric, version, route, app = key
            items.append((1, "judge", f"{rubric} v{version} ({judge}) on {route or '(none)'} {app or '(no version)'}:"
                                      f" {ordered[-1]:.2f}, down from {ordered[-2]:.2f}"))
    for finding in qual["drift"][:5]:
        items.append((2, "drift", f"{finding['label']} on {finding['route'] or '(all routes)'}: {finding['evidence']}"))
    findings = spend["findings"]
    if findings:
        items.append((2, "cost", f"{len(findings)} cost loop / context stuffing finding(s),"
                                 f" e.g. {findings[0]['label']}: {findings[0]['evidence']}"))
    fired: dict[str, int] = {}
    for event in alert_log["history"]:
        if event["event"] == "firing":
            fired[event["name"]] = fired.get(event["name"], 0) + 1
    for name, count in sorted(fired.items()):
        items.append((1, "alerts", f"{name} fired {count} time(s)"))
    items.sort(key=lambda item: item[0])
    return [{"kind": kind, "text": text} for _, kind, text in items]


def render_weekly(data: dict[str, Any]) -> str:
    """The report as one HTML document: inline CSS, inline SVG, no scripts, no external assets."""
    figures = {
        "latency": latency_figures(data["latency"]),
        "cost": cost_figures(data["cost"]),
        "quality": quality_figures(data["quality"]),
        "trends": trend_figures(data["trends"]),
    }
    return env.get_template("report.html").render(data=data, figures=figures)


def render_weekly_page(data: dict[str, Any], **page: Any) -> str:
    """The report as a dashboard page: the same body, inside the navigation of the other pages."""
    figures = {
        "latency": latency_figures(data["latency"]),
        "cost": cost_figures(data["cost"]),
        "quality": quality_figures(data["quality"]),
        "trends": trend_figures(data["trends"]),
    }
    return env.get_template("report_page.html").render(data=data, figures=figures, **page)


def weekly_report(store: Store, project: str, monday: datetime, *, progress: bool = False) -> str:
    """Query and render the weekly report of ``project`` for the week starting ``monday``."""
    return render_weekly(weekly_data(store, project, monday, progress=progress))

"""The weekly report's longer view: eight weeks of the figures a review follows, the biggest
moves of the week by tenant, route and model, and a link from each to the traces behind it.

Every figure is one the pages show for the same week: each week's error rate and p95 TTFT are
:func:`~._queries.latency`'s totals, its spend per tenant and route :func:`~._queries.cost`'s
tables, its detector rates :func:`~._quality.quality`'s, so the report agrees with the Latency,
Cost and Quality pages and their ``/api/v1`` twins over the same window.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from markupsafe import Markup

from ._charts import PALETTE, Series, line_chart
from ._quality import LOW_SCORE

TREND_WEEKS = 8
TOP_NAMES = 8
MOVES_SHOWN = 5
MIN_CALLS_FOR_LATENCY_MOVE = 20


def week_label(monday: datetime) -> str:
    year, week, _ = monday.isocalendar()
    return f"{year}-W{week:02d}"


def traces_link(start: datetime, end: datetime, **filters: str | int | None) -> str:
    """``/traces`` filtered to the calls behind a figure: the week's window and the figure's filters.

    The names are the traces page's own query parameters (``tenant``, ``route``, ``model``,
    ``status``, ``label``, ``score_max``, ``start``/``end`` as ISO times).
    """
    args = {name: str(value) for name, value in filters.items() if value not in (None, "")}
    args["start"] = start.isoformat(timespec="seconds")
    args["end"] = end.isoformat(timespec="seconds")
    return "/traces?" + urlencode(args)


def trends(weeks: list[dict[str, Any]]) -> dict[str, Any]:
    """Eight weeks side by side, oldest first. ``weeks`` holds, per week, its ``monday`` and the
    page functions' results for it (``latency``, ``cost``, ``quality``)."""
    mondays = [w["monday"] for w in weeks]
    figures = {
        "calls": [w["latency"]["totals"]["requests"] for w in weeks],
        "error_rate": [w["latency"]["totals"]["error_rate"] if w["latency"]["totals"]["requests"] else None
                       for w in weeks],
        "ttft_p95": [w["latency"]["totals"]["ttft_s"]["p95"] for w in weeks],
    }
    detectors: dict[str, list[float | None]] = {}
    for i, w in enumerate(weeks):
        for d in w["quality"]["detectors"]:
            detectors.setdefault(d["detector"], [None] * len(weeks))[i] = d["rate"]
    for rates in detectors.values():  # no flag in a week with calls is a rate of 0
        for i, w in enumerate(weeks):
            if rates[i] is None and w["quality"]["calls"]:
                rates[i] = 0.0
    windows = [(m, m + timedelta(days=7)) for m in mondays]
    return {
        "weeks": [week_label(m) for m in mondays],
        "xs": [int(m.timestamp()) for m in mondays],
        # Each week's cell opens that week's calls behind it: its failures, its detector's flags.
        "error_links": [traces_link(start, end, status="error") for start, end in windows],
        "week_links": [traces_link(start, end) for start, end in windows],
        "detector_links": {name: [traces_link(start, end, label=name) for start, end in windows]
                           for name in sorted(detectors)},
        **figures,
        "detectors": dict(sorted(detectors.items())),
        "tenants": _spend_by(weeks, "tenants", "tenant"),
        "routes": _spend_by(weeks, "routes", "route"),
    }


def _spend_by(weeks: list[dict[str, Any]], table: str, dim: str) -> list[dict[str, Any]]:
    """The names that spent most over the weeks, each with its spend per week (``None``: no calls)."""
    per: dict[str, list[dict[str, Any] | None]] = {}
    for i, w in enumerate(weeks):
        for row in w["cost"][table]:
            per.setdefault(row["name"], [None] * len(weeks))[i] = row
    total = {name: sum((r["cost_usd"] or 0.0) for r in rows if r) for name, rows in per.items()}
    names = sorted(per, key=lambda n: (-total[n], n))[:TOP_NAMES]
    last = weeks[-1]
    return [{
        "name": name, "dim": dim,
        "cost_usd": [r["cost_usd"] if r else None for r in per[name]],
        "rows": per[name],
        "link": traces_link(last["monday"], last["monday"] + timedelta(days=7), **{dim: name}),
    } for name in names]


def moves(this: dict[str, Any], before: dict[str, Any], start: datetime, end: datetime) -> list[dict[str, Any]]:
    """What changed and where: per tenant, route and model, the week's biggest rises in spend and
    error rate, and per route in p95 TTFT, against the week before, each linked to its traces.

    One group per figure, largest first by what the rise cost: dollars added, errors beyond last
    week's rate, and calls slowed (calls times the relative rise; routes of at least
    :data:`MIN_CALLS_FOR_LATENCY_MOVE` calls, where a p95 means something).
    """
    found: dict[str, list[dict[str, Any]]] = {"spend": [], "error rate": [], "TTFT p95": []}
    for dim, table in (("tenant", "tenants"), ("route", "routes"), ("model", "models")):
        previous = {row["name"]: row for row in before["cost"][table]}
        for row in this["cost"][table]:
            for move in _row_moves(dim, row, previous.get(row["name"]), start, end):
                found[move["figure"]].append(move)
    previous_routes = {r["route"]: r for r in before["latency"]["routes"]}
    for r in this["latency"]["routes"]:
        p95, prev = r["ttft_s"]["p95"], previous_routes.get(r["route"])
        prev_p95 = prev["ttft_s"]["p95"] if prev else None
        if p95 and prev_p95 and r["requests"] >= MIN_CALLS_FOR_LATENCY_MOVE and p95 > prev_p95:
            found["TTFT p95"].append({
                "dim": "route", "name": r["route"], "figure": "TTFT p95", "unit": "ms",
                "current": p95, "previous": prev_p95, "weight": r["requests"] * (p95 / prev_p95 - 1),
                "bad": p95 / prev_p95 >= 1.1, "link": traces_link(start, end, route=r["route"]),
            })
    units = {"spend": "usd", "error rate": "pct", "TTFT p95": "ms"}
    return [{"figure": figure, "unit": units[figure],
             "rows": sorted(rows, key=lambda m: (-m["weight"], m["dim"], m["name"]))[:MOVES_SHOWN]}
            for figure, rows in found.items()]


def _row_moves(dim: str, row: dict[str, Any], prev: dict[str, Any] | None, start: datetime,
               end: datetime) -> list[dict[str, Any]]:
    out = []
    cost, prev_cost = row["cost_usd"] or 0.0, (prev["cost_usd"] or 0.0) if prev else 0.0
    if cost > prev_cost:
        out.append({"dim": dim, "name": row["name"], "figure": "spend", "unit": "usd", "current": row["cost_usd"],
                    "previous": prev["cost_usd"] if prev else None, "weight": cost - prev_cost,
                    "bad": prev_cost == 0 or cost / prev_cost >= 1.25,
                    "link": traces_link(start, end, **{dim: row["name"]})})
    rate = row["errors"] / row["requests"] if row["requests"] else 0.0
    prev_rate = prev["errors"] / prev["requests"] if prev and prev["requests"] else 0.0
    extra_errors = row["errors"] - prev_rate * row["requests"]
    if row["errors"] and rate > prev_rate:
        out.append({"dim": dim, "name": row["name"], "figure": "error rate", "unit": "pct", "current": rate,
                    "previous": prev_rate if prev else None, "weight": extra_errors,
                    "bad": rate >= 1.5 * prev_rate,
                    "link": traces_link(start, end, status="error", **{dim: row["name"]})})
    return out


def judge_trend(quality: dict[str, Any], mondays: list[datetime]) -> list[dict[str, Any]]:
    """Judge means per rubric (like for like: one judge model and rubric version), route and app
    version over the report's weeks; a low week links to that week's low-scored traces."""
    keys = [str(int(m.timestamp())) for m in mondays]
    out = []
    for group in quality["judge"]["groups"]:
        rows = []
        for row in group["rows"]:
            cells = []
            for key, monday in zip(keys, mondays, strict=True):
                cell = row["weeks"].get(key)
                link = traces_link(monday, monday + timedelta(days=7), route=row["route"], score_max=LOW_SCORE)
                cells.append(None if cell is None else {**cell, "link": link})
            if any(cells):
                rows.append({"route": row["route"], "service_version": row["service_version"], "weeks": cells})
        if rows:
            out.append({"judge_model": group["judge_model"], "rubric_id": group["rubric_id"],
                        "rubric_version": group["rubric_version"], "rows": rows})
    return out


def feedback_trend(weeks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Users' feedback per (name, kind) over the report's weeks, as the Quality page shows each
    week: per week ``count``, ``negative`` (thumbs down) and ``mean`` (the share up for thumbs,
    the mean for scores; never mixed, never set beside judge scores as one number)."""
    per: dict[tuple[str, str], list[dict[str, Any] | None]] = {}
    for i, w in enumerate(weeks):
        for group in w["quality"]["feedback"]["groups"]:
            cell = {"count": group["count"], "negative": group["negative"], "mean": group["mean"]}
            per.setdefault((group["name"], group["kind"]), [None] * len(weeks))[i] = cell
    return [{"name": name, "kind": kind, "weeks": cells} for (name, kind), cells in sorted(per.items())]


def trend_figures(data: dict[str, Any]) -> dict[str, Markup]:
    """The trends as charts, one point per week."""
    xs = data["xs"]
    return {
        "error_rate": line_chart(xs, [Series("error rate", data["error_rate"], PALETTE[3])], unit="pct",
                                 title="Error rate of LLM calls, per week", height=180, width=560),
        "ttft": line_chart(xs, [Series("TTFT p95", data["ttft_p95"], PALETTE[0])], unit="ms",
                           title="Time to first token p95, per week", height=180, width=560),
        "detectors": line_chart(
            xs, [Series(name, rates, PALETTE[i % len(PALETTE)]) for i, (name, rates) in
                 enumerate(data["detectors"].items())],
            unit="pct", title="Share of LLM calls flagged per detector, per week", height=200),
    }

"""The charts of each page, built from the page's data; the weekly report draws the same ones."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from markupsafe import Markup

from ._charts import OTHER, PALETTE, Bar, Series, hbars, line_chart, percentile_series, stacked_bars
from ._queries import LLM_OPERATIONS

_MAX_BUCKETS = 2000


def every_bucket(data: dict[str, Any], rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` (one per bucket with data) padded with ``{"bucket": x}`` for every empty bucket of
    the data's window (``start``, ``end``, ``bucket_s``), so a chart's x axis is time: an hour of
    fresh data is a line at the right end, not a few points spread over the whole width."""
    by_bucket = {int(row["bucket"]): row for row in rows}
    try:
        start = datetime.fromisoformat(data["start"]).timestamp()
        end = datetime.fromisoformat(data["end"]).timestamp()
        step = int(data["bucket_s"])
    except (KeyError, TypeError, ValueError):
        return list(rows)
    first = int(start) // step * step
    window = range(first, math.ceil(end), step)[:_MAX_BUCKETS]
    return [by_bucket.get(x, {"bucket": x}) for x in sorted(set(by_bucket) | set(window))]


def _p(point: dict[str, Any], measure: str, level: str) -> float | None:
    return (point.get(measure) or {}).get(level)


def latency_figures(data: dict[str, Any]) -> dict[str, Markup]:
    """TTFT anatomy, TTFT, queue wait, prefill, ITL, TPOT and end-to-end charts, and the steps per route."""
    points = every_bucket(data, data["series"])
    xs = [p["bucket"] for p in points]

    def pct(measure: str, title: str, width: int = 960) -> Markup:
        return line_chart(xs, percentile_series(points, measure), unit="ms", title=title, band=(0, 2), width=width)

    anatomy = stacked_bars(
        xs,
        [
            Series("queue wait p50", [_p(p, "queue_wait_s", "p50") for p in points], "#e08a1e"),
            Series("prefill p50", [_p(p, "prefill_s", "p50") for p in points], "#7a5cc7"),
        ],
        unit="ms", title="Median wait for the first token: queue wait + prefill",
    )
    itl = line_chart(
        xs,
        [
            Series("per-call median ITL, p50", [_p(p, "itl_p50_s", "p50") for p in points], PALETTE[4]),
            *[
                Series(f"per-call p95 ITL, {n}", [_p(p, "itl_p95_s", n) for p in points], PALETTE[i], dashed=n == "p99")
                for i, n in enumerate(("p50", "p95", "p99"))
            ],
        ],
        unit="ms", title="Inter-token latency", band=(1, 3),
    )
    bars = []
    for route in data["routes"][:12]:
        steps = route["steps"]
        segments = []
        for op, color in (("retrieval", "#2f9e62"), ("rerank", "#1c9fb0")):
            if op in steps and steps[op]["duration_s"]["p50"] is not None:
                segments.append((f"{op} p50", steps[op]["duration_s"]["p50"], color))
        generation = [steps[op]["duration_s"]["p50"] for op in LLM_OPERATIONS if op in steps]
        if generation and generation[0] is not None:
            segments.append(("generation p50", generation[0], "#3b6fd8"))
        bars.append(Bar(route["route"] or "(no route)", segments))
    return {
        "anatomy": anatomy,
        "ttft": pct("ttft_s", "Time to first token"),
        "queue_wait": pct("queue_wait_s", "Queue wait", 560),
        "prefill": pct("prefill_s", "Prefill", 560),
        "itl": itl,
        "tpot": pct("tpot_s", "Time per output token"),
        "duration": pct("duration_s", "End-to-end duration"),
        "steps": hbars(
            bars, unit="ms", title="Median time per step, slowest routes first",
            legend=[("retrieval p50", "#2f9e62"), ("rerank p50", "#1c9fb0"), ("generation p50", "#3b6fd8")],
        ),
    }


def queue_figure(rows: list[dict[str, Any]]) -> Markup:
    """Depth of each reported queue over time."""
    xs = sorted({int(r["bucket"]) for r in rows})
    names: dict[str, dict[int, float]] = {}
    for row in rows:
        names.setdefault(f"{row['service']}/{row['queue']}", {})[int(row["bucket"])] = float(row["depth"])
    series = [
        Series(name, [per.get(x) for x in xs], PALETTE[i % len(PALETTE)])
        for i, (name, per) in enumerate(sorted(names.items())[:8])
    ]
    return line_chart(xs, series, unit="count", title="Queue depth (largest sample per bucket)")


def _color(i: int, name: str) -> str:
    return OTHER if name == "(other)" else PALETTE[i % len(PALETTE)]


def cost_figures(data: dict[str, Any]) -> dict[str, Markup]:
    """Spend over time stacked by tenant, route or model, and the top tenants."""
    points = every_bucket(data, data["series"])
    xs = [p["bucket"] for p in points]
    series = [
        Series(name or "(none)", [p.get("cost_usd", {}).get(name, 0.0) for p in points], _color(i, name))
        for i, name in enumerate(data["series_names"])
    ]
    return {
        "over_time": stacked_bars(xs, series, unit="usd", title=f"Spend per {data['by']}"),
        "tenants": hbars(
            [Bar(t["name"] or "(none)", [("cost", t["cost_usd"] or 0.0, PALETTE[0])]) for t in data["tenants"][:10]],
            unit="usd", title="Top tenants by spend",
        ),
    }


def quality_figures(data: dict[str, Any]) -> dict[str, Any]:
    """Soft-failure rates over time, broken JSON by class, and judge means per app version."""
    points = every_bucket(data, data["series"])
    xs = [p["bucket"] for p in points]
    detectors = [d["detector"] for d in data["detectors"]]
    rates = line_chart(
        xs,
        [Series(d, [p.get("rates", {}).get(d) for p in points], PALETTE[i % len(PALETTE)])
         for i, d in enumerate(detectors)],
        unit="pct", title="Share of LLM calls flagged, per detector",
    )
    json_bars = hbars(
        [Bar(row["label"], [("calls", row["spans"], PALETTE[1])], note=f"{row['spans']:,}")
         for row in data["json_classes"]],
        unit="count", title="Broken JSON by class", width=560,
    )
    judge = []
    for group in data["judge"]["groups"]:
        weeks = [int(w) for w in group["weeks"]]
        series = [
            Series(version or "(no version)", [per.get(str(w)) for w in weeks], PALETTE[i % len(PALETTE)])
            for i, (version, per) in enumerate(group["versions"].items())
        ]
        judge.append(line_chart(
            weeks, series, unit="score", y_max=5.0, height=200, step_s=7 * 86400,
            title=f"Mean judge score per week and app version — {group['rubric_id']} v{group['rubric_version']}"
                  f" by {group['judge_model']}",
        ))
    return {"rates": rates, "json": json_bars, "judge": judge, "feedback": feedback_figures(data)}


def feedback_figures(data: dict[str, Any]) -> list[Markup]:
    """One chart per (feedback name, kind): the share of thumbs up, or the mean score, per bucket."""
    charts = []
    for i, group in enumerate(data["feedback"]["groups"]):
        points = every_bucket(data, group["series"])
        thumbs = group["kind"] == "thumbs"
        line = Series(group["name"], [p.get("mean") for p in points], PALETTE[i % len(PALETTE)])
        charts.append(line_chart(
            [p["bucket"] for p in points], [line],
            unit="pct" if thumbs else "score", y_max=1.0 if thumbs else None, height=180,
            title=f"{group['name']}: share of thumbs up" if thumbs else f"{group['name']}: mean score",
        ))
    return charts


def overview_figures(data: dict[str, Any]) -> dict[str, Markup]:
    """LLM calls, error rate, p95 TTFT and spend per bucket (:func:`~._queries.overview_series`):
    a bucket without calls is 0 calls and $0 spent, and has no error rate or TTFT."""
    points = every_bucket(data, data["series"])
    xs = [p["bucket"] for p in points]

    def line(key: str, name: str, unit: str, title: str, color: str, empty: float | None) -> Markup:
        return line_chart(xs, [Series(name, [p.get(key, empty) for p in points], color)], unit=unit, title=title,
                          height=180, width=560)

    spend = stacked_bars(
        xs,
        [Series("known", [p.get("cost_usd") or 0.0 for p in points], PALETTE[0]),
         Series("estimated", [p.get("estimated_cost_usd") or 0.0 for p in points], OTHER)],
        unit="usd", title="Spend (calls of unknown cost not in it)", height=180, width=560,
    )
    return {
        "calls": line("calls", "LLM calls", "count", "LLM calls", PALETTE[0], 0),
        "error_rate": line("error_rate", "error rate", "pct", "Error rate of LLM calls", PALETTE[3], None),
        "ttft": line("ttft_p95_s", "TTFT p95", "ms", "Time to first token, p95", PALETTE[4], None),
        "spend": spend,
    }

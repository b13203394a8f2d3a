"""The numbers behind the Quality page: soft-failure rates, judge-score trends, drift findings,
users' feedback and how it agrees with the judge."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from infersight.collector.errors import StoreError
from infersight.collector.store import (
    JUDGE_PASS_SCORE,
    Store,
    call_detections,
    feedback_judge_agreement,
    feedback_series,
)

from ._filters import NS, View, finite, where
from ._queries import COST_DETECTORS, LLM_OPERATIONS, detections_of, window
from ._rollup import aggregate

DRIFT_DETECTORS = ("drift",)
_NOT_SOFT_FAILURES = DRIFT_DETECTORS + COST_DETECTORS
JUDGE_WEEKS = 8
WEEK_S = 7 * 86400
LOW_SCORE = 2  # on the judges' 1..5 scale: "bad"


def quality(store: Store, project: str, view: View) -> dict[str, Any]:
    """Soft failures per detector over time and per label, judge trends and drift findings.

    A rate is the share of LLM calls in which a detector found something (a call counted
    once per detector, whichever of its spans the detector fired on: ``store.call_detections``).
    Labels are listed per detector version: rates are comparable only within one version.
    """
    calls = aggregate(store, project, view, ("bucket",), ("requests",), match={"operation": LLM_OPERATIONS})
    calls_per_bucket = {row["bucket"]: row["requests"] for row in calls}
    total_calls = sum(calls_per_bucket.values())

    params: dict[str, Any] = {
        "project": project, "start_ns": view.start_ns, "end_ns": view.end_ns, "bucket_s": view.bucket_s,
        "other": list(_NOT_SOFT_FAILURES),
    }
    scope = " " + call_detections(
        "project = {project:String}"
        " AND ts >= fromUnixTimestamp64Nano({start_ns:Int64}) AND ts < fromUnixTimestamp64Nano({end_ns:Int64})"
        " AND detector NOT IN {other:Array(String)} AND splitByChar('.', label)[1] NOT IN {other:Array(String)}"
        f"{where(view, params)}"
    )
    per_bucket = store.query(
        "SELECT toUnixTimestamp(toStartOfInterval(toDateTime(ts, 'UTC'), INTERVAL {bucket_s:UInt32} SECOND)) AS bucket,"
        f" detector, uniqExact(span_id) AS spans FROM{scope} GROUP BY bucket, detector",
        params,
    )
    per_label = store.query(
        "SELECT detector, version, label, count() AS detections, uniqExact(span_id) AS spans,"
        f" avg(score) AS mean_score FROM{scope} GROUP BY detector, version, label"
        " ORDER BY detector, version, spans DESC, label",
        params,
    )
    per_detector = store.query(
        f"SELECT detector, uniqExact(span_id) AS spans FROM{scope} GROUP BY detector ORDER BY detector",
        params,
    )

    detectors = [row["detector"] for row in per_detector]
    flagged: dict[int, dict[str, int]] = defaultdict(dict)
    for row in per_bucket:
        flagged[int(row["bucket"])][row["detector"]] = int(row["spans"])
    series = []
    for bucket in sorted(set(calls_per_bucket) | set(flagged)):
        n = calls_per_bucket.get(bucket, 0)
        series.append({
            "bucket": bucket, "calls": n,
            "rates": {d: (flagged[bucket].get(d, 0) / n if n else None) for d in detectors},
        })
    for row in per_label:
        row["detections"], row["spans"] = int(row["detections"]), int(row["spans"])
        row["rate"] = row["spans"] / total_calls if total_calls else None
        row["mean_score"] = finite(row["mean_score"])
    return {
        **window(view),
        "calls": total_calls,
        "detectors": [
            {"detector": row["detector"], "spans": int(row["spans"]),
             "rate": int(row["spans"]) / total_calls if total_calls else None}
            for row in per_detector
        ],
        "series": series,
        "labels": per_label,
        "json_classes": [row for row in per_label if row["detector"] == "json"],
        "drift": detections_of(store, project, view, DRIFT_DETECTORS, 50),
        "judge": judge_trends(store, project, view),
        "feedback": feedback_trends(store, project, view),
    }


def feedback_trends(store: Store, project: str, view: View) -> dict[str, Any]:
    """Users' feedback over the view's window per (name, kind), and its agreement with the judge.

    Kept apart per (name, kind), never averaged together nor into judge scores: for thumbs the
    share up, for scores their mean. ``agreement`` sets thumbs against the judge's pass/fail at
    ``pass_score`` (``store.feedback_judge_agreement``). The view's service, route, tenant and
    model filters do not apply: feedback names a trace, not a call's columns.
    """
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for row in feedback_series(store, project, view.start_ns, view.end_ns, view.bucket_s):
        key = (row["name"], row["kind"])
        group = groups.setdefault(key, {"name": key[0], "kind": key[1], "count": 0, "negative": 0, "sum": 0.0,
                                        "series": []})
        n, mean = int(row["count"]), float(row["mean"])
        group["count"] += n
        group["negative"] += int(row["negative"])
        group["sum"] += n * mean
        group["series"].append({"bucket": int(row["bucket"]), "count": n, "mean": mean})
    out = []
    for group in groups.values():
        total = group.pop("sum")
        out.append(group | {"mean": total / group["count"] if group["count"] else None})
    try:
        agreement = feedback_judge_agreement(store, project, view.start_ns, view.end_ns)
    except StoreError as exc:  # a store without judge_scores, as judge_trends allows
        if "UNKNOWN_TABLE" not in str(exc) and "does not exist" not in str(exc):
            raise
        agreement = []
    return {"groups": out, "agreement": agreement, "pass_score": JUDGE_PASS_SCORE}


def judge_trends(store: Store, project: str, view: View, *, weeks: int = JUDGE_WEEKS) -> dict[str, Any]:
    """Judge scores per week, route and app version, over at least the last ``weeks`` weeks.

    Scores are kept apart per (judge model, rubric, rubric version): only those are comparable.
    Means are weighted by 1 / sample_rate, undoing the sampler's stratification. Only the
    ``route`` and ``tenant`` filters apply (judge_scores has no service or model column).
    ``available`` is false when the store has no judge_scores table.
    """
    end_s = view.end_ns // NS
    start_s = min(view.start_ns // NS, end_s - weeks * WEEK_S)
    start_s -= (start_s // 86400 + 3) % 7 * 86400 + start_s % 86400  # back to a Monday 00:00 UTC
    start_s = max(start_s, 0)  # 1970 began on a Thursday; no DateTime holds the Monday before
    params: dict[str, Any] = {"project": project, "start_s": start_s, "end_ns": view.end_ns}
    try:
        rows = store.query(
            "SELECT judge_model, rubric_id, rubric_version, route, service_version,"
            " toUnixTimestamp(toMonday(toDateTime(ts, 'UTC'))) AS week, count() AS n,"
            " sum(1 / greatest(sample_rate, 1e-9)) AS weight,"
            " sum(score / greatest(sample_rate, 1e-9)) AS weighted_sum,"
            f" countIf(score <= {LOW_SCORE}) AS low"
            " FROM judge_scores WHERE project = {project:String}"
            " AND ts >= toDateTime({start_s:UInt32}, 'UTC') AND ts < fromUnixTimestamp64Nano({end_ns:Int64})"
            f"{where(view, params, dims=('route', 'tenant'))}"
            " GROUP BY judge_model, rubric_id, rubric_version, route, service_version, week"
            " ORDER BY judge_model, rubric_id, rubric_version, route, service_version, week",
            params,
        )
    except StoreError as exc:
        if "UNKNOWN_TABLE" in str(exc) or "does not exist" in str(exc):
            return {"available": False, "groups": []}
        raise
    groups: dict[tuple[str, str, int], dict[str, Any]] = {}
    for row in rows:
        key = (row["judge_model"], row["rubric_id"], int(row["rubric_version"]))
        group = groups.setdefault(key, {
            "judge_model": key[0], "rubric_id": key[1], "rubric_version": key[2],
            "weeks": set(), "cells": defaultdict(dict),
            "versions": defaultdict(lambda: defaultdict(lambda: [0.0, 0.0])),
        })
        week, weight, weighted = int(row["week"]), float(row["weight"]), float(row["weighted_sum"])
        group["weeks"].add(week)
        group["cells"][(row["route"], row["service_version"])][week] = {
            "n": int(row["n"]), "mean": weighted / weight if weight else None,
            "low_share": int(row["low"]) / int(row["n"]),
        }
        acc = group["versions"][row["service_version"]][week]
        acc[0] += weight
        acc[1] += weighted
    out = []
    for group in groups.values():
        out.append({
            "judge_model": group["judge_model"], "rubric_id": group["rubric_id"],
            "rubric_version": group["rubric_version"],
            "weeks": sorted(group["weeks"]),
            "rows": [
                {"route": route, "service_version": version, "weeks": {str(w): c for w, c in cells.items()}}
                for (route, version), cells in sorted(group["cells"].items())
            ],
            "versions": {
                version: {str(w): (s / wt if wt else None) for w, (wt, s) in sorted(per_week.items())}
                for version, per_week in sorted(group["versions"].items())
            },
        })
    return {"available": True, "groups": out}

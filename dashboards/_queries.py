"""The numbers behind the Latency and Cost pages (and their JSON API), one function per page.

Every function takes the store, the caller's project and a :class:`View`, blocks on the store,
and returns plain JSON-able data; pages render exactly what the API returns.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from infersight.collector.store import (
    LLM,
    Store,
    call_detections,
    clickhouse_time,
    merge_histograms,
    operations_of,
    percentiles,
    spend_of,
    spend_sql,
)

from ._filters import NS, View, where
from ._rollup import aggregate

# The rollups are keyed by operation: model calls are the operations of kind 'llm' (the span
# contract, infersight.collector.store), retrieval and rerank the steps around them.
LLM_OPERATIONS = operations_of(LLM)
LATENCY_MEASURES = ("duration_s", "ttft_s", "queue_wait_s", "prefill_s", "itl_p50_s", "itl_p95_s", "tpot_s")
SUMS = ("requests", "errors", "rerank_candidates")
# What store.spend_of shapes (money summed exactly, known, estimated and unknown apart), and calls.
SPEND_MEASURES = (
    "requests", "errors", "input_tokens", "output_tokens", "input_calls", "output_calls", "unknown_usage_calls",
    "cost_usd", "priced_calls", "estimated_cost_usd", "estimated_calls", "unpriced_calls",
)
COST_BY = ("tenant", "route", "model")
# Detectors that find money burnt (issue 5): repeated prompts, whole documents in the context.
COST_DETECTORS = ("cost_loop", "context_stuffing", "cost")
_TOP_SERIES = 8
OPTIONS_MAX = 200


def window(view: View) -> dict[str, Any]:
    """The view's window and filters, as the API reports them."""
    return {
        "start": _iso(view.start_ns),
        "end": _iso(view.end_ns),
        "bucket_s": view.bucket_s,
        "filters": dict(view.filters),
    }


def _iso(unix_ns: int) -> str:
    return datetime.fromtimestamp(unix_ns / NS, tz=timezone.utc).isoformat(timespec="seconds")


def _rate(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def _combine(rows: list[dict[str, Any]], sums: tuple[str, ...], latencies: tuple[str, ...]) -> dict[str, Any]:
    """Rows of :func:`aggregate` (``histograms=True``) added up, latencies as percentiles."""
    out: dict[str, Any] = {m: sum(row[m] for row in rows) for m in sums}
    out.update({m: percentiles(merge_histograms(row[m] for row in rows)) for m in latencies})
    return out


def latency(store: Store, project: str, view: View) -> dict[str, Any]:
    """Latency anatomy of LLM calls over the view, and the steps around them.

    Returns ``totals`` (calls, errors and p50/p95/p99/p999 of end-to-end duration, TTFT, queue
    wait, prefill, per-call ITL p50 and p95, TPOT), ``series`` (the same per chart bucket),
    ``routes`` (the slowest routes by p95 duration, with the p50 of their retrieval, rerank and
    generation steps) and ``steps`` (per operation, with rerank candidate counts).
    """
    series = aggregate(
        store, project, view, ("bucket",), ("requests", *LATENCY_MEASURES), match={"operation": LLM_OPERATIONS}
    )
    cells = aggregate(
        store, project, view, ("route", "operation"), (*SUMS, *LATENCY_MEASURES), histograms=True
    )
    llm_cells = [c for c in cells if c["operation"] in LLM_OPERATIONS]
    totals = _combine(llm_cells, SUMS, LATENCY_MEASURES)
    totals["error_rate"] = _rate(totals["errors"], totals["requests"])

    routes = []
    for route in sorted({c["route"] for c in cells}):
        mine = [c for c in cells if c["route"] == route]
        llm = [c for c in mine if c["operation"] in LLM_OPERATIONS]
        route_steps = {
            op: _combine([c for c in mine if c["operation"] == op], SUMS, ("duration_s",))
            for op in sorted({c["operation"] for c in mine})
        }
        if not llm:
            continue
        row = {"route": route, **_combine(llm, SUMS, ("duration_s", "ttft_s", "queue_wait_s")), "steps": route_steps}
        row["error_rate"] = _rate(row["errors"], row["requests"])
        routes.append(row)
    routes.sort(key=lambda r: (-(r["duration_s"]["p95"] or 0.0), r["route"]))

    steps = []
    operations = sorted({c["operation"] for c in cells}, key=lambda op: (op not in LLM_OPERATIONS, op))
    for op in operations:
        row = _combine([c for c in cells if c["operation"] == op], SUMS, ("duration_s",))
        calls, candidates, p50 = row["requests"], row["rerank_candidates"], row["duration_s"]["p50"]
        steps.append({
            "operation": op, "requests": calls, "errors": row["errors"], "duration_s": row["duration_s"],
            "candidates_per_call": candidates / calls if candidates and calls else None,
            "s_per_candidate": p50 / (candidates / calls) if candidates and calls and p50 is not None else None,
        })
    return {
        **window(view),
        "totals": totals,
        "series": series,
        "routes": routes[:15],
        "steps": steps,
    }


def queue_series(store: Store, project: str, view: View, queue: str | None) -> list[dict[str, Any]]:
    """Depth and oldest-item age of the reported queues (``watch_queue``) per chart bucket.

    One row per (queue, bucket): the largest depth and age sampled in the bucket. Only the
    ``service`` filter applies; ``queue`` narrows to one queue.
    """
    params: dict[str, Any] = {
        "project": project, "start_ns": view.start_ns, "end_ns": view.end_ns, "bucket_s": view.bucket_s,
        "queue": queue or "",
    }
    rows = store.query(
        "SELECT service, queue,"
        " toUnixTimestamp(toStartOfInterval(toDateTime(ts, 'UTC'), INTERVAL {bucket_s:UInt32} SECOND)) AS bucket,"
        " max(depth) AS depth, max(oldest_age_s) AS oldest_age_s FROM queue_depth"
        " WHERE project = {project:String} AND ts >= fromUnixTimestamp64Nano({start_ns:Int64})"
        " AND ts < fromUnixTimestamp64Nano({end_ns:Int64})"
        " AND ({queue:String} = '' OR queue = {queue:String})"
        f"{where(view, params, dims=('service',))}"
        " GROUP BY service, queue, bucket ORDER BY service, queue, bucket",
        params,
    )
    return rows


def cost(store: Store, project: str, view: View, by: str = "tenant") -> dict[str, Any]:
    """Spend over the view: totals, per ``by`` (tenant, route or model) over time, the top
    tenants, routes, models and users, and the cost loops and context stuffing found.

    Every figure is of LLM calls, as on every other surface (``store.call_figures``): the
    retrieval, rerank, embedding and tool spans around them neither count as calls nor add
    spend; ``cost_per_1k`` is dollars per 1,000 calls.
    """
    if by not in COST_BY:
        by = "tenant"
    cells = aggregate(store, project, view, COST_BY, SPEND_MEASURES, match={"operation": LLM_OPERATIONS})
    tables: dict[str, list[dict[str, Any]]] = {}
    for dim in COST_BY:
        per: dict[str, dict[str, Any]] = {}
        for cell in cells:
            row = per.setdefault(cell[dim], {m: 0 for m in SPEND_MEASURES})
            for m in SPEND_MEASURES:
                row[m] += cell[m]  # money: exact Decimal sums
        tables[dim] = [_spend_row(sums, name=name) for name, sums in per.items() if sums["requests"]]
    totals = _spend_row({m: sum(cell[m] for cell in cells) for m in SPEND_MEASURES})
    for rows in tables.values():
        for row in rows:
            row["share"] = _rate(row["cost_usd"] or 0.0, totals["cost_usd"] or 0.0)
        rows.sort(key=lambda r: (-(r["cost_usd"] or 0.0), -r["requests"], r["name"]))

    top = [row["name"] for row in tables[by][:_TOP_SERIES]]
    buckets: dict[int, dict[str, Any]] = {}
    for row in aggregate(store, project, view, ("bucket", by), ("cost_usd",), match={"operation": LLM_OPERATIONS}):
        name = row[by] if row[by] in top else "(other)"
        in_bucket = buckets.setdefault(row["bucket"], {})
        in_bucket[name] = in_bucket.get(name, 0) + row["cost_usd"]
    names = top + (["(other)"] if any("(other)" in b for b in buckets.values()) else [])
    # A chart's bar heights: known cost per bucket, 0 where none (the tables say what is unknown).
    series = [{"bucket": b, "cost_usd": {n: float(buckets[b].get(n, 0)) for n in names}} for b in sorted(buckets)]
    return {
        **window(view),
        "by": by,
        "totals": totals,
        "series_names": names,
        "series": series,
        "tenants": tables["tenant"],
        "routes": tables["route"],
        "models": tables["model"],
        "users": top_users(store, project, view),
        "findings": cost_findings(store, project, view),
    }


def _spend_row(sums: dict[str, Any], **name: str) -> dict[str, Any]:
    """Calls and spend of summed cells as every surface serves them (``store.spend_of``)."""
    row = {**name, "requests": int(sums["requests"]), "errors": int(sums["errors"]), **spend_of(sums)}
    row["cost_per_1k"] = None if row["cost_usd"] is None else _rate(row["cost_usd"], row["requests"]) * 1000
    return row


def top_users(store: Store, project: str, view: View, limit: int = 10) -> list[dict[str, Any]]:
    """The users (``infersight.user.id``) who spent most over the view, by LLM calls. A user is
    one of a tenant's: the same id under two tenants is two users (ids are the tenants' own)."""
    params: dict[str, Any] = {
        "project": project, "start_ns": view.start_ns, "end_ns": view.end_ns, "limit": limit, "llm": LLM,
    }
    rows = store.query(
        "SELECT tenant, user_id, count() AS requests,"
        f" {', '.join(f'{sql} AS {name}' for name, sql in spend_sql('1').items())}"
        " FROM llm_spans WHERE project = {project:String} AND kind = {llm:String}"
        " AND ts >= fromUnixTimestamp64Nano({start_ns:Int64}) AND ts < fromUnixTimestamp64Nano({end_ns:Int64})"
        f" AND user_id != ''{where(view, params)}"
        " GROUP BY tenant, user_id ORDER BY toDecimal128(cost_usd, 12) DESC, tenant, user_id LIMIT {limit:UInt32}",
        params,
    )
    return [{"tenant": r["tenant"], "user_id": r["user_id"], "requests": int(r["requests"]), **spend_of(r)}
            for r in rows]


def cost_findings(store: Store, project: str, view: View, limit: int = 50) -> list[dict[str, Any]]:
    """Cost loops and context stuffing the detectors found over the view, newest first."""
    return detections_of(store, project, view, COST_DETECTORS, limit)


def detections_of(
    store: Store, project: str, view: View, detectors: tuple[str, ...], limit: int
) -> list[dict[str, Any]]:
    """Detections by any of ``detectors`` (by detector name or label prefix), newest first."""
    params: dict[str, Any] = {
        "project": project, "start_ns": view.start_ns, "end_ns": view.end_ns, "limit": limit,
        "detectors": list(detectors),
    }
    return store.query(
        "SELECT toUnixTimestamp64Milli(ts) AS at_ms, trace_id, span_id, service, tenant, route, model, detector,"
        " version, label, score, evidence FROM " + call_detections(
            "project = {project:String}"
            " AND ts >= fromUnixTimestamp64Nano({start_ns:Int64}) AND ts < fromUnixTimestamp64Nano({end_ns:Int64})"
            " AND (detector IN {detectors:Array(String)} OR splitByChar('.', label)[1] IN {detectors:Array(String)})"
            f"{where(view, params)}")
        + " ORDER BY detections.ts DESC LIMIT {limit:UInt32}",
        params,
    )


OVERVIEW_MEASURES = ("requests", "errors", "ttft_s", "cost_usd", "priced_calls", "estimated_cost_usd",
                     "estimated_calls")


def overview_series(store: Store, project: str, view: View) -> dict[str, Any]:
    """The Overview's time series: the window and, per bucket with LLM calls, the ``calls``,
    ``errors``, ``error_rate``, ``ttft_p95_s`` and spend (``cost_usd`` known, ``estimated_cost_usd``
    apart; ``None`` without a priced call), from the same rollups and raw rows as the Latency and
    Cost pages, so the buckets add up to their totals."""
    out = []
    for row in aggregate(store, project, view, ("bucket",), OVERVIEW_MEASURES, match={"operation": LLM_OPERATIONS}):
        spend = spend_of({**row, "unpriced_calls": 0, "input_tokens": 0, "output_tokens": 0, "input_calls": 0,
                          "output_calls": 0, "unknown_usage_calls": 0})
        out.append({
            "bucket": row["bucket"], "calls": row["requests"], "errors": row["errors"],
            "error_rate": _rate(row["errors"], row["requests"]), "ttft_p95_s": row["ttft_s"]["p95"],
            "cost_usd": spend["cost_usd"], "estimated_cost_usd": spend["estimated_cost_usd"],
        })
    return {**window(view), "series": out}


def firing_alerts(store: Store, project: str) -> list[dict[str, Any]]:
    """The project's alerts firing now, newest first (the rows ``GET /api/v1/alerts`` lists as firing)."""
    from infersight.collector.alerts import history

    return history(store, project, datetime.now(timezone.utc))["firing"]


def options(store: Store, project: str, view: View) -> dict[str, list[str]]:
    """The services, routes, tenants and models seen over the view (for the filter menus)."""
    params = {"project": project, "h0": view.start_ns // NS // 3600 * 3600, "end_ns": view.end_ns,
              "n": OPTIONS_MAX}
    rows = store.query(
        "SELECT groupUniqArray({n:UInt32})(service) AS service, groupUniqArray({n:UInt32})(route) AS route,"
        " groupUniqArray({n:UInt32})(tenant) AS tenant, groupUniqArray({n:UInt32})(model) AS model"
        " FROM llm_tenant_hourly WHERE project = {project:String}"
        " AND period >= toDateTime({h0:UInt32}, 'UTC') AND period < fromUnixTimestamp64Nano({end_ns:Int64})",
        params,
    )
    row = rows[0] if rows else {}
    return {dim: sorted(v for v in row.get(dim, []) if v) for dim in ("service", "route", "tenant", "model")}


def alerts(store: Store, project: str, view: View) -> dict[str, Any]:
    """Firing alerts and the alert events of the view whose labels fit its filters: the rows
    ``GET /api/v1/alerts`` returns, filtered."""
    from infersight.collector.alerts import history

    result = history(store, project, datetime.fromtimestamp(view.start_ns / NS, tz=timezone.utc))
    end = clickhouse_time(datetime.fromtimestamp(view.end_ns / NS, tz=timezone.utc))

    def fits(row: dict[str, Any]) -> bool:
        labels = row.get("labels") or {}
        return all(labels.get(dim) == value for dim, value in view.filters.items())

    return {
        "firing": [r for r in result["firing"] if fits(r)],
        "history": [r for r in result["history"] if fits(r) and r["at"] < end],
    }

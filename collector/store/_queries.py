"""Read queries shared by the JSON API and the dashboards, so both always show the same numbers."""

from __future__ import annotations

from typing import Any

from ._base import Store

_TOTALS = """
SELECT
    count() AS spans,
    countIf(status = 'error') AS errors,
    sum(input_tokens) AS input_tokens,
    sum(output_tokens) AS output_tokens,
    sum(ifNull(cost_usd, 0)) AS cost_usd,
    quantiles(0.5, 0.95, 0.99)(duration_s) AS latency_s
FROM llm_spans
WHERE project = {project:String} AND ts >= fromUnixTimestamp64Nano({since_ns:Int64})
"""


def summary(store: Store, project: str, since_ns: int) -> dict[str, Any]:
    """Span, error, token and cost totals with latency percentiles, overall and per tenant.

    Counts GenAI spans (LLM, retrieval, rerank). Latency percentiles are in seconds and
    ``None`` when there are no spans.
    """
    params = {"project": project, "since_ns": since_ns}
    overall = store.query(_TOTALS, params)[0]
    tenants = store.query(
        _TOTALS.replace("FROM llm_spans", ", tenant FROM llm_spans")
        + " GROUP BY tenant ORDER BY cost_usd DESC, tenant",
        params,
    )
    out = _shape(overall)
    out["tenants"] = [{"tenant": row["tenant"], **_shape(row)} for row in tenants]
    out["dead_letters"] = dead_letters(store, project, since_ns)
    return out


def dead_letters(store: Store, project: str, since_ns: int) -> dict[str, Any]:
    """Acknowledged requests of ``project`` the store refused since ``since_ns`` (kept in
    ``dead_letters``, not in the figures): how many, their spans, and the latest reason."""
    (row,) = store.query(
        "SELECT count() AS requests, sum(spans) AS spans, argMax(reason, stored) AS last_reason,"
        " toString(max(stored)) AS last_at FROM dead_letters"
        " WHERE project = {project:String} AND stored >= fromUnixTimestamp64Nano({since_ns:Int64})",
        {"project": project, "since_ns": since_ns},
    )
    requests = int(row["requests"])
    return {
        "requests": requests,
        "spans": int(row["spans"]),
        "last_reason": row["last_reason"] if requests else None,
        "last_at": row["last_at"] if requests else None,
    }


def _shape(row: dict[str, Any]) -> dict[str, Any]:
    spans = int(row["spans"])
    q = row["latency_s"] if spans else [None, None, None]
    return {
        "spans": spans,
        "errors": int(row["errors"]),
        "error_rate": (int(row["errors"]) / spans) if spans else 0.0,
        "input_tokens": int(row["input_tokens"]),
        "output_tokens": int(row["output_tokens"]),
        "cost_usd": float(row["cost_usd"]),
        "latency_s": {"p50": q[0], "p95": q[1], "p99": q[2]},
    }


_SPAN_COLUMNS = (
    "ts, trace_id, span_id, parent_span_id, service, operation, tenant, user_id, route, provider, "
    "model, input_tokens, output_tokens, cost_usd, duration_s, status, error_type, finish_reason"
)


def recent_spans(store: Store, project: str, since_ns: int, limit: int) -> list[dict[str, Any]]:
    """The newest GenAI spans since ``since_ns``, newest first, at most ``limit``."""
    return store.query(
        f"SELECT {_SPAN_COLUMNS} FROM llm_spans"
        " WHERE project = {project:String} AND ts >= fromUnixTimestamp64Nano({since_ns:Int64})"
        " ORDER BY ts DESC LIMIT {limit:UInt32}",
        {"project": project, "since_ns": since_ns, "limit": limit},
    )


def detections(
    store: Store, project: str, since_ns: int, detector: str | None, limit: int
) -> list[dict[str, Any]]:
    """Detections since ``since_ns``, newest first, optionally of one detector."""
    return store.query(
        "SELECT toString(ts) AS at, trace_id, span_id, service, tenant, route, model, detector, version,"
        " label, score, evidence FROM detections"
        " WHERE project = {project:String} AND ts >= fromUnixTimestamp64Nano({since_ns:Int64})"
        " AND ({detector:String} = '' OR detector = {detector:String})"
        " ORDER BY detections.ts DESC LIMIT {limit:UInt32}",
        {"project": project, "since_ns": since_ns, "detector": detector or "", "limit": limit},
    )


def queues(store: Store, project: str, since_ns: int) -> list[dict[str, Any]]:
    """Each reported queue's latest depth and oldest-item age, with its sample count since ``since_ns``."""
    return store.query(
        "SELECT service, queue, argMax(depth, ts) AS depth, argMax(oldest_age_s, ts) AS oldest_age_s,"
        " toString(max(ts)) AS last_seen, count() AS samples FROM queue_depth"
        " WHERE project = {project:String} AND ts >= fromUnixTimestamp64Nano({since_ns:Int64})"
        " GROUP BY service, queue ORDER BY service, queue",
        {"project": project, "since_ns": since_ns},
    )

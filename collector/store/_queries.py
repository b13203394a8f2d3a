"""Read queries shared by the JSON API and the dashboards, so both always show the same numbers."""

from __future__ import annotations

from typing import Any

from ._base import Store
from ._events import fill_finish_reasons
from ._kinds import LLM
from ._metrics import call_figures


def summary(store: Store, project: str, since_ns: int) -> dict[str, Any]:
    """The headline figures (:func:`~._metrics.call_figures`) overall, with ``tenants`` (the same
    per tenant, largest cost first) and ``dead_letters`` (requests the store refused)."""
    (out,) = call_figures(store, project, since_ns)
    out["tenants"] = call_figures(store, project, since_ns, by=("tenant",))
    out["dead_letters"] = dead_letters(store, project, since_ns)
    return out


# A project's dead letters that no replay has put back yet (``dead_letter_replays`` is append-only).
PENDING_DEAD_LETTERS = (
    "project = {project:String} AND (project, received, stored) NOT IN"
    " (SELECT project, received, stored FROM dead_letter_replays WHERE project = {project:String})"
)


def dead_letters(store: Store, project: str, since_ns: int) -> dict[str, Any]:
    """Acknowledged requests of ``project`` the store refused since ``since_ns`` and not replayed
    yet (kept in ``dead_letters``, not in the figures): how many, their spans, the latest reason."""
    (row,) = store.query(
        "SELECT count() AS requests, sum(spans) AS spans, argMax(reason, stored) AS last_reason,"
        f" toString(max(stored)) AS last_at FROM dead_letters WHERE {PENDING_DEAD_LETTERS}"
        " AND stored >= fromUnixTimestamp64Nano({since_ns:Int64})",
        {"project": project, "since_ns": since_ns},
    )
    requests = int(row["requests"])
    return {
        "requests": requests,
        "spans": int(row["spans"]),
        "last_reason": row["last_reason"] if requests else None,
        "last_at": row["last_at"] if requests else None,
    }


_SPAN_COLUMNS = (
    "ts, trace_id, span_id, parent_span_id, service, operation, kind, tenant, user_id, session_id, route, provider, "
    "model, input_tokens, output_tokens, cost_usd, usage_estimated, duration_s, ttft_s, status, error_type,"
    " finish_reason"
)


def recent_spans(store: Store, project: str, since_ns: int, limit: int) -> list[dict[str, Any]]:
    """The newest GenAI spans since ``since_ns``, newest first, at most ``limit``. Unknown tokens
    and cost are ``None``; ``usage_estimated`` marks a cost priced from the SDK's estimated tokens.
    A span without a finish reason has the one its GenAI events carry (:func:`fill_finish_reasons`)."""
    rows = store.query(
        f"SELECT {_SPAN_COLUMNS} FROM llm_spans"
        " WHERE project = {project:String} AND ts >= fromUnixTimestamp64Nano({since_ns:Int64})"
        " ORDER BY ts DESC LIMIT {limit:UInt32}",
        {"project": project, "since_ns": since_ns, "limit": limit},
    )
    fill_finish_reasons(store, project, [row for row in rows if row["kind"] == LLM])
    return rows


def call_detections(condition: str) -> str:
    """The one definition of what a detection counts for: a ``FROM`` source (aliased
    ``detections``) with the ``detections`` rows that match ``condition`` (SQL over its columns,
    values bound by the caller), one per call and detector.

    Both spans of a call two instrumentations describe are analysed and carry the counted row's
    id (``ingest._detect``), so a detector that fires on both is one finding, not two; the row kept
    is the earliest (then the lowest label). Rows of no span (window findings such as drift) are
    each their own."""
    return (
        "(SELECT * FROM detections WHERE " + condition + " ORDER BY ts, label"
        " LIMIT 1 BY trace_id, span_id, detector, if(span_id = '', cityHash64(ts, label, evidence), 0))"
        " AS detections"
    )


def detections(
    store: Store, project: str, since_ns: int, detector: str | None, limit: int
) -> list[dict[str, Any]]:
    """Detections since ``since_ns``, newest first, optionally of one detector."""
    return store.query(
        "SELECT toString(ts) AS at, trace_id, span_id, service, tenant, route, model, detector, version,"
        " label, score, evidence FROM " + call_detections(
            "project = {project:String} AND ts >= fromUnixTimestamp64Nano({since_ns:Int64})"
            " AND ({detector:String} = '' OR detector = {detector:String})")
        + " ORDER BY detections.ts DESC LIMIT {limit:UInt32}",
        {"project": project, "since_ns": since_ns, "detector": detector or "", "limit": limit},
    )


def queues(store: Store, project: str, since_ns: int) -> list[dict[str, Any]]:
    """Each reported queue's latest depth and oldest-item age, with its sample count since
    ``since_ns``: one row per reporting instance (replicas report the same queue name; the alert
    rule judges each one alone, and so does this list)."""
    return store.query(
        "SELECT service, queue, instance, argMax(depth, ts) AS depth, argMax(oldest_age_s, ts) AS oldest_age_s,"
        " toString(max(ts)) AS last_seen, count() AS samples FROM queue_depth"
        " WHERE project = {project:String} AND ts >= fromUnixTimestamp64Nano({since_ns:Int64})"
        " GROUP BY service, queue, instance ORDER BY service, queue, instance",
        {"project": project, "since_ns": since_ns},
    )

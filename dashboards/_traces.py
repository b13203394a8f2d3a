"""Trace search and one trace in full: its spans as a waterfall, with each LLM call's latency
anatomy (queue wait, prefill, decode), prompt, output, detections, judge scores and feedback."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from infersight.collector.errors import BadRequest, StoreError
from infersight.collector.store import (
    LLM,
    TRACE_SORTS,
    Store,
    TraceSearch,
    call_detections,
    check_choice,
    check_text,
    fill_finish_reasons,
    find_traces,
    kind_of,
    operation_of,
    shown,
    span_finish_reason,
    spend_of,
    spend_sql,
    trace_feedback,
)
from infersight.detectors import parse_messages

from ._filters import DIMENSIONS, FILTER_MAX_CHARS, NS, View, check_value, finite
from ._queries import window

STATUSES = ("ok", "error")
TRACE_ID = re.compile(r"^[0-9a-f]{16,64}$")
SEARCH_LIMIT = 50
SEARCH_MAX = 500
_TRACE_MAX_SPANS = 2000
_CONTEXT_NS = 86400 * NS  # how far around ``at`` to look for a trace's spans
# The last ``at`` (Unix seconds) whose window still fits ClickHouse's Int64 nanoseconds (2262).
AT_MAX_S = (2**63 - 1 - _CONTEXT_NS) // NS
_CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages")
_SPEND = ", ".join(f"{sql} AS {name}" for name, sql in spend_sql(f"kind = '{LLM}'").items())


# Query parameter -> the llm_spans column it requires of a span. The names are the page's and the
# API's (other surfaces link to them: the weekly report's worst examples, the alerts).
SPAN_PARAMS = {
    "service": "service", "route": "route", "tenant": "tenant", "model": "model", "user": "user_id",
    "session": "session_id", "error_type": "error_type", "status": "status",
}
TEXT_PARAMS = ("label", "q", "tag", "rubric")
SCORE_PARAMS = ("score_min", "score_max")
CRITERIA = (*SPAN_PARAMS, *TEXT_PARAMS, *SCORE_PARAMS)
SORT_LABELS = {
    "-time": "newest first", "time": "oldest first", "duration": "slowest first", "cost": "most expensive first",
    "tokens": "most tokens first", "errors": "most errors first",
}


def read_criteria(query: Mapping[str, str | None]) -> dict[str, Any]:
    """The search criteria among ``query`` (:data:`CRITERIA`), checked: text as given, scores as
    floats, ``None`` where absent; :class:`BadRequest` naming the first unusable one."""
    out: dict[str, Any] = {}
    for name in CRITERIA:
        value = check_value(name, query.get(name))
        if name == "status":
            value = check_choice("status", value, STATUSES, "") or None
        out[name] = _number(name, value) if name in SCORE_PARAMS else value
    return out


def _number(name: str, value: str | None) -> float | None:
    try:
        number = None if value is None else float(value)
    except ValueError:
        number = math.nan
    if number is not None and not math.isfinite(number):
        raise BadRequest(f"The '{name}' parameter must be a finite number; got {shown(value)}.")
    return number


def search(
    store: Store, project: str, view: View, criteria: Mapping[str, Any], *, sort: str | None = None,
    cursor: str | None = None, limit: int = SEARCH_LIMIT,
) -> dict[str, Any]:
    """One page of the traces over ``view`` with a GenAI span meeting every criterion
    (:func:`read_criteria`; the view's service/route/tenant/model filters too), in ``sort`` order.

    Returns the window, ``traces`` (``store.find_traces``: per trace its start, duration,
    services, routes, tenants, users, models, error types, span/LLM-call/error counts, tokens and
    spend, ``None`` where unknown, and detection labels), ``total`` and ``next_cursor``.
    """
    sort = check_choice("sort", sort, TRACE_SORTS, "-time")
    cursor = check_text("cursor", cursor, max_chars=1024)
    given = {**{dim: view.filters.get(dim) for dim in DIMENSIONS}, **{k: v for k, v in criteria.items() if v}}
    columns = {column: given[param] for param, column in SPAN_PARAMS.items() if given.get(param)}
    query = TraceSearch(
        view.start_ns, view.end_ns, columns, label=criteria.get("label"), text=criteria.get("q"),
        tag=criteria.get("tag"), score_min=criteria.get("score_min"), score_max=criteria.get("score_max"),
        rubric=criteria.get("rubric"),
    )
    found = find_traces(store, project, query, sort=sort, cursor=cursor, limit=limit)
    read = replace(view, start_ns=found["start_ns"], end_ns=found["end_ns"])
    return {**window(read), "sort": sort, "total": found["total"], "next_cursor": found["next_cursor"],
            "traces": found["traces"]}


def check_trace_id(trace_id: str) -> str:
    """A trace id as stored (lowercase hex); :class:`BadRequest` otherwise."""
    trace_id = trace_id.strip().lower()
    if not TRACE_ID.match(trace_id):
        raise BadRequest(f"A trace id is 16 to 64 hex digits; got {trace_id[:FILTER_MAX_CHARS]!r}.")
    return trace_id


def trace(store: Store, project: str, trace_id: str, *, at_s: int | None = None) -> dict[str, Any] | None:
    """Every span of one trace of ``project`` (``None`` if it has none), ready for the waterfall.

    ``at_s`` (a Unix time near the trace) lets the store skip everything a day away from it.
    Each span has ``offset_s``/``duration_s`` from the trace start and ``segments``; an LLM
    span's segments are queue wait, prefill and decode when it streamed.
    """
    trace_id = check_trace_id(trace_id)
    params: dict[str, Any] = {"project": project, "trace_id": trace_id, "limit": _TRACE_MAX_SPANS}
    near = ""
    if at_s is not None:
        params["from_ns"], params["to_ns"] = at_s * NS - _CONTEXT_NS, at_s * NS + _CONTEXT_NS
        near = (" AND Timestamp >= fromUnixTimestamp64Nano({from_ns:Int64})"
                " AND Timestamp < fromUnixTimestamp64Nano({to_ns:Int64})")
    rows = store.query(
        "SELECT toUnixTimestamp64Nano(Timestamp) AS start_ns, SpanId AS span_id, ParentSpanId AS parent_span_id,"
        " SpanName AS name, SpanKind AS kind, ServiceName AS service,"
        " ResourceAttributes['service.version'] AS service_version, Duration AS duration_ns,"
        " StatusCode AS status_code, StatusMessage AS status_message, SpanAttributes AS attributes,"
        " Events.Name AS event_names"
        " FROM otel_traces WHERE TraceId = {trace_id:String}"
        f" AND ResourceAttributes['infersight.project'] = {{project:String}}{near}"
        " ORDER BY Timestamp LIMIT {limit:UInt32}",
        params,
    )
    if not rows:
        return None
    detections = store.query(
        "SELECT span_id, detector, version, label, score, evidence FROM "
        + call_detections("project = {project:String} AND trace_id = {trace_id:String}")
        + " ORDER BY detector, label",
        params,
    )
    judged = _judge_scores(store, params)
    feedback = trace_feedback(store, project, trace_id)
    # The trace's spend from its counted rows, as every other surface sums it: a call two spans
    # describe is counted once, estimates apart, unknown never 0.
    (spend,) = store.query(
        f"SELECT {_SPEND} FROM llm_spans WHERE project = {{project:String}} AND trace_id = {{trace_id:String}}"
        + near.replace(" Timestamp ", " ts "),
        params,
    )
    per_span_detections: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in detections:
        per_span_detections[row["span_id"]].append(row)
    per_span_scores: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in judged or []:
        per_span_scores[row["span_id"]].append(row)

    spans = [_span(row) for row in rows]
    span_ids = {s["span_id"] for s in spans}
    per_span_feedback: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in feedback:
        if row["span_id"] in span_ids:
            per_span_feedback[row["span_id"]].append(row)
    fill_finish_reasons(store, project, [s for s in spans if s["llm"]], trace_id)
    begin = min(s["start_ns"] - int((s["queue_before_s"] or 0) * NS) for s in spans)
    finish = max(s["start_ns"] + s["duration_ns"] for s in spans)
    for span in spans:
        span["offset_s"] = (span["start_ns"] - begin) / NS
        span["detections"] = per_span_detections.get(span["span_id"], [])
        span["judge_scores"] = per_span_scores.get(span["span_id"], [])
        span["feedback"] = per_span_feedback.get(span["span_id"], [])
        # The counted span of a call this one repeats (in another trace when the pair spans two).
        counted = span["attributes"].get("infersight.same_call_as")
        span["same_call"] = counted and {"trace_id": span["attributes"].get("infersight.same_call_trace") or trace_id,
                                         "span_id": counted}
    ordered = _tree_order(spans)
    return {
        "trace_id": trace_id,
        "start_ns": begin,
        "duration_s": (finish - begin) / NS,
        "spans": ordered,
        "judge_available": judged is not None,
        # On the trace, or on a span the trace does not (yet) hold: shown, never dropped.
        "feedback": [row for row in feedback if row["span_id"] not in span_ids],
        **spend_of(spend),
        "errors": sum(1 for s in spans if s["status"] == "error"),
    }


def _judge_scores(store: Store, params: dict[str, Any]) -> list[dict[str, Any]] | None:
    try:
        return store.query(
            "SELECT span_id, judge_model, rubric_id, rubric_version, score, reason FROM judge_scores"
            " WHERE project = {project:String} AND trace_id = {trace_id:String} ORDER BY rubric_id, judged_at",
            params,
        )
    except StoreError as exc:
        if "UNKNOWN_TABLE" in str(exc) or "does not exist" in str(exc):
            return None
        raise


def _float(attrs: dict[str, str], key: str) -> float | None:
    try:
        return finite(attrs[key]) if attrs.get(key) else None
    except ValueError:
        return None


def _span(row: dict[str, Any]) -> dict[str, Any]:
    attrs: dict[str, str] = row["attributes"] or {}
    start, duration = int(row["start_ns"]), int(row["duration_ns"])
    duration_s = duration / NS
    operation = attrs.get("gen_ai.operation.name", "")
    ttft = _float(attrs, "gen_ai.response.time_to_first_chunk")
    queue_wait = _float(attrs, "infersight.queue.wait_s")
    prefill = _float(attrs, "infersight.prefill_s")
    inside = attrs.get("infersight.queue.source") == "response"
    segments: list[dict[str, Any]] = []
    queue_before = None
    if queue_wait:
        if inside:
            segments.append({"kind": "queue", "from_s": 0.0, "to_s": min(queue_wait, duration_s)})
        else:
            queue_before = queue_wait
            segments.append({"kind": "queue", "from_s": -queue_wait, "to_s": 0.0})
    if ttft is not None and operation not in ("retrieval", "rerank"):
        first = min(ttft, duration_s)
        head = min(queue_wait or 0.0, first) if inside else 0.0
        segments.append({"kind": "prefill", "from_s": head, "to_s": first})
        segments.append({"kind": "decode", "from_s": first, "to_s": duration_s})
    else:
        segments.append({"kind": operation or "span", "from_s": 0.0, "to_s": duration_s})
    model = attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model", "")
    estimated = attrs.get("infersight.usage.estimated") in ("true", "1")
    input_tokens = _int(attrs.get("gen_ai.usage.input_tokens"))
    # Half an estimate (older SDKs priced its output alone) has an unknown cost, as in llm_spans.
    cost = None if estimated and input_tokens is None else _float(attrs, "infersight.cost.usd")
    return {
        "span_id": row["span_id"],
        "parent_span_id": row["parent_span_id"],
        "name": row["name"],
        "kind": row["kind"],
        "service": row["service"],
        "service_version": row["service_version"],
        "start_ns": start,
        "duration_ns": duration,
        "duration_s": duration_s,
        "status": "error" if row["status_code"] == "Error" else "ok",
        "status_message": row["status_message"],
        "operation": operation,
        "model": model,
        "tenant": attrs.get("infersight.tenant.id", ""),
        "route": attrs.get("infersight.route", ""),
        "llm": kind_of(operation_of(attrs)) == LLM,
        "input_tokens": input_tokens,
        "output_tokens": _int(attrs.get("gen_ai.usage.output_tokens")),
        "cost_usd": cost,
        "usage_estimated": estimated,
        "ttft_s": ttft,
        "finish_reason": span_finish_reason(attrs),
        "queue_wait_s": queue_wait,
        "queue_before_s": queue_before,
        "prefill_s": prefill if prefill is not None else _prefill(ttft, queue_wait, inside),
        "rerank_candidates": _int(attrs.get("infersight.rerank.candidates")),
        "segments": segments,
        "input_messages": messages(attrs.get("gen_ai.input.messages")),
        "output_messages": messages(attrs.get("gen_ai.output.messages")),
        "attributes": {k: v for k, v in sorted(attrs.items()) if k not in _CONTENT_KEYS},
        "events": list(row.get("event_names") or []),
    }


def _prefill(ttft: float | None, queue_wait: float | None, inside: bool) -> float | None:
    """Prefill from TTFT when the SDK did not record it: a provider-reported queue wait
    happened inside the call, so inside its TTFT."""
    if ttft is None:
        return None
    return max(ttft - (queue_wait or 0.0), 0.0) if inside else ttft



def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def messages(raw: str | None) -> list[dict[str, str]] | None:
    """Stored messages as (role, text) pairs for display: text parts as they are, any other part
    as its JSON, a string that is not messages JSON whole with role ``?``; never interpreted."""
    if not raw:
        return None
    return [{"role": m.role or "?", "text": "\n".join(p.text for p in m.parts)} for m in parse_messages(raw)]


def _tree_order(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Spans depth-first from the roots, children by start time, each with its ``depth``."""
    ids = {s["span_id"] for s in spans}
    children: dict[str, list[dict[str, Any]]] = defaultdict(list)
    roots = []
    for span in sorted(spans, key=lambda s: (s["start_ns"], s["span_id"])):
        parent = span["parent_span_id"]
        if parent and parent in ids and parent != span["span_id"]:
            children[parent].append(span)
        else:
            roots.append(span)
    ordered: list[dict[str, Any]] = []
    seen: set[str] = set()
    stack = [(root, 0) for root in reversed(roots)]
    while stack:
        span, depth = stack.pop()
        if span["span_id"] in seen:
            continue
        seen.add(span["span_id"])
        span["depth"] = depth
        ordered.append(span)
        stack.extend((child, depth + 1) for child in reversed(children[span["span_id"]]))
    ordered.extend(s | {"depth": 0} for s in spans if s["span_id"] not in seen)  # parent cycles
    return ordered

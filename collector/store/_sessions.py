"""Sessions (conversations) and their turns: the traces that carry a ``session_id``, in time order.

A session's turns are the traces with a GenAI span of that session in the window (and the
filters on that same span), exactly the traces ``find_traces`` lists for ``session=``; each
turn's figures are its whole trace's, read the way the trace search reads them (every span of
the trace within a day of the window, money with ``spend_sql``, LLM calls by ``kind``). A
session's figures are the sums of its turns', so a session's cost on the Sessions page is the sum
of its traces' cost on the Traces page, digit for digit (the sums are exact decimals).

Detections, judge scores and feedback are read per turn and added up: judge scores per (rubric,
version, judge model) and feedback per (name, kind), since neither compares across those.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from infersight.detectors import parse_messages

from ..errors import BadRequest
from ._base import Store
from ._feedback import distinct_feedback
from ._histogram import histogram_sql, merge_histograms, percentiles
from ._kinds import LLM
from ._money import spend_of, spend_sql
from ._queries import call_detections
from ._trace_search import CONTEXT_NS, SEARCH_MAX, _make_cursor, _read_cursor

NS = 1_000_000_000
_INT64_MAX = 2**63 - 1
# llm_spans columns the Sessions page filters on (one span must match them all, as for traces).
SESSION_COLUMNS = ("service", "route", "tenant", "model", "user_id")
TURNS_MAX = 500
_CALLS = f"kind = '{LLM}'"
_SPEND = spend_sql(_CALLS)
_MONEY = ("cost_usd", "estimated_cost_usd")
_COUNTS = ("priced_calls", "estimated_calls", "unpriced_calls", "input_tokens", "output_tokens", "input_calls",
           "output_calls", "unknown_usage_calls", "spans", "llm_calls", "llm_errors", "errors")
_TURN_AGGREGATES = {
    "start_ns": "toUnixTimestamp64Nano(min(ts))",
    "end_ns": "max(toUnixTimestamp64Nano(ts) + toInt64(duration_s * 1e9))",
    "spans": "count()",
    "llm_calls": f"countIf({_CALLS})",
    "llm_errors": f"countIf({_CALLS} AND status = 'error')",
    # Failed spans of any kind, as the trace search counts a trace's errors.
    "errors": "countIf(status = 'error')",
    "error_types": "groupUniqArrayIf(error_type, status = 'error')",
    "tenants": "groupUniqArray(tenant)",
    "users": "groupUniqArray(user_id)",
    "models": f"groupUniqArrayIf(model, {_CALLS})",
    "latency_s": histogram_sql("duration_s", _CALLS),
    **_SPEND,
}
_IN_WINDOW = "ts >= fromUnixTimestamp64Nano({start_ns:Int64}) AND ts < fromUnixTimestamp64Nano({end_ns:Int64})"
_IN_CONTEXT = "ts >= fromUnixTimestamp64Nano({from_ns:Int64}) AND ts < fromUnixTimestamp64Nano({to_ns:Int64})"


def _params(project: str, start_ns: int, end_ns: int) -> dict[str, Any]:
    if start_ns >= end_ns:
        raise BadRequest("The 'start' parameter must be before 'end'.")
    return {"project": project, "start_ns": start_ns, "end_ns": end_ns, "from_ns": start_ns - CONTEXT_NS,
            "to_ns": min(end_ns + CONTEXT_NS, _INT64_MAX)}


def _conditions(columns: Mapping[str, str], params: dict[str, Any], allowed: tuple[str, ...]) -> str:
    unknown = sorted(set(columns) - set(allowed))
    if unknown:
        raise ValueError(f"The 'columns' must be among {allowed}; got {unknown}.")
    out = ""
    for column, value in sorted(columns.items()):
        params[f"c_{column}"] = value
        out += f" AND {column} = {{c_{column}:String}}"
    return out


def _fingerprint(kind: str, columns: Mapping[str, str]) -> str:
    return hashlib.sha256(json.dumps([kind, sorted(columns.items())]).encode()).hexdigest()[:16]


def find_sessions(
    store: Store, project: str, start_ns: int, end_ns: int, *, columns: Mapping[str, str] | None = None,
    cursor: str | None = None, limit: int = 50,
) -> dict[str, Any]:
    """One page of the sessions of ``project`` with a GenAI span in ``[start_ns, end_ns)`` that has
    every ``columns`` value (``llm_spans`` column -> value, from :data:`SESSION_COLUMNS`), the
    most recently active first.

    Returns ``sessions`` (each :func:`session_totals` of its turns, with ``session_id``),
    ``total`` (matching sessions in the window), ``next_cursor`` (``None`` on the last page) and the
    window read (a cursor's own). :class:`BadRequest` for a cursor of another search. Blocks on
    six queries.
    """
    columns = dict(columns or {})
    if not 1 <= limit <= SEARCH_MAX:
        raise BadRequest(f"The 'limit' parameter must be between 1 and {SEARCH_MAX}; got {limit}.")
    fingerprint = _fingerprint("sessions", columns)
    after = None
    if cursor:
        after, (start_ns, end_ns) = _read_cursor(cursor, fingerprint, ("start_ns",))
    params = _params(project, start_ns, end_ns)
    matching = ("FROM llm_spans WHERE project = {project:String} AND " + _IN_WINDOW + " AND session_id != ''"
                + _conditions(columns, params, SESSION_COLUMNS))
    (count,) = store.query(f"SELECT uniqExact(session_id) AS total {matching}", params)
    having = ""
    if after is not None:
        params["k_last"], params["k_session"] = int(after[0]), after[1]
        having = " HAVING (last_ns, session_id) < ({k_last:Int64}, {k_session:String})"
    params["limit"] = limit + 1
    page = store.query(
        f"SELECT session_id, toUnixTimestamp64Nano(max(ts)) AS last_ns {matching} GROUP BY session_id{having}"
        " ORDER BY last_ns DESC, session_id DESC LIMIT {limit:UInt32}",
        params,
    )
    more = len(page) > limit
    page = page[:limit]
    ids = [row["session_id"] for row in page]
    traces_of: dict[str, list[str]] = defaultdict(list)
    if ids:
        pairs = f"SELECT DISTINCT session_id, trace_id {matching} AND session_id IN {{ids:Array(String)}}"
        for row in store.query(pairs, {**params, "ids": ids}):
            traces_of[row["session_id"]].append(row["trace_id"])
    turns = read_turns(store, project, sorted({t for ts in traces_of.values() for t in ts}), start_ns, end_ns)
    sessions = [{"session_id": sid, **session_totals([turns[t] for t in traces_of[sid] if t in turns])}
                for sid in ids]
    next_cursor = None
    if more:
        next_cursor = _make_cursor(fingerprint, [int(page[-1]["last_ns"]), page[-1]["session_id"]], (start_ns, end_ns))
    return {"start_ns": start_ns, "end_ns": end_ns, "total": int(count["total"]), "next_cursor": next_cursor,
            "sessions": sessions}


def session_turns(
    store: Store, project: str, session_id: str, start_ns: int, end_ns: int, *, limit: int = TURNS_MAX,
) -> dict[str, Any] | None:
    """One session of ``project`` over ``[start_ns, end_ns)``, turn by turn in time order (``None``
    when it has no turn there): its totals (:func:`session_totals`) and ``conversation``, the turns (:func:`read_turns`
    with each turn's ``input_text`` and ``output_text``: the newest user message of its first LLM
    call and the answer of its last), at most ``limit`` turns (``truncated`` says when there were
    more). Blocks on six queries."""
    params = {**_params(project, start_ns, end_ns), "session": session_id, "limit": limit + 1}
    rows = store.query(
        "SELECT trace_id, min(ts) AS first FROM llm_spans WHERE project = {project:String} AND " + _IN_WINDOW
        + " AND session_id = {session:String} GROUP BY trace_id ORDER BY first, trace_id LIMIT {limit:UInt32}",
        params,
    )
    if not rows:
        return None
    ids = [row["trace_id"] for row in rows[:limit]]
    turns = read_turns(store, project, ids, start_ns, end_ns, with_text=True)
    ordered = sorted((turns[t] for t in ids if t in turns), key=lambda t: (t["start_ns"], t["trace_id"]))
    return {"session_id": session_id, **session_totals(ordered), "truncated": len(rows) > limit,
            "conversation": ordered}


def read_turns(
    store: Store, project: str, trace_ids: list[str], start_ns: int, end_ns: int, *, with_text: bool = False,
) -> dict[str, dict[str, Any]]:
    """Trace id -> the turn's figures: ``start_ns``, ``duration_s``, span/LLM-call/error counts,
    ``error_types``, ``tenants``, ``users``, ``models``, the spend of ``spend_of`` (plus its exact
    parts under ``_sums``), ``latency_s`` (p50/p95/p99 of its LLM calls), ``detections`` (hits)
    and ``labels``, ``judge_scores`` and ``feedback`` (see :func:`session_totals`). Spans are read
    within a day of the window, as the trace search reads them."""
    if not trace_ids:
        return {}
    params = {**_params(project, start_ns, end_ns), "ids": trace_ids}
    aggregates = ", ".join(f"{sql} AS {name}" for name, sql in _TURN_AGGREGATES.items())
    rows = store.query(
        f"SELECT trace_id, {aggregates} FROM llm_spans WHERE project = {{project:String}} AND {_IN_CONTEXT}"
        " AND trace_id IN {ids:Array(String)} GROUP BY trace_id",
        params,
    )
    labels = _detections(store, params)
    judged = _judge_scores(store, params)
    feedback = _feedback(store, params)
    texts = _texts(store, params) if with_text else {}
    turns = {}
    for row in rows:
        tid = row["trace_id"]
        start, end = int(row["start_ns"]), int(row["end_ns"])
        sums = {name: Decimal(str(row[name])) for name in _MONEY} | {name: int(row[name]) for name in _COUNTS}
        turns[tid] = {
            "trace_id": tid, "start_ns": start, "duration_s": max(end - start, 0) / NS,
            **{name: sorted(v for v in row[name] if v) for name in ("error_types", "tenants", "users", "models")},
            "spans": sums["spans"], "llm_calls": sums["llm_calls"], "llm_errors": sums["llm_errors"],
            "errors": sums["errors"], **spend_of(sums), "latency_s": _levels(row["latency_s"]),
            "_sums": sums, "_latency": dict(row["latency_s"]),
            "detections": len(labels.get(tid, [])), "labels": sorted(set(labels.get(tid, []))),
            "judge_scores": _judge_means(judged.get(tid, [])), "_judged": judged.get(tid, []),
            "feedback": _feedback_means(feedback.get(tid, [])), "_feedback": feedback.get(tid, []),
            **texts.get(tid, {"input_text": None, "output_text": None}),
        }
    return turns


def session_totals(turns: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The figures of a set of turns (:func:`read_turns`), added up: ``turns``, ``start_ns`` and
    ``last_ns`` (first and last turn's start), span/LLM-call/error counts, the spend of
    ``spend_of`` (exact sums), ``latency_s`` (p50/p95/p99 of all their LLM calls, from the one
    histogram), ``detections`` and ``labels``, ``judge_scores`` (mean per rubric, version and judge
    model, with ``count``) and ``feedback`` (per name and kind: ``count``, ``up``/``down`` for
    thumbs, ``mean`` for scores); ``tenants``, ``users``, ``models``, ``error_types``."""
    turns = list(turns)
    sums: dict[str, Any] = {name: Decimal(0) for name in _MONEY} | {name: 0 for name in _COUNTS}
    for turn in turns:
        for name in sums:
            sums[name] += turn["_sums"][name]
    starts = [t["start_ns"] for t in turns]
    return {
        "turns": len(turns), "start_ns": min(starts, default=None), "last_ns": max(starts, default=None),
        "spans": sums["spans"], "llm_calls": sums["llm_calls"], "llm_errors": sums["llm_errors"],
        "errors": sums["errors"], **spend_of(sums),
        "latency_s": _levels(merge_histograms(t["_latency"] for t in turns)),
        "detections": sum(t["detections"] for t in turns),
        "labels": sorted({label for t in turns for label in t["labels"]}),
        "judge_scores": _judge_means([row for t in turns for row in t["_judged"]]),
        "feedback": _feedback_means([row for t in turns for row in t["_feedback"]]),
        **{name: sorted({v for t in turns for v in t[name]}) for name in ("tenants", "users", "models", "error_types")},
    }


def session_json(row: Mapping[str, Any]) -> dict[str, Any]:
    """A turn or session without its private parts (the exact sums kept for adding up)."""
    out = {k: v for k, v in row.items() if not k.startswith("_")}
    if "conversation" in out:
        out["conversation"] = [session_json(turn) for turn in out["conversation"]]
    return out


def _levels(histogram: Mapping[Any, Any]) -> dict[str, float | None]:
    levels = percentiles(histogram)
    return {name: levels[name] for name in ("p50", "p95", "p99")}


def _detections(store: Store, params: dict[str, Any]) -> dict[str, list[str]]:
    rows = store.query(
        "SELECT trace_id, label FROM " + call_detections(
            "project = {project:String} AND " + _IN_CONTEXT + " AND trace_id IN {ids:Array(String)}"),
        params,
    )
    out: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        out[row["trace_id"]].append(row["label"])
    return out


def _judge_scores(store: Store, params: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    rows = store.query(
        "SELECT trace_id, rubric_id, rubric_version, judge_model, count() AS n, sum(score) AS total FROM judge_scores"
        " WHERE project = {project:String} AND " + _IN_CONTEXT + " AND trace_id IN {ids:Array(String)}"
        " GROUP BY trace_id, rubric_id, rubric_version, judge_model",
        params,
    )
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        out[row["trace_id"]].append(row)
    return out


def _judge_means(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, int, str], list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        group = groups[(row["rubric_id"], int(row["rubric_version"]), row["judge_model"])]
        group[0] += int(row["n"])
        group[1] += int(row["total"])
    return [{"rubric_id": r, "rubric_version": v, "judge_model": j, "count": n, "mean": total / n}
            for (r, v, j), (n, total) in sorted(groups.items())]


def _feedback(store: Store, params: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Feedback rows per trace and (name, kind); feedback comes after its trace, so no upper time bound."""
    rows = store.query(
        "SELECT trace_id, name, kind, count() AS n, countIf(value >= 0.5) AS up, sum(value) AS total FROM "
        + distinct_feedback("project = {project:String} AND ts >= fromUnixTimestamp64Nano({from_ns:Int64})"
                            " AND trace_id IN {ids:Array(String)}")
        + " GROUP BY trace_id, name, kind",
        params,
    )
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        out[row["trace_id"]].append(row)
    return out


def feedback_summary(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Feedback rows (``name``, ``kind``, ``n``, ``up``, ``total``) added up per (name, kind):
    ``count``; for thumbs ``up`` and ``down``; for scores ``mean``. Never mixed across kinds."""
    return _feedback_means(rows)


def _feedback_means(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0, 0.0])
    for row in rows:
        group = groups[(row["name"], row["kind"])]
        group[0] += int(row["n"])
        group[1] += int(row["up"])
        group[2] += float(row["total"])
    out = []
    for (name, kind), (n, up, total) in sorted(groups.items()):
        entry: dict[str, Any] = {"name": name, "kind": kind, "count": int(n)}
        if kind == "thumbs":
            entry.update(up=int(up), down=int(n - up))
        else:
            entry["mean"] = total / n
        out.append(entry)
    return out


def _texts(store: Store, params: dict[str, Any]) -> dict[str, dict[str, str | None]]:
    """Per trace, the newest user message its first LLM call was sent and the answer of its last."""
    calls = store.query(
        "SELECT trace_id, span_id FROM llm_spans WHERE project = {project:String} AND " + _IN_CONTEXT
        + f" AND trace_id IN {{ids:Array(String)}} AND {_CALLS} ORDER BY trace_id, ts, span_id",
        params,
    )
    first: dict[str, str] = {}
    last: dict[str, str] = {}
    for row in calls:
        first.setdefault(row["trace_id"], row["span_id"])
        last[row["trace_id"]] = row["span_id"]
    if not calls:
        return {}
    rows = store.query(
        "SELECT TraceId AS trace_id, SpanId AS span_id, SpanAttributes['gen_ai.input.messages'] AS input,"
        " SpanAttributes['gen_ai.output.messages'] AS output FROM otel_traces"
        " WHERE ResourceAttributes['infersight.project'] = {project:String}"
        " AND Timestamp >= fromUnixTimestamp64Nano({from_ns:Int64})"
        " AND Timestamp < fromUnixTimestamp64Nano({to_ns:Int64})"
        " AND TraceId IN {ids:Array(String)} AND SpanId IN {spans:Array(String)}",
        {**params, "spans": sorted({*first.values(), *last.values()})},
    )
    by_span = {(row["trace_id"], row["span_id"]): row for row in rows}
    out = {}
    for tid in first:
        opening, closing = by_span.get((tid, first[tid]), {}), by_span.get((tid, last[tid]), {})
        out[tid] = {"input_text": _newest(opening.get("input"), "user"), "output_text": _newest(closing.get("output"))}
    return out


def _newest(raw: str | None, role: str | None = None) -> str | None:
    """The text of the last message (of ``role`` when one has it, else of any role) in stored messages."""
    messages = parse_messages(raw) if raw else ()
    found = [m for m in messages if m.role == role] or list(messages)
    return "\n".join(p.text for p in found[-1].parts) if found else None

"""Finish reasons (and answers) that only GenAI events carry, joined to their span.

openai-v2 streams send a call's finish reason, and its answer when the app captures content, as
OTLP log events (``gen_ai.choice``), in other requests than the span, before or after it. Both
halves are stored as they arrive (``genai_events``, ``otel_traces``), and the one stored second
completes the call:

1. **events first** (the usual order: an SDK exports logs every second, spans every five): the
   spool writer joins the stored events to the spans it is about to insert (:func:`join_events`),
   so the span is stored with the events' finish reason (and answer, when it has none), and the
   view's ``llm_spans`` row and the inline detectors read them as any span's own;
2. **span first**: ``/v1/logs``, after storing the events, completes the stored span
   (:func:`complete_calls`): its ``llm_spans`` row gets the finish reason (a mutation of that row
   alone, only while it has none) and the detections the events add are stored. The writer runs
   the same after each insert, for the events stored between its join and its insert; each side
   looks after its own insert, so the second of them sees both.

Only the spans of projects that stored events in the last day are looked at (a cached read,
:class:`_ProjectsWithEvents`), and the writer looks again after its insert at the spans of a
project whose first events were stored meanwhile (:class:`Pending`). Not covered: a project's
first events stored by another replica within :data:`PROJECTS_TTL_S` of its span.

A mutation fails on a cluster's Distributed table: there the row keeps an empty reason, and the
readers' own join (:func:`fill_finish_reasons`: ``/api/v1/spans``, the trace page) still shows it.
:func:`span_finish_reason` is the one reading of a span's finish reason from its attributes; the
view's ``finish_reason`` column is the same rule in SQL.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Set
from dataclasses import dataclass, field
from typing import Any

import orjson

from infersight.detectors import row_time_ns, row_time_text
from infersight.sdk import semconv

from ..errors import StoreError
from ._base import Store, encode_rows
from ._id_lists import id_array
from ._kinds import LLM, kind_of

logger = logging.getLogger("infersight.collector")

Detect = Callable[[bytes], tuple[bytes, Mapping[tuple[str, str], int]]]
"""The inline detectors: ``otel_traces`` JSONEachRow rows in, ``detections`` rows out (and the
outputs not analysed)."""

# The first choice's reason and answer, as llm_spans takes the first of
# gen_ai.response.finish_reasons; a resent logs request is stored once, but take one per call
# whatever is there.
_ORDER = "(JSONExtractUInt(body, 'index'), ts)"
_CALL_EVENTS = (
    "SELECT project, trace_id, span_id,"
    f" argMinIf(JSONExtractString(finish_reasons, 1), {_ORDER}, finish_reasons NOT IN ('', '[]')) AS finish_reason,"
    f" argMinIf(JSONExtractString(body, 'message', 'content'), {_ORDER}, event_name = 'gen_ai.choice'"
    "  AND JSONExtractString(body, 'message', 'content') != '') AS content,"
    " toUnixTimestamp64Nano(min(ts)) AS first_ns, toUnixTimestamp64Nano(max(ts)) AS last_ns"
    " FROM genai_events WHERE ({{project:String}} = '' OR project = {{project:String}})"
    " AND trace_id IN (SELECT arrayJoin({traces}))"
    " GROUP BY project, trace_id, span_id HAVING finish_reason != '' OR content != ''"
)
# A call's events are emitted while its span is open: the span started before the first event
# and (a call of a day at most) not more than a day before.
_SPAN_BEFORE_NS = 86_400 * 10**9
_SPAN_AFTER_NS = 3_600 * 10**9
_SPANS = (
    "SELECT toUnixTimestamp64Nano(Timestamp) AS start_ns, TraceId, SpanId, ServiceName,"
    " SpanAttributes, ResourceAttributes FROM otel_traces"
    " WHERE Timestamp >= fromUnixTimestamp64Nano({{from_ns:Int64}})"
    " AND Timestamp < fromUnixTimestamp64Nano({{to_ns:Int64}})"
    " AND TraceId IN (SELECT arrayJoin({traces})) AND SpanId IN (SELECT arrayJoin({spans}))"
)
_UPDATE = (
    "ALTER TABLE llm_spans UPDATE"
    " finish_reason = transform(span_id, {spans:Array(String)}, {reasons:Array(String)}, '')"
    " WHERE project = {project:String} AND ts >= fromUnixTimestamp64Nano({from_ns:Int64})"
    " AND ts < fromUnixTimestamp64Nano({to_ns:Int64}) AND trace_id IN {traces:Array(String)}"
    " AND span_id IN {spans:Array(String)} AND finish_reason = ''"
)
# transform() needs the spans and their reasons as arrays: this many calls an update keep each
# array parameter under a server's 128 KiB (a trace id is 35 bytes in one).
_UPDATE_CALLS = 3000
# Cheap filters on a JSONEachRow line, as encode_rows writes the keys: an LLM span may lack what
# events carry only if it names an operation and lacks a finish reason or an answer.
_OPERATION_MARK = f'"{semconv.OPERATION}"'.encode()
_REASONS_MARK = f'"{semconv.FINISH_REASONS}"'.encode()
_OUTPUT_MARK = f'"{semconv.OUTPUT_MESSAGES}"'.encode()
_TRACE_ID = re.compile(rb'"TraceId":"([0-9a-f]{32})"')


def span_finish_reasons(attributes: Mapping[str, str]) -> tuple[str, ...]:
    """Every choice's finish reason a span's attributes give, in choice order: the strings of
    ``gen_ai.response.finish_reasons`` (a JSON list, as the conventions and the ingest step write
    it), else OpenInference's ``llm.finish_reason``; empty when neither does."""
    try:
        reasons = orjson.loads(attributes.get(semconv.FINISH_REASONS) or "[]")
    except orjson.JSONDecodeError:
        reasons = None
    listed = tuple(r for r in reasons if isinstance(r, str) and r) if isinstance(reasons, list) else ()
    if listed:
        return listed
    single = str(attributes.get(semconv.OPENINFERENCE_FINISH_REASON) or "")
    return (single,) if single else ()


def span_finish_reason(attributes: Mapping[str, str]) -> str:
    """The first finish reason of :func:`span_finish_reasons`, ``""`` without one. Every reader of
    a span's attributes uses these two; the view's ``finish_reason`` column is the same rule in SQL
    (tests/collector/test_otlp_logs.py holds them together)."""
    reasons = span_finish_reasons(attributes)
    return reasons[0] if reasons else ""


def event_finish_reasons(store: Store, project: str, calls: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The finish reason the GenAI events of each (trace id, span id) in ``calls`` carry, in the
    canonical spelling; calls without one are absent."""
    wanted = set(calls)
    if not wanted or not project:
        return {}
    rows = _call_events(store, project, {trace for trace, _ in wanted})
    return {key: str(row["finish_reason"]) for row in rows
            if (key := (row["trace_id"], row["span_id"])) in wanted and row["finish_reason"]}


def fill_finish_reasons(
    store: Store, project: str, rows: Iterable[MutableMapping[str, Any]], trace_id: str | None = None
) -> None:
    """Give each of ``rows`` (with ``span_id``, ``finish_reason`` and, unless ``trace_id`` is
    given, ``trace_id``) whose ``finish_reason`` is empty the one its GenAI events carry."""
    missing = [row for row in rows if not row.get("finish_reason")]
    reasons = event_finish_reasons(store, project, (_key(row, trace_id) for row in missing))
    for row in missing:
        row["finish_reason"] = reasons.get(_key(row, trace_id), row.get("finish_reason") or "")


def _key(row: Mapping[str, Any], trace_id: str | None) -> tuple[str, str]:
    return (trace_id if trace_id is not None else str(row["trace_id"]), str(row["span_id"]))


def _call_events(store: Store, project: str, traces: set[str]) -> list[dict[str, Any]]:
    if not traces:
        return []
    in_traces, params = id_array("traces", sorted(traces))
    return store.query(_CALL_EVENTS.format(traces=in_traces), {**params, "project": project})


@dataclass(slots=True)
class Pending:
    """What events stored after :func:`join_events` could still complete among the rows it saw:
    the traces of LLM spans it left lacking, and the rows of projects not known then to send
    events (a project's first events can be stored after the join and checked before the insert)."""

    traces: set[str] = field(default_factory=set)
    rows: bytes = b""
    projects: frozenset[str] = frozenset()

    def after_insert(self, store: Store) -> set[str]:
        """The trace ids to pass to :func:`complete_calls` once the rows are inserted."""
        try:
            new = _with_events.of(store) - self.projects
            late = _lacking(self.rows.split(b"\n"), new) if new else {}
        except StoreError:  # the readers still join; complete_calls would meet the same store
            return self.traces
        return self.traces | {row["TraceId"] for row in late.values()}


def join_events(store: Store, rows: bytes) -> tuple[bytes, Pending]:
    """``otel_traces`` JSONEachRow ``rows`` about to be inserted, their LLM spans completed by the
    GenAI events already stored (step 1 of the module docstring), the other rows as they were;
    and what events could still complete after the insert (:meth:`Pending.after_insert` gives
    the traces to pass to :func:`complete_calls` then).

    Blocks for one query when an LLM span of a project that sends events lacks a finish reason
    or an answer, none otherwise (but one every :data:`PROJECTS_TTL_S`). Never raises: on a
    failure ``rows`` go in as they are, to be completed after the insert."""
    try:
        projects = frozenset(_with_events.of(store))
        if not projects:  # most deployments: no line to read (a split of 20,000 rows costs ~2 µs a row)
            return rows, Pending(rows=rows, projects=projects)
        lines = rows.split(b"\n")
        lacking = _lacking(lines, projects)
        events = _events_by_call(store, {row["TraceId"] for row in lacking.values()})
    except StoreError as exc:  # the insert that follows meets the same store; it retries
        logger.debug("GenAI events not joined before the insert: %s", exc)
        return rows, Pending(_traces(rows))
    pending = Pending(rows=rows, projects=projects)  # read only if a project's first events come meanwhile
    for i, row in lacking.items():
        event = events.get((_project(row), row["TraceId"], row["SpanId"]))
        completed = _completed(row["SpanAttributes"], event) if event is not None else None
        if completed is None:
            pending.traces.add(row["TraceId"])
        else:
            lines[i] = encode_rows([{**row, "SpanAttributes": completed[0]}]).rstrip(b"\n")
    return (b"\n".join(lines) if events else rows), pending


def _traces(rows: bytes) -> set[str]:
    return {trace.decode() for trace in _TRACE_ID.findall(rows)}


def _may_lack(line: bytes) -> bool:
    return _OPERATION_MARK in line and (_REASONS_MARK not in line or _OUTPUT_MARK not in line)


def _lacking(lines: list[bytes], projects: Set[str]) -> dict[int, dict[str, Any]]:
    """The rows among JSONEachRow ``lines`` of LLM spans of ``projects`` that lack a finish reason
    or an answer, by line number."""
    if not projects:
        return {}
    out = {}
    for i, line in enumerate(lines):
        if _may_lack(line):
            row = orjson.loads(line)
            if _project(row) in projects and kind_of(row["SpanAttributes"].get(semconv.OPERATION, "")) == LLM:
                out[i] = row
    return out


def complete_calls(store: Store, trace_ids: Iterable[str], detect: Detect | None = None) -> int:
    """Complete the stored LLM spans of ``trace_ids`` that lack the finish reason (or the answer)
    their stored GenAI events carry: step 2 of the module docstring. Returns how many.

    Blocks (one query when no event of those traces is stored, the usual case for the writer;
    a few and the detectors otherwise). Never raises: a failure is logged, and the readers' own
    join (:func:`fill_finish_reasons`) still shows the reason. Idempotent: both sides may run it.
    """
    try:
        events = _events_by_call(store, set(trace_ids))
        _with_events.add(store, {project for project, _, _ in events})
        joined = _stored_spans_completed(store, events) if events else []
        if joined:
            _record_reasons(store, joined)
            if detect is not None:
                _detect_added(store, joined, detect)
        return len(joined)
    except Exception:  # the spans and events are stored; only the join is lost
        logger.exception("joining GenAI events to their stored spans failed; their readers join them instead")
        return 0


class _ProjectsWithEvents:
    """The projects that stored GenAI events in the last day, read at most every
    :data:`PROJECTS_TTL_S` seconds: the spans of every other project (most: the SDK and
    OpenInference send no events) are inserted without a query for events. A project's first
    events are added at once in the process that stored them (:func:`complete_calls` runs there
    after the insert); another replica sees them within the TTL."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._read: dict[int, tuple[float, set[str]]] = {}

    def of(self, store: Store) -> set[str]:
        with self._lock:
            at, projects = self._read.get(id(store), (-math.inf, set()))
        if time.monotonic() - at < PROJECTS_TTL_S:
            return projects
        rows = store.query("SELECT DISTINCT project FROM genai_events WHERE ts >= now() - INTERVAL 1 DAY")
        fresh = {str(row["project"]) for row in rows}
        with self._lock:
            self._read[id(store)] = (time.monotonic(), fresh | projects)
        return fresh | projects

    def add(self, store: Store, projects: Iterable[str]) -> None:
        with self._lock:
            at, known = self._read.get(id(store), (-math.inf, set()))
            self._read[id(store)] = (at, known | set(projects))


PROJECTS_TTL_S = 5.0
_with_events = _ProjectsWithEvents()


def _project(row: Mapping[str, Any]) -> str:
    return str((row.get("ResourceAttributes") or {}).get(semconv.PROJECT, ""))


def _events_by_call(store: Store, traces: set[str]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(e["project"], e["trace_id"], e["span_id"]): e for e in _call_events(store, "", traces)}


def _completed(attrs: Mapping[str, str], event: Mapping[str, Any]) -> tuple[dict[str, str], str] | None:
    """The span's attributes with what its events add (their first choice's finish reason, and
    its answer when the span has none), and the reason added (or ``""``); ``None``: nothing."""
    completed = dict(attrs)
    reason = "" if span_finish_reason(attrs) else str(event["finish_reason"])
    if reason:
        completed[semconv.FINISH_REASONS] = orjson.dumps([reason]).decode()
    if event["content"] and semconv.OUTPUT_MESSAGES not in attrs:
        answer: dict[str, Any] = {"role": "assistant", "parts": [{"type": "text", "content": event["content"]}]}
        if first := span_finish_reason(completed):
            answer["finish_reason"] = first
        completed[semconv.OUTPUT_MESSAGES] = orjson.dumps([answer]).decode()
    return (completed, reason) if completed != attrs else None


Joined = list[tuple[dict[str, Any], dict[str, Any], str]]
"""(the span as stored, the span completed, the finish reason added or "") per completed span."""


def _stored_spans_completed(store: Store, events: dict[tuple[str, str, str], dict[str, Any]]) -> Joined:
    in_traces, traces = id_array("traces", sorted({trace for _, trace, _ in events}))
    in_spans, span_ids = id_array("spans", sorted({span for _, _, span in events}))
    spans = store.query(_SPANS.format(traces=in_traces, spans=in_spans), {
        **traces, **span_ids,
        "from_ns": min(int(e["first_ns"]) for e in events.values()) - _SPAN_BEFORE_NS,
        "to_ns": max(int(e["last_ns"]) for e in events.values()) + _SPAN_AFTER_NS,
    })
    out = []
    for span in spans:
        attrs: dict[str, str] = span["SpanAttributes"]
        event = events.get((_project(span), span["TraceId"], span["SpanId"]))
        if event is None or kind_of(attrs.get(semconv.OPERATION, "")) != LLM:
            continue
        completed = _completed(attrs, event)
        if completed is not None:
            row = {"Timestamp": row_time_text(int(span["start_ns"])), "TraceId": span["TraceId"],
                   "SpanId": span["SpanId"], "ServiceName": span["ServiceName"],
                   "ResourceAttributes": span["ResourceAttributes"]}
            out.append(({**row, "SpanAttributes": attrs}, {**row, "SpanAttributes": completed[0]}, completed[1]))
    return out


def _record_reasons(store: Store, joined: Joined) -> None:
    by_project: dict[str, list[tuple[dict[str, Any], str]]] = {}
    for stored, _, reason in joined:
        if reason:
            by_project.setdefault(_project(stored), []).append((stored, reason))
    for project, every_call in by_project.items():
        for at in range(0, len(every_call), _UPDATE_CALLS):
            _update_reasons(store, project, every_call[at:at + _UPDATE_CALLS])


def _update_reasons(store: Store, project: str, calls: list[tuple[dict[str, Any], str]]) -> None:
    starts = [row_time_ns(stored["Timestamp"]) for stored, _ in calls]
    try:
        store.query(_UPDATE, {
            "project": project, "from_ns": min(starts), "to_ns": max(starts) + 1,
            "traces": sorted({stored["TraceId"] for stored, _ in calls}),
            "spans": [stored["SpanId"] for stored, _ in calls], "reasons": [reason for _, reason in calls],
        })
    except StoreError as exc:
        logger.warning("llm_spans keeps %d calls without their events' finish reason "
                       "(the spans API and the trace page still show it): %s", len(calls), exc)


def _detect_added(store: Store, joined: Joined, detect: Detect) -> None:
    """Store the detections of the completed spans that the spans as stored did not have."""
    found, _ = detect(encode_rows(completed for _, completed, _ in joined))
    before, _ = detect(encode_rows(stored for stored, _, _ in joined))
    had = set(before.splitlines())
    added = [line for line in found.splitlines() if line and line not in had]
    if added:
        rows = b"\n".join(added) + b"\n"
        # Both sides may complete a call: the same detections, the same token, stored once.
        store.insert("detections", rows, dedup_token=hashlib.sha256(rows).hexdigest())

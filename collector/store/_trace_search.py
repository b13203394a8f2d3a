"""Trace search: the traces of a project that hold a GenAI span matching every condition, one page
at a time, in a stable order, with how many there are in all.

Pages follow a keyset cursor, not an OFFSET: the cursor holds the last trace's sort key and id,
and the next page starts strictly after them, so a trace that arrives between two pages cannot
push one onto both pages or off both. It also pins the first page's window (a "last day" page 2
asked a minute later still reads the window page 1 counted) and a hash of the filters and sort
(a cursor of another search is refused, not read as a position in this one). The cursor is
opaque to callers: base64 of a small JSON document, checked field by field when it comes back.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import BadRequest
from ._base import Store
from ._kinds import LLM
from ._money import spend_of, spend_sql
from ._time import shown

NS = 1_000_000_000
# How far outside the window a matching trace's other spans are read: its duration and spend are
# the whole trace's, even when it started just before the window.
CONTEXT_NS = 86400 * NS
SEARCH_MAX = 500
_INT64_MAX = 2**63 - 1  # the context past a window that ends in 2262 must still be an Int64 time
# llm_spans columns a search may require of one span (the span-level filters).
SPAN_COLUMNS = ("service", "route", "tenant", "model", "user_id", "session_id", "error_type", "status")
_TAG_PREFIX = "infersight.tag."  # the SDK's tags: infersight.tag.<key> = <value>

# Sort name -> its keys (per-trace aggregate, parameter type), descending unless marked. Every
# order ends with the trace id, so it is total and a cursor names one position in it.
_SORTS: dict[str, tuple[tuple[str, ...], bool]] = {
    "-time": (("start_ns",), True),  # newest first (the default)
    "time": (("start_ns",), False),  # oldest first
    "duration": (("duration_ns",), True),  # slowest first
    "cost": (("cost_key",), True),  # most expensive first (known + estimated)
    "tokens": (("tokens_key",), True),  # most tokens first (reported ones)
    "errors": (("errors", "start_ns"), True),  # most failed spans first, then newest
}
SORTS = tuple(_SORTS)
DEFAULT_SORT = "-time"
_KEY_TYPES = {"start_ns": "Int64", "duration_ns": "Int64", "tokens_key": "UInt64", "errors": "UInt64"}
_CALLS = f"kind = '{LLM}'"
_SPEND = spend_sql(_CALLS)
_DECIMAL_SPEND = spend_sql(_CALLS, money_as_text=False)
_START = "toUnixTimestamp64Nano(min(ts))"
_END = "max(toUnixTimestamp64Nano(ts) + toInt64(duration_s * 1e9))"
_KEYS = {
    "start_ns": _START,
    "duration_ns": f"{_END} - {_START}",
    "cost_key": f"{_DECIMAL_SPEND['cost_usd']} + {_DECIMAL_SPEND['estimated_cost_usd']}",
    "tokens_key": f"sumIf(ifNull(llm_spans.input_tokens, 0) + ifNull(llm_spans.output_tokens, 0), {_CALLS})",
    "errors": "countIf(status = 'error')",
}
_AGGREGATES = {
    "start_ns": _START,
    "end_ns": _END,
    "services": "groupUniqArray(service)",
    "routes": "groupUniqArray(route)",
    "tenants": "groupUniqArray(tenant)",
    "users": "groupUniqArray(user_id)",
    "models": f"groupUniqArrayIf(model, {_CALLS})",
    "error_types": "groupUniqArrayIf(error_type, status = 'error')",
    "spans": "count()",
    "llm_calls": f"countIf({_CALLS})",
    # Errors of any step (a failed retrieval fails the request); tokens and money of the LLM
    # calls, as every surface counts them (spend_sql: unknown is never 0).
    "errors": "countIf(status = 'error')",
    **_SPEND,
}


@dataclass(frozen=True)
class TraceSearch:
    """What a trace must hold to be listed: a GenAI span in ``[start_ns, end_ns)`` (Unix ns) with
    every ``columns`` value (``llm_spans`` column -> value, from :data:`SPAN_COLUMNS`), and, when
    given, a detection ``label`` (a label or a whole detector), ``text`` in a prompt or output
    (case-insensitive), a ``tag`` (``key`` or ``key=value`` of the SDK's tags), and a judge score
    in ``[score_min, score_max]`` (of ``rubric`` when given). Values reach SQL only bound."""

    start_ns: int
    end_ns: int
    columns: Mapping[str, str] = field(default_factory=dict)
    label: str | None = None
    text: str | None = None
    tag: str | None = None
    score_min: float | None = None
    score_max: float | None = None
    rubric: str | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.columns) - set(SPAN_COLUMNS))
        if unknown:
            raise ValueError(f"The 'columns' of TraceSearch must be among {SPAN_COLUMNS}; got {unknown}.")
        for name in ("score_min", "score_max"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise BadRequest(f"The '{name}' parameter must be a finite number; got {shown(value)}.")
        if self.score_min is not None and self.score_max is not None and self.score_min > self.score_max:
            raise BadRequest(f"The 'score_min' parameter must not exceed 'score_max'; got {self.score_min} > "
                             f"{self.score_max}.")
        if self.start_ns >= self.end_ns:
            raise BadRequest("The 'start' parameter must be before 'end'.")

    def fingerprint(self, sort: str) -> str:
        """A short hash of everything but the window: what a cursor must have been made for."""
        criteria = [sort, sorted(self.columns.items()), self.label, self.text, self.tag,
                    self.score_min, self.score_max, self.rubric]
        return hashlib.sha256(json.dumps(criteria).encode()).hexdigest()[:16]


def find_traces(
    store: Store, project: str, search: TraceSearch, *, sort: str = DEFAULT_SORT, cursor: str | None = None,
    limit: int = 50,
) -> dict[str, Any]:
    """One page of the traces of ``project`` matching ``search``, in ``sort`` order (:data:`SORTS`).

    Returns ``traces`` (per trace: ``trace_id``, ``start_ns``, ``duration_s``, ``services``,
    ``routes``, ``tenants``, ``users``, ``models``, ``error_types``, ``spans``, ``llm_calls``,
    ``errors``, the spend of ``spend_of``, ``labels``), ``total`` (matching traces in the window),
    ``next_cursor`` (``None`` on the last page), and the ``start_ns``/``end_ns`` read (a cursor's
    window when one is given). Raises :class:`BadRequest` for a cursor this search did not make.
    Blocks on three queries (four for a page past the first that finds nothing left).
    """
    if sort not in _SORTS:
        raise BadRequest(f"The 'sort' parameter must be one of {', '.join(SORTS)}; got {shown(sort)}.")
    if not 1 <= limit <= SEARCH_MAX:
        raise BadRequest(f"The 'limit' parameter must be between 1 and {SEARCH_MAX}; got {limit}.")
    after = None
    if cursor:
        after, window = _read_cursor(cursor, search.fingerprint(sort), _SORTS[sort][0])
        search = replace(search, start_ns=window[0], end_ns=window[1])
    params: dict[str, Any] = {
        "project": project, "start_ns": search.start_ns, "end_ns": search.end_ns, "limit": limit + 1,
        "from_ns": search.start_ns - CONTEXT_NS, "to_ns": min(search.end_ns + CONTEXT_NS, _INT64_MAX),
    }
    matching = _matching(search, params)
    keys, descending = _SORTS[sort]
    page_filter = ""
    if after is not None:
        bound = []
        for i, (key, value) in enumerate(zip(keys, after[:-1], strict=True)):
            params[f"k{i}"] = str(value)
            bound.append(f"toDecimal128({{k{i}:String}}, 12)" if key == "cost_key" else f"{{k{i}:{_KEY_TYPES[key]}}}")
        params["k_trace"] = after[-1]
        bound.append("{k_trace:String}")
        page_filter = f" WHERE ({', '.join(keys)}, trace_id) {'<' if descending else '>'} ({', '.join(bound)})"
    direction = " DESC" if descending else ""
    order = ", ".join(f"{key}{direction}" for key in (*keys, "trace_id"))
    in_context = ("project = {project:String} AND ts >= fromUnixTimestamp64Nano({from_ns:Int64})"
                  " AND ts < fromUnixTimestamp64Nano({to_ns:Int64})")
    # The order first, from the sort's keys alone; the whole summary only for the page's traces
    # (over a day of 20,000 traces the first page took 402 ms summarising them all, ~90 ms so).
    # The total comes with the page, counted over every matching trace before the cursor's
    # filter: one pass over the matching spans, not two (a text search scans every prompt in the
    # window; counting apart scanned them twice, 618 ms of 7 days at 1M spans).
    page = store.query(
        f"SELECT trace_id, {', '.join(keys)}, total{', toString(cost_key) AS cost_text' if 'cost_key' in keys else ''}"
        f" FROM (SELECT trace_id, {', '.join(keys)}, count() OVER () AS total"
        f" FROM (SELECT trace_id, {', '.join(f'{_KEYS[key]} AS {key}' for key in keys)}"
        f" FROM llm_spans WHERE {in_context} AND trace_id IN ({matching}) GROUP BY trace_id)){page_filter}"
        f" ORDER BY {order} LIMIT {{limit:UInt32}}",
        params,
    )
    total = _total(store, matching, params, page, after is not None)
    more = len(page) > limit
    page = page[:limit]
    ids = [row["trace_id"] for row in page]
    rows, labels = (_summaries(store, params, in_context, ids), _labels(store, params, ids)) if ids else ({}, {})
    next_cursor = None
    if more:
        last = page[-1]
        position = [last["cost_text"] if key == "cost_key" else int(last[key]) for key in keys]
        next_cursor = _make_cursor(search.fingerprint(sort), [*position, last["trace_id"]],
                                   (search.start_ns, search.end_ns))
    return {
        "start_ns": search.start_ns, "end_ns": search.end_ns, "total": total,
        "next_cursor": next_cursor, "traces": [_shape(rows[i], labels) for i in ids if i in rows],
    }


def _matching(search: TraceSearch, params: dict[str, Any]) -> str:
    """SQL selecting the trace ids with a span in the window that meets every condition."""
    in_range = "ts >= fromUnixTimestamp64Nano({start_ns:Int64}) AND ts < fromUnixTimestamp64Nano({end_ns:Int64})"
    conditions = ""
    for column, value in sorted(search.columns.items()):
        params[f"c_{column}"] = value
        conditions += f" AND {column} = {{c_{column}:String}}"
    if search.label:
        params["label"] = search.label
        conditions += (
            " AND span_id IN (SELECT span_id FROM detections WHERE project = {project:String}"
            f" AND {in_range} AND (label = {{label:String}} OR detector = {{label:String}}))"
        )
    if search.score_min is not None or search.score_max is not None or search.rubric:
        scored = ""
        for name, operator in (("score_min", ">="), ("score_max", "<=")):
            if getattr(search, name) is not None:
                params[name] = getattr(search, name)
                scored += f" AND score {operator} {{{name}:Float64}}"
        if search.rubric:
            params["rubric"] = search.rubric
            scored += " AND rubric_id = {rubric:String}"
        # judge_scores.ts is the judged call's start, so the window applies to it as to the span.
        conditions += (
            " AND span_id IN (SELECT span_id FROM judge_scores WHERE project = {project:String}"
            f" AND {in_range}{scored})"
        )
    raw = []
    if search.text:
        params["text"] = search.text
        # A span holding the text holds a prompt or an output attribute (a missing one reads as
        # '', where no non-empty text is found): that condition alone is answered by the
        # attribute-key bloom index, and skips every granule of spans without content (retrieval,
        # HTTP, tool spans) before their attributes are decompressed.
        raw.append("(mapContains(SpanAttributes, 'gen_ai.input.messages')"
                   " OR mapContains(SpanAttributes, 'gen_ai.output.messages'))")
        raw.append("(positionCaseInsensitiveUTF8(SpanAttributes['gen_ai.input.messages'], {text:String}) > 0"
                   " OR positionCaseInsensitiveUTF8(SpanAttributes['gen_ai.output.messages'], {text:String}) > 0)")
    if search.tag:
        key, has_value, value = search.tag.partition("=")
        params["tag_key"], params["tag_value"] = _TAG_PREFIX + key.strip(), value.strip()
        raw.append("SpanAttributes[{tag_key:String}] = {tag_value:String}" if has_value
                   else "mapContains(SpanAttributes, {tag_key:String})")
    if raw:
        conditions += (
            " AND trace_id IN (SELECT TraceId FROM otel_traces"
            " WHERE ResourceAttributes['infersight.project'] = {project:String}"
            " AND Timestamp >= fromUnixTimestamp64Nano({start_ns:Int64})"
            " AND Timestamp < fromUnixTimestamp64Nano({end_ns:Int64})"
            f" AND {' AND '.join(raw)})"
        )
    return f"SELECT trace_id FROM llm_spans WHERE project = {{project:String}} AND {in_range}{conditions}"


def _total(store: Store, matching: str, params: dict[str, Any], page: list[dict[str, Any]], paged: bool) -> int:
    """How many traces match: the page's own count, or, when a page past the first came back empty
    (the traces after the cursor are gone), a count of its own."""
    if page:
        return int(page[0]["total"])
    if not paged:
        return 0
    (count,) = store.query(f"SELECT uniqExact(trace_id) AS total FROM ({matching})", params)
    return int(count["total"])


def _summaries(store: Store, params: dict[str, Any], in_context: str, ids: list[str]) -> dict[str, dict[str, Any]]:
    columns = ", ".join(f"{sql} AS {name}" for name, sql in _AGGREGATES.items())
    rows = store.query(
        f"SELECT trace_id, {columns} FROM llm_spans WHERE {in_context} AND trace_id IN {{ids:Array(String)}}"
        " GROUP BY trace_id",
        {**params, "ids": ids},
    )
    return {row["trace_id"]: row for row in rows}


def _labels(store: Store, params: dict[str, Any], trace_ids: list[str]) -> dict[str, list[str]]:
    rows = store.query(
        "SELECT trace_id, groupUniqArray(label) AS labels FROM detections WHERE project = {project:String}"
        " AND ts >= fromUnixTimestamp64Nano({from_ns:Int64}) AND ts < fromUnixTimestamp64Nano({to_ns:Int64})"
        " AND trace_id IN {ids:Array(String)} GROUP BY trace_id",
        {**params, "ids": trace_ids},
    )
    return {row["trace_id"]: sorted(row["labels"]) for row in rows}


def _shape(row: dict[str, Any], labels: dict[str, list[str]]) -> dict[str, Any]:
    start, end = int(row["start_ns"]), int(row["end_ns"])
    return {
        "trace_id": row["trace_id"], "start_ns": start, "duration_s": max(end - start, 0) / NS,
        **{name: sorted(v for v in row[name] if v)
           for name in ("services", "routes", "tenants", "users", "models", "error_types")},
        "spans": int(row["spans"]), "llm_calls": int(row["llm_calls"]), "errors": int(row["errors"]),
        **spend_of(row), "labels": labels.get(row["trace_id"], []),
    }


def _make_cursor(fingerprint: str, position: list[Any], window: tuple[int, int]) -> str:
    document = json.dumps({"f": fingerprint, "p": position, "w": list(window)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(document.encode()).decode().rstrip("=")


def _read_cursor(cursor: str, fingerprint: str, keys: tuple[str, ...]) -> tuple[list[Any], tuple[int, int]]:
    """The position and window a cursor holds; :class:`BadRequest` unless this search made it."""
    refused = BadRequest(f"The 'cursor' parameter must be a next_cursor of the same search; got {shown(cursor)}.")
    try:
        document = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        position, window = document["p"], document["w"]
        ok = (document["f"] == fingerprint and isinstance(position, list) and len(position) == len(keys) + 1
              and all(_fits(key, value) for key, value in zip(keys, position, strict=False))
              and isinstance(position[-1], str) and isinstance(window, list) and len(window) == 2
              and all(_fits("start_ns", v) for v in window) and window[0] < window[1])
    except (ValueError, TypeError, KeyError, binascii.Error):
        raise refused from None
    if not ok:
        raise refused
    return position, (window[0], window[1])


def _fits(key: str, value: Any) -> bool:
    """Whether a cursor's ``value`` can be bound as sort key ``key`` (money as decimal text)."""
    if key == "cost_key":
        return isinstance(value, str) and len(value) <= 64 and value.replace(".", "", 1).isdigit()
    low, high = (-(2**63), 2**63 - 1) if _KEY_TYPES[key] == "Int64" else (0, 2**64 - 1)
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high

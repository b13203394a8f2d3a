"""One model call, one counted row: spans of two instrumentations describing the same call.

A framework's LLM span over a client's (LangChain over OpenAI), OpenInference over GenAI
semconv, or our decorator over either: two LLM spans, one call. Two shapes occur:

* the inner span is a **child** of the outer one (a client wrapped twice, our decorator);
* the inner span is elsewhere in the trace (a sibling, or under a span in between) but from
  another instrumentation (another scope), inside the outer one's time, with the same model:
  OpenInference's LangChain tracer starts its span without making it current, so the OpenAI span
  is its sibling. Without a span around the call (an app's request span) the two are separate
  traces and are not paired.

The innermost span is the one counted: its duration and TTFT are the call's own. Every outer
span of the pair gets ``infersight.same_call_as`` (the inner span's id) and the view leaves it
out of ``llm_spans``; when both arrive in one request, the outer span's attribution (tenant,
user, session, route) and usage fill what the inner one lacks.

Spans of one trace often arrive in separate requests (``SimpleSpanProcessor`` exports each
span alone, and inner spans end, so are exported, first). The decode worker keeps the last
:data:`REMEMBERED` LLM spans it saw, so whichever of a pair comes second is recognised. Not
covered: a pair whose halves go to two different decode worker processes (with several
workers, requests are spread over them), and an outer span that arrives BEFORE its inner one
in another request: it is already counted, so the inner one is then the row left out (its
timings are lost, never its tokens twice). A span the SDK already marked
(``infersight.parent_llm_span``: a foreign span under our LLM span) is left as it is.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..store import LLM, kind_of
from ._times import ts_ns

SAME_CALL_AS = "infersight.same_call_as"
SDK_PARENT_LLM_SPAN = "infersight.parent_llm_span"
REMEMBERED = 4096
_MODEL_KEYS = ("gen_ai.request.model", "gen_ai.response.model")
# What the outer span knows about who made the call, copied onto the counted row when absent.
ATTRIBUTION_KEYS = (
    "infersight.tenant.id", "infersight.user.id", "infersight.route", "gen_ai.conversation.id",
    "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.request.model", "gen_ai.provider.name",
)


@dataclass(slots=True)
class _Call:
    trace_id: str
    span_id: str
    parent_id: str
    start_ns: int
    end_ns: int
    model: str
    scope: str
    dropped: bool = False  # marked as the repeat of another span: it cannot stand for a call any more

    def holds(self, other: _Call) -> bool:
        """``other``, not a child, is the same call inside this span: only another instrumentation's
        span counts (one instrumentation's concurrent calls of one model overlap in time too)."""
        if other.scope == self.scope or not (self.start_ns <= other.start_ns and other.end_ns <= self.end_ns):
            return False
        if self.model and other.model and self.model != other.model:
            return False
        if (self.start_ns, self.end_ns) == (other.start_ns, other.end_ns):
            return self.span_id > other.span_id  # exactly one of the two is the outer one
        return True


class _Recent:
    """The last LLM spans a decode worker saw, by trace, at most ``size`` (thread-safe: decoding
    may run in the server's threads)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._traces: OrderedDict[str, dict[str, _Call]] = OrderedDict()
        self._count = 0
        self._lock = threading.Lock()

    def of_trace(self, trace_id: str) -> list[_Call]:
        with self._lock:
            return list(self._traces.get(trace_id, {}).values())

    def add(self, calls: list[_Call]) -> None:
        with self._lock:
            for call in calls[-self.size:]:
                known = self._traces.setdefault(call.trace_id, {})
                self._traces.move_to_end(call.trace_id)
                self._count += call.span_id not in known
                known[call.span_id] = call
            while self._count > self.size:
                _, evicted = self._traces.popitem(last=False)
                self._count -= len(evicted)


_recent = _Recent(REMEMBERED)
# Spans that are not parent and child are compared pairwise: a trace with more LLM spans than
# this in one request (a bulk load) is only checked for parent-child pairs.
MAX_COMPARED = 64


def mark_same_calls(rows: list[dict[str, Any]], recent: _Recent | None = None) -> None:
    """Mark every outer LLM span of a nested pair among ``rows`` (normalised ``otel_traces`` rows)
    or between ``rows`` and the LLM spans seen before; see the module docstring. In place."""
    recent = _recent if recent is None else recent
    here = {(call.trace_id, call.span_id): (call, row) for row in rows if (call := _call(row)) is not None}
    if not here:
        return
    by_trace: dict[str, list[_Call]] = {}
    for call, _ in here.values():
        by_trace.setdefault(call.trace_id, []).append(call)
    for trace_id, calls in by_trace.items():
        before = [c for c in recent.of_trace(trace_id) if (trace_id, c.span_id) not in here]
        if len(calls) + len(before) < 2:
            continue  # one call in its trace so far: nothing to pair (most traces)
        for outer, inner in _pairs(calls + before):
            _mark(outer, inner, here)
    recent.add([call for call, _ in here.values()])


def _call(row: dict[str, Any]) -> _Call | None:
    attrs = row["SpanAttributes"]
    if kind_of(attrs.get("gen_ai.operation.name", "")) != LLM or attrs.get(SDK_PARENT_LLM_SPAN):
        return None
    start = ts_ns(row["Timestamp"])
    return _Call(
        row["TraceId"], row["SpanId"], row["ParentSpanId"], start, start + int(row["Duration"]),
        next((attrs[k] for k in _MODEL_KEYS if attrs.get(k)), ""), row["ScopeName"],
    )


def _pairs(calls: list[_Call]) -> list[tuple[_Call, _Call]]:
    """(outer, inner) pairs among the LLM spans of one trace, outer spans first."""
    by_id = {c.span_id: c for c in calls}
    out = []
    for call in calls:
        parent = by_id.get(call.parent_id)
        if parent is not None:
            out.append((parent, call))
    if 1 < len(calls) <= MAX_COMPARED and len({c.scope for c in calls}) > 1:
        out.extend((a, b) for a in calls for b in calls if a is not b and a.parent_id != b.span_id
                   and b.parent_id != a.span_id and a.holds(b))
    out.sort(key=lambda pair: (pair[0].start_ns, -pair[0].end_ns))  # attribution flows inwards
    return out


def _mark(outer: _Call, inner: _Call, here: dict[tuple[str, str], tuple[_Call, dict[str, Any]]]) -> None:
    outer_here = here.get((outer.trace_id, outer.span_id))
    inner_here = here.get((inner.trace_id, inner.span_id))
    if outer_here is not None:
        outer.dropped = True
        outer_here[1]["SpanAttributes"].setdefault(SAME_CALL_AS, inner.span_id)
        if inner_here is not None:
            _fill(inner_here[1]["SpanAttributes"], outer_here[1]["SpanAttributes"])
    elif inner_here is not None and not outer.dropped:
        # the outer row arrived first and is counted already: the inner one is the repeat
        inner.dropped = True
        inner_here[1]["SpanAttributes"].setdefault(SAME_CALL_AS, outer.span_id)


def _fill(inner: dict[str, str], outer: dict[str, str]) -> None:
    for key in ATTRIBUTION_KEYS:
        if key not in inner and outer.get(key):
            inner[key] = outer[key]

"""One model call, one counted row: spans of two instrumentations describing the same call.

A framework's LLM span over a client's (LangChain over OpenAI), OpenInference over GenAI
semconv, or our decorator over either: two LLM spans, one call. Two shapes occur:

* the inner span is a **child** of the outer one (a client wrapped twice, our decorator);
* the inner span is a **sibling** inside the outer one's time, with the same model:
  OpenInference's LangChain tracer starts its span without making it current, so the OpenAI
  span beside it gets the same parent.

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

SAME_CALL_AS = "infersight.same_call_as"
SDK_PARENT_LLM_SPAN = "infersight.parent_llm_span"
REMEMBERED = 4096
_MODEL_KEYS = ("gen_ai.request.model", "gen_ai.response.model")
# What the outer span knows about who made the call, copied onto the counted row when absent.
ATTRIBUTION_KEYS = (
    "infersight.tenant.id", "infersight.user.id", "infersight.route", "gen_ai.conversation.id",
    "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.request.model", "gen_ai.provider.name",
)


@dataclass(frozen=True, slots=True)
class _Call:
    trace_id: str
    span_id: str
    parent_id: str
    start_ns: int
    end_ns: int
    model: str
    scope: str

    def contains(self, other: _Call) -> bool:
        """``self`` is the outer span of ``other``'s call."""
        if other.trace_id != self.trace_id or other.span_id == self.span_id:
            return False
        if other.parent_id == self.span_id:
            return True
        # A sibling: only another instrumentation's span is the same call (one instrumentation's
        # concurrent calls of one model overlap in time too), and only one inside this one's time.
        if other.parent_id != self.parent_id or other.scope == self.scope:
            return False
        if not (self.start_ns <= other.start_ns and other.end_ns <= self.end_ns):
            return False
        if self.model and other.model and self.model != other.model:
            return False
        if (self.start_ns, self.end_ns) == (other.start_ns, other.end_ns):
            return self.span_id > other.span_id  # exactly one of the two is the outer one
        return True


class _Recent:
    """The last LLM spans a decode worker saw, by trace (thread-safe: decoding may run in threads)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._calls: OrderedDict[tuple[str, str], _Call] = OrderedDict()
        self._lock = threading.Lock()

    def of_trace(self, trace_id: str) -> list[_Call]:
        with self._lock:
            return [c for (t, _), c in self._calls.items() if t == trace_id] if self._calls else []

    def add(self, calls: list[_Call]) -> None:
        with self._lock:
            for call in calls:
                self._calls[(call.trace_id, call.span_id)] = call
            while len(self._calls) > self.size:
                self._calls.popitem(last=False)


_recent = _Recent(REMEMBERED)


def mark_same_calls(rows: list[dict[str, Any]], recent: _Recent | None = None) -> None:
    """Mark every outer LLM span of a nested pair among ``rows`` (normalised ``otel_traces`` rows)
    or between ``rows`` and the LLM spans seen before; see the module docstring. In place."""
    recent = _recent if recent is None else recent
    calls = {id(row): call for row in rows if (call := _call(row)) is not None}
    if not calls:
        return
    by_trace: dict[str, list[_Call]] = {}
    for call in calls.values():
        by_trace.setdefault(call.trace_id, []).append(call)
    rows_by_span = {(row["TraceId"], row["SpanId"]): row for row in rows if id(row) in calls}
    for trace_id, here in by_trace.items():
        before = [c for c in recent.of_trace(trace_id) if (c.trace_id, c.span_id) not in rows_by_span]
        here.sort(key=lambda c: (c.start_ns, -c.end_ns))  # outer first: attribution flows inwards
        for call in here:
            _mark(call, here, before, rows_by_span)
    recent.add(list(calls.values()))


def _call(row: dict[str, Any]) -> _Call | None:
    attrs = row["SpanAttributes"]
    if kind_of(attrs.get("gen_ai.operation.name", "")) != LLM or attrs.get(SDK_PARENT_LLM_SPAN):
        return None
    start = _ns(row["Timestamp"])
    return _Call(
        row["TraceId"], row["SpanId"], row["ParentSpanId"], start, start + int(row["Duration"]),
        next((attrs[k] for k in _MODEL_KEYS if attrs.get(k)), ""), row["ScopeName"],
    )


def _ns(ts: str) -> int:
    return int(ts[:-10]) * 1_000_000_000 + int(ts[-9:])


def _mark(call: _Call, here: list[_Call], before: list[_Call], rows: dict[tuple[str, str], dict[str, Any]]) -> None:
    row = rows[(call.trace_id, call.span_id)]
    attrs = row["SpanAttributes"]
    inner = next((c for c in here if call.contains(c)), None)
    if inner is not None:
        attrs[SAME_CALL_AS] = inner.span_id
        _fill(rows[(inner.trace_id, inner.span_id)]["SpanAttributes"], attrs)
        return
    inner = next((c for c in before if call.contains(c)), None)
    if inner is not None:
        attrs[SAME_CALL_AS] = inner.span_id  # the inner row is stored already: it alone counts
        return
    outer = next((c for c in before if c.contains(call)), None)
    if outer is not None:
        attrs[SAME_CALL_AS] = outer.span_id  # the outer row arrived first and is counted


def _fill(inner: dict[str, str], outer: dict[str, str]) -> None:
    for key in ATTRIBUTION_KEYS:
        if key not in inner and outer.get(key):
            inner[key] = outer[key]

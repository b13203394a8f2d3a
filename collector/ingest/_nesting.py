"""One model call, one counted row: spans of two instrumentations describing the same call.

A framework's LLM span over a client's (LangChain over OpenAI), OpenInference over GenAI
semconv, or our decorator over either: two LLM spans, one call. Two spans are paired only when
they provably describe one exchange:

1. the inner span is a **child** of the outer one (a client wrapped twice, our decorator); or
2. the inner span is elsewhere in the trace (OpenInference's LangChain tracer starts its span
   without making it current, so the OpenAI span is its sibling) and all of these hold:

   a. it is another instrumentation's (another scope): one instrumentation's concurrent calls
      are never one call;
   b. it lies inside the outer span's time;
   c. nothing differs that both spans know: model, status (error or not), response id
      (``gen_ai.response.id``, or the ``id`` in OpenInference's JSON ``output.value``), usage
      (input and output tokens), prompt (:func:`~infersight.detectors.prompt_hash` of the input
      messages);
   d. something is the same: the response id alone proves it; else the usage or the prompt, with
      the two spans ending within :data:`END_TOLERANCE_NS` of each other;
   e. it is unambiguous: neither span has a second candidate that is not itself paired with the
      first (a framework span over two instrumented clients of one call is a chain, not a choice).

3. the two spans are in **different traces**: without a span around the call (an app's request
   span), OpenInference's LangChain span and the client's span it does not make current are each
   the root of a trace of their own. The inner span must be a root, of the same project and
   service, another instrumentation's, inside the outer span's time, differing in nothing both
   know (a-c), and the only candidate either way (e), and the proof is stricter than within a
   trace, where the shared trace is evidence already:

   a. the response id is the same; or
   b. the prompt is the same, the ends are within :data:`END_TOLERANCE_NS`, and either the usage
      is the same or both calls failed before any usage (a failed call has no response id and no
      usage; its prompt, its failure and its timing are all there is, and concurrent calls with
      one prompt are ambiguous, so are left apart).

   The outer span then also gets ``infersight.same_call_trace`` (the inner span's trace), so the
   trace page links the two and its detections are the counted call's.

Time overlap and model alone are never enough: concurrent calls (``batch``, ``gather``,
threads) overlap and share a model, and a failed call often records no model at all. What is
not provably one call stays two rows.

The innermost span is the one counted: its duration and TTFT are the call's own. Every outer
span of the pair gets ``infersight.same_call_as`` (the inner span's id) and the view leaves it
out of ``llm_spans``; when both arrive in one request, the outer span's attribution (tenant,
user, session, route) and usage fill what the inner one lacks. Detections found on a marked
span belong to the span it names (:func:`counted_call`).

Spans of one trace often arrive in separate requests (``SimpleSpanProcessor`` exports each
span alone, and inner spans end, so are exported, first). The process that decodes keeps the
last :data:`REMEMBERED` LLM spans it saw (their ids, times and the evidence above), so whichever
of a pair comes second is recognised. With more than one decode worker a lane, two requests may
be decoded by two workers: each pairs within its request (and fills the counted row's
attribution and usage from the outer span there, before pricing), and the collector's one
:class:`Pairing`, in the server process, remembers every request's LLM spans and marks the halves
decoded apart.

The prompt is hashed only when it can decide something: when the span meets another
instrumentation's span, in its trace or in its project and service. Hashing a 1 KB prompt cost
more than the rest of decoding the span (bench/ingest.py's stages), and a service traced by one
instrumentation never needs it. Until then a remembered span keeps its input messages as they
came (at most :data:`REMEMBERED_PROMPT_CHARS` of them; past that a prompt is hashed at once), so
the answer is the same as if every prompt had been hashed on arrival.

Not covered: a pair whose halves reach two collectors (each has its own memory) or, with one
worker a lane, the two lanes (a request of more than 512 KiB and a smaller one), and an
outer span that arrives BEFORE its inner one in another request: it is already counted, so
the inner one is then the row left out (its timings are lost, never its tokens twice). A span
the SDK already marked (``infersight.parent_llm_span``: a foreign span under our LLM span) is
left as it is. Across traces, also not covered: a failed call whose client span records no
prompt (openai-v2 keeps it in log events) or that fails beside a concurrent call of the same
prompt is counted twice, and a prompt many calls share is remembered for its latest
:data:`MAX_COMPARED` spans only.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from infersight.detectors import prompt_hash, row_time_ns
from infersight.sdk import semconv

from ..store import LLM, kind_of

REMEMBERED = 4096
# Characters of input messages the remembered spans keep unhashed: 4,096 prompts of 2,048.
REMEMBERED_PROMPT_CHARS = 8 << 20
# A framework's span ends right after its client's (the client returns, the framework's callback
# closes its span on the same thread): 2 s leaves room for a busy host and is still far shorter
# than the calls it tells apart.
END_TOLERANCE_NS = 2 * 10**9
# Spans that are not parent and child are compared pairwise: a trace with more LLM spans than
# this in one request (a bulk load) is only checked for parent-child pairs, and across traces a
# span is compared with at most this many of the latest spans that share its prompt.
MAX_COMPARED = 64
# What the outer span knows about who made the call, copied onto the counted row when absent.
ATTRIBUTION_KEYS = (
    semconv.TENANT, semconv.USER, semconv.ROUTE, semconv.CONVERSATION_ID,
    semconv.INPUT_TOKENS, semconv.OUTPUT_TOKENS, semconv.REQUEST_MODEL, semconv.PROVIDER,
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
    failed: bool = False
    response_id: str = ""
    usage: tuple[str, str] | None = None
    messages: str = ""  # the input messages, until :attr:`prompt` hashes them
    project: str = ""
    service: str = ""
    dropped: bool = False  # marked as the repeat of another span: it cannot stand for a call any more
    paired: bool = False  # one half of a pair already: never the half of another
    hashed: str | None = None  # prompt_hash of ``messages``, once asked for
    indexed: tuple[tuple[str, str, str], ...] = ()  # the evidence _Recent finds it by
    kept_chars: int = 0  # of ``messages``, counted against _Recent's budget

    @property
    def root(self) -> bool:
        return not self.parent_id

    @property
    def prompt(self) -> str:
        """:func:`~infersight.detectors.prompt_hash` of the input messages; "" when not captured.
        Hashed at the first use (two threads may both hash: the same answer)."""
        if self.hashed is None:
            self.hashed = prompt_hash(self.messages)
            self.messages = ""
        return self.hashed

    @property
    def source(self) -> tuple[str, str]:
        return self.project, self.service

    @property
    def trace(self) -> tuple[str, str]:
        return self.project, self.trace_id

    def evidence(self, with_prompt: bool) -> tuple[tuple[str, str, str], ...]:
        """What another trace's span of the same call shares with this one: the keys it is found by.
        The prompt only ``with_prompt``: a span can pair across traces only with another
        instrumentation's span of its project and service, so a prompt no such span may share
        is not worth its hash."""
        found = [("id", self.project, self.response_id)] if self.response_id else []
        if with_prompt and self.prompt:
            found.append(("prompt", self.project, self.prompt))
        return tuple(found)

    def holds(self, other: _Call) -> bool:
        """``other``, not a child, lies inside this span, is another instrumentation's and
        knows nothing that differs from what this span knows (conditions a-c of the module)."""
        if other.scope == self.scope or not (self.start_ns <= other.start_ns and other.end_ns <= self.end_ns):
            return False
        if (self.start_ns, self.end_ns) == (other.start_ns, other.end_ns) and self.span_id < other.span_id:
            return False  # exactly one of the two is the outer one
        return self.failed == other.failed and all(
            not (mine and theirs) or mine == theirs
            for mine, theirs in ((self.model, other.model), (self.response_id, other.response_id),
                                 (self.usage, other.usage), (self.prompt, other.prompt))
        )

    def same_exchange(self, inner: _Call) -> bool:
        """Besides :meth:`holds`, something both spans saw is the same (condition d)."""
        if self.response_id and self.response_id == inner.response_id:
            return True
        shared_usage = self.usage is not None and self.usage == inner.usage
        shared_prompt = bool(self.prompt) and self.prompt == inner.prompt
        return (shared_usage or shared_prompt) and self.end_ns - inner.end_ns <= END_TOLERANCE_NS

    def same_exchange_across(self, inner: _Call) -> bool:
        """Besides :meth:`holds`, the proof that ``inner``, the root of another trace, is this
        span's call (condition 3 of the module)."""
        if (self.project, self.service) != (inner.project, inner.service) or not inner.root:
            return False
        if self.response_id and self.response_id == inner.response_id:
            return True
        if not self.prompt or self.prompt != inner.prompt or self.end_ns - inner.end_ns > END_TOLERANCE_NS:
            return False
        if self.usage is not None:
            return self.usage == inner.usage
        return self.failed and inner.usage is None


class _Recent:
    """The last LLM spans seen, by trace, at most ``size`` (thread-safe: decoding may run in the
    server's threads)."""

    def __init__(self, size: int) -> None:
        self.size = size
        # By (project, trace id): a trace id names a trace within its project only, so spans of
        # two projects never pair, whatever ids they share.
        self._traces: OrderedDict[tuple[str, str], dict[str, _Call]] = OrderedDict()
        self._by_evidence: dict[tuple[str, str, str], dict[tuple[str, str], _Call]] = {}
        # Instrumentations (scopes) of the remembered spans by (project, service), and how many
        # spans each: two or more, and the spans of that source are found by their prompts too.
        self._scopes: dict[tuple[str, str], dict[str, int]] = {}
        self._kept_chars = 0
        self._count = 0
        self._lock = threading.Lock()

    def of_traces(self, traces: Iterable[tuple[str, str]]) -> dict[tuple[str, str], list[_Call]]:
        """The remembered spans of each of ``traces`` (project, trace id) that has some: one lock
        for a request's traces."""
        with self._lock:
            return {trace: list(known.values()) for trace in traces if (known := self._traces.get(trace))}

    def sharing(self, calls: list[_Call]) -> list[list[_Call]]:
        """For each of ``calls``, the spans of other traces that share a piece of its
        :meth:`_Call.evidence`."""
        out = []
        with self._lock:
            for call in calls:
                evidence = call.evidence(len(self._scopes.get(call.source, ())) > 1)
                found = {key: other for each in evidence
                         for key, other in self._by_evidence.get(each, {}).items() if other.trace_id != call.trace_id}
                out.append(list(found.values()))
        return out

    def add(self, calls: list[_Call]) -> None:
        with self._lock:
            for call in calls[-self.size:]:
                known = self._traces.setdefault(call.trace, {})
                self._traces.move_to_end(call.trace)
                self._count += call.span_id not in known
                if (before := known.get(call.span_id)) is not None:
                    self._forget(before)
                known[call.span_id] = call
                self._keep(call)
            while self._count > self.size:
                _, evicted = self._traces.popitem(last=False)
                self._count -= len(evicted)
                for call in evicted.values():
                    self._forget(call)

    def _keep(self, call: _Call) -> None:
        scopes = self._scopes.setdefault(call.source, {})
        scopes[call.scope] = scopes.get(call.scope, 0) + 1
        if len(scopes) == 2 and scopes[call.scope] == 1:  # a second instrumentation: its prompts count now
            for trace in self._traces.values():
                for other in trace.values():
                    if other is not call and other.source == call.source:
                        self._index(other, True)
        if call.hashed is None and self._kept_chars + len(call.messages) > REMEMBERED_PROMPT_CHARS:
            call.prompt  # noqa: B018 - hashed now, so that the text is not kept
        call.kept_chars = len(call.messages)
        self._kept_chars += call.kept_chars
        self._index(call, len(scopes) > 1)

    def _index(self, call: _Call, with_prompt: bool) -> None:
        evidence = call.evidence(with_prompt)
        for each in evidence:
            if each in call.indexed:
                continue
            holders = self._by_evidence.setdefault(each, {})
            holders[(call.trace_id, call.span_id)] = call
            if len(holders) > MAX_COMPARED:  # a prompt many send (a health check): its latest only
                del holders[next(iter(holders))]
        call.indexed = evidence

    def _forget(self, call: _Call) -> None:
        for evidence in call.indexed:
            holders = self._by_evidence.get(evidence, {})
            holders.pop((call.trace_id, call.span_id), None)
            if not holders:
                self._by_evidence.pop(evidence, None)
        call.indexed = ()
        self._kept_chars -= call.kept_chars
        call.kept_chars = 0
        scopes = self._scopes.get(call.source, {})
        scopes[call.scope] = scopes.get(call.scope, 1) - 1
        if scopes[call.scope] <= 0:
            del scopes[call.scope]
            if not scopes:
                self._scopes.pop(call.source, None)


_recent = _Recent(REMEMBERED)

# What a pass in another process reads of an LLM span: the attributes ``_call`` reads and the
# marks already made (not the attribution ``_fill`` copies: that pass keeps only its marks).
_EVIDENCE_KEYS = (
    semconv.OPERATION, semconv.REQUEST_MODEL, semconv.RESPONSE_MODEL, semconv.RESPONSE_ID,
    semconv.INPUT_TOKENS, semconv.OUTPUT_TOKENS, semconv.INPUT_MESSAGES, semconv.SAME_CALL_AS,
    semconv.SAME_CALL_TRACE,
)
_MARKS = (semconv.SAME_CALL_AS, semconv.SAME_CALL_TRACE)
_ROW_FIELDS = ("TraceId", "SpanId", "ParentSpanId", "Timestamp", "Duration", "ScopeName", "StatusCode", "ServiceName")


def evidence(rows: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """The LLM spans among ``rows`` as the pairing reads them, each with its index in ``rows``: for
    :class:`Pairing`, in the process that sees every request."""
    out = []
    for index, row in enumerate(rows):
        attrs = row["SpanAttributes"]
        if kind_of(attrs.get(semconv.OPERATION, "")) != LLM or attrs.get(semconv.PARENT_LLM_SPAN):
            continue
        kept = {key: attrs[key] for key in _EVIDENCE_KEYS if key in attrs}
        if not kept.get(semconv.RESPONSE_ID) and (response_id := _openinference_response_id(attrs)):
            kept[semconv.RESPONSE_ID] = response_id  # rather than OpenInference's whole output
        fields = {name: row[name] for name in _ROW_FIELDS}
        project = (row.get("ResourceAttributes") or {}).get(semconv.PROJECT, "")
        out.append((index, {**fields, "ResourceAttributes": {semconv.PROJECT: project}, "SpanAttributes": kept}))
    return out


class Pairing:
    """One memory of LLM spans for every decode worker of a collector.

    A worker pairs the spans of the request it decodes (and copies the outer span's attribution
    and usage onto the counted row, before pricing it). The halves of a pair in two requests may
    be decoded by two workers, or in two lanes: this pass, in the server process, finds them in the
    :func:`evidence` of each request against the requests before it, and returns the marks
    (``same_call_as``, ``same_call_trace``) the request's rows gain. One request at a time, so two
    halves decoded at once still meet.
    """

    def __init__(self, size: int = REMEMBERED) -> None:
        self._recent = _Recent(size)
        self._lock = threading.Lock()

    def marks(self, found: list[tuple[int, dict[str, Any]]]) -> dict[int, dict[str, str]]:
        """The attributes each row of a request gains, by its index, from its ``evidence``."""
        rows = [row for _, row in found]
        before = [{key: row["SpanAttributes"].get(key) for key in _MARKS} for row in rows]
        with self._lock:
            mark_same_calls(rows, self._recent)
        gained = {}
        for (index, row), old in zip(found, before, strict=True):
            new = {key: value for key in _MARKS if (value := row["SpanAttributes"].get(key)) and value != old[key]}
            if new:
                gained[index] = new
        return gained


def mark_same_calls(
    rows: list[dict[str, Any]], recent: _Recent | None = None, *, earlier_requests: bool = True,
) -> None:
    """Mark every outer LLM span of a nested pair among ``rows`` (normalised ``otel_traces`` rows)
    or between ``rows`` and the LLM spans seen before (not with ``earlier_requests`` false: a
    :class:`Pairing` elsewhere does that); see the module docstring. In place."""
    if not earlier_requests:
        recent = _Recent(REMEMBERED)
    recent = _recent if recent is None else recent
    here = {(call.trace_id, call.span_id): (call, row) for row in rows if (call := _call(row)) is not None}
    if not here:
        return
    by_trace: dict[tuple[str, str], list[_Call]] = {}
    for call, _ in here.values():
        by_trace.setdefault(call.trace, []).append(call)
    remembered = recent.of_traces(by_trace)
    for trace, calls in by_trace.items():
        before = [c for c in remembered.get(trace, ()) if (c.trace_id, c.span_id) not in here]
        if len(calls) + len(before) < 2:
            continue  # one call in its trace so far: nothing to pair (most traces)
        for outer, inner in _pairs(calls + before):
            _mark(outer, inner, here)
    recent.add([call for call, _ in here.values()])
    for outer, inner in _across([call for call, _ in here.values()], recent):
        _mark(outer, inner, here)


def _call(row: dict[str, Any]) -> _Call | None:
    attrs = row["SpanAttributes"]
    if kind_of(attrs.get(semconv.OPERATION, "")) != LLM or attrs.get(semconv.PARENT_LLM_SPAN):
        return None
    start = row_time_ns(row["Timestamp"])
    tokens = attrs.get(semconv.INPUT_TOKENS), attrs.get(semconv.OUTPUT_TOKENS)
    return _Call(
        row["TraceId"], row["SpanId"], row["ParentSpanId"], start, start + int(row["Duration"]),
        attrs.get(semconv.REQUEST_MODEL) or attrs.get(semconv.RESPONSE_MODEL) or "", row["ScopeName"],
        failed=row["StatusCode"] == "Error",
        response_id=attrs.get(semconv.RESPONSE_ID) or _openinference_response_id(attrs),
        usage=(tokens[0], tokens[1]) if tokens[0] and tokens[1] else None,
        messages=attrs.get(semconv.INPUT_MESSAGES, ""),
        project=str((row.get("ResourceAttributes") or {}).get(semconv.PROJECT, "")),
        service=str(row.get("ServiceName", "")),
    )


def _openinference_response_id(attrs: dict[str, str]) -> str:
    """The provider's response id in OpenInference's ``output.value``: the response itself for a
    client span (``id``), LangChain's ``LLMResult`` for a framework span (``llm_output.id``)."""
    value = attrs.get("output.value", "")
    if attrs.get("output.mime_type") != "application/json" or not value.startswith("{"):
        return ""
    try:
        document = orjson.loads(value)
    except orjson.JSONDecodeError:
        return ""
    found = document.get("id")
    if found is None and isinstance(document.get("llm_output"), dict):
        found = document["llm_output"].get("id")
    return found if isinstance(found, str) else ""


def _pairs(calls: list[_Call]) -> list[tuple[_Call, _Call]]:
    """(outer, inner) pairs among the LLM spans of one trace, outer spans first."""
    by_id = {c.span_id: c for c in calls}
    out = []
    for call in calls:
        parent = by_id.get(call.parent_id)
        if parent is not None:
            out.append((parent, call))
    if 1 < len(calls) <= MAX_COMPARED and len({c.scope for c in calls}) > 1:
        out.extend(_unambiguous([
            (a, b) for a in calls for b in calls if a is not b and a.parent_id != b.span_id
            and b.parent_id != a.span_id and a.holds(b) and a.same_exchange(b)
        ], out))
    out.sort(key=lambda pair: (pair[0].start_ns, -pair[0].end_ns))  # attribution flows inwards
    return out


def _unambiguous(found: list[tuple[_Call, _Call]], nested: list[tuple[_Call, _Call]]) -> list[tuple[_Call, _Call]]:
    """The pairs of ``found`` in which neither span has another candidate that is not one call
    with the first (condition e): with two candidates, which one is the call is a guess."""
    related = {(a.span_id, b.span_id) for a, b in [*found, *nested]}
    inners: dict[str, list[_Call]] = {}
    outers: dict[str, list[_Call]] = {}
    for outer, inner in found:
        inners.setdefault(outer.span_id, []).append(inner)
        outers.setdefault(inner.span_id, []).append(outer)

    def chain(candidates: list[_Call]) -> bool:
        return all((x.span_id, y.span_id) in related or (y.span_id, x.span_id) in related
                   for i, x in enumerate(candidates) for y in candidates[i + 1:])

    return [(o, i) for o, i in found if chain(inners[o.span_id]) and chain(outers[i.span_id])]


def _across(calls: list[_Call], recent: _Recent) -> list[tuple[_Call, _Call]]:
    """(outer, inner) pairs of ``calls`` with spans of other traces (``calls`` among them, as
    ``recent`` holds them already): condition 3 of the module, each the only candidate either way."""
    found: dict[tuple[str, str], tuple[_Call, _Call]] = {}
    open_calls = [call for call in calls if not (call.dropped or call.paired)]
    for call, others in zip(open_calls, recent.sharing(open_calls), strict=True):
        for other in others:
            if other.dropped or other.paired:
                continue
            for outer, inner in ((call, other), (other, call)):
                if outer.holds(inner) and outer.same_exchange_across(inner):
                    found[(outer.span_id, inner.span_id)] = (outer, inner)
    inners: dict[str, int] = {}
    outers: dict[str, int] = {}
    for outer, inner in found.values():
        inners[outer.span_id] = inners.get(outer.span_id, 0) + 1
        outers[inner.span_id] = outers.get(inner.span_id, 0) + 1
    return [(o, i) for o, i in found.values() if inners[o.span_id] == 1 and outers[i.span_id] == 1]


def _mark(outer: _Call, inner: _Call, here: dict[tuple[str, str], tuple[_Call, dict[str, Any]]]) -> None:
    outer_here = here.get((outer.trace_id, outer.span_id))
    inner_here = here.get((inner.trace_id, inner.span_id))
    if outer_here is not None:
        outer.dropped = outer.paired = inner.paired = True
        _point(outer, outer_here[1]["SpanAttributes"], inner)
        if inner_here is not None:
            _fill(inner_here[1]["SpanAttributes"], outer_here[1]["SpanAttributes"])
    elif inner_here is not None and not outer.dropped:
        # the outer row arrived first and is counted already: the inner one is the repeat
        inner.dropped = inner.paired = outer.paired = True
        _point(inner, inner_here[1]["SpanAttributes"], outer)


def _point(repeat: _Call, attrs: dict[str, str], counted: _Call) -> None:
    """Mark ``repeat`` (whose attributes are ``attrs``) as the repeat of ``counted``'s call, once:
    the first pair found wins."""
    if semconv.SAME_CALL_AS in attrs:
        return
    attrs[semconv.SAME_CALL_AS] = counted.span_id
    if counted.trace_id != repeat.trace_id:
        attrs[semconv.SAME_CALL_TRACE] = counted.trace_id


def _fill(inner: dict[str, str], outer: dict[str, str]) -> None:
    for key in ATTRIBUTION_KEYS:
        if key not in inner and outer.get(key):
            inner[key] = outer[key]


def counted_call(row: Mapping[str, Any]) -> tuple[str, str]:
    """The (trace id, span id) of the row that counts the call ``row`` (an ``otel_traces`` row)
    describes: the span it repeats when it is the marked half of a pair (in another trace when
    the pair spans two), else its own. Detections found on either half of a pair are the call's,
    so they carry these ids."""
    attrs = row.get("SpanAttributes") or {}
    trace_id = str(row["TraceId"])
    if attrs.get(semconv.SAME_CALL_AS):
        return str(attrs.get(semconv.SAME_CALL_TRACE) or trace_id), str(attrs[semconv.SAME_CALL_AS])
    if attrs.get(semconv.PARENT_LLM_SPAN) and kind_of(attrs.get(semconv.OPERATION, "")) == LLM:
        return trace_id, str(attrs[semconv.PARENT_LLM_SPAN])  # the SDK's span over it is the counted row
    return trace_id, str(row["SpanId"])

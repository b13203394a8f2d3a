"""A past week of production traffic, as the OTLP/JSON an SDK would have sent, for the demo's backfill.

The demo posts these spans to the collector's ``/v1/traces`` like any exporter, so the typed
view, rollups and inline detectors derive from them exactly as from live spans. The shape is a
real service's, not a load test's:

- a diurnal curve (quiet nights, a mid-afternoon UTC peak, weekends at half);
- two services: ``support-bot`` (the routes the live app serves, OpenAI models) and
  ``search-api`` (Anthropic), each request one trace: request span, retrieval, rerank, model call;
- tenants of very different sizes, users, and sessions of a few turns (``gen_ai.conversation.id``);
- a release of ``support-bot`` mid-week (so the judge trends compare versions);
- an error rate under 1%, answers that loop, JSON cut short, refusals (the detectors' hits);
- one incident (:class:`Incident`) in the last day: the provider behind ``support-bot`` failing
  most calls for half an hour while users retry, then its users back for half an hour, every call
  answered, which the alert rules page for and then resolve (a quiet hour after it, which a
  service of the test's 150 requests a day has, would leave it firing: silence never resolves);
- users' thumbs (:class:`Feedback`) on a few percent of the requests, a minute or so after the
  answer, mostly down where the answer failed, looped, was cut short or refused.

Everything is drawn from a seeded generator: the same arguments give the same spans.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from infersight.sdk import semconv

from ._fake_llm import _WORDS  # the live model's vocabulary, so past and live answers read alike

SESSION_ID = semconv.CONVERSATION_ID  # what the SDK writes; the collector maps session.id and others to it
TENANTS = ("acme", "globex", "initech", "umbrella", "hooli")
TENANT_WEIGHTS = (8, 4, 2, 1, 1)
HOUR_S = 3600
DAY_S = 86400


@dataclass(frozen=True)
class Service:
    """One application: its routes and the model each calls."""

    name: str
    routes: tuple[tuple[str, str, str], ...]  # (route, provider, model)
    share: float  # of all requests


SUPPORT_BOT = Service("support-bot", (("support.answer", "openai", "gpt-4o-mini"),
                                      ("sales.email", "openai", "gpt-4o"),
                                      ("search.summarize", "anthropic", "claude-3-5-haiku-latest")), 0.75)
SEARCH_API = Service("search-api", (("search.query", "anthropic", "claude-3-5-haiku-latest"),), 0.25)
SERVICES = (SUPPORT_BOT, SEARCH_API)


@dataclass(frozen=True)
class Incident:
    """Most of one service's model calls failing for a while, users retrying meanwhile."""

    service: str
    start_s: float
    minutes: int = 30
    error_share: float = 0.7
    min_requests_per_min: float = 3.0  # the retries: failing users ask again
    recovery_minutes: int = 30  # then the users who gave up come back, and every call is answered
    recovery_requests_per_min: float = 1.0

    @property
    def end_s(self) -> float:
        return self.start_s + self.minutes * 60

    @property
    def recovered_s(self) -> float:
        return self.end_s + self.recovery_minutes * 60

    def covers(self, service: str, t_s: float) -> bool:
        return service == self.service and self.start_s <= t_s < self.end_s

    def recovering(self, service: str, t_s: float) -> bool:
        return service == self.service and self.end_s <= t_s < self.recovered_s


def past_incident(now_s: float) -> Incident:
    """The incident: ``support-bot`` at the latest 14:10 UTC (a busy hour) that ended two hours or
    more before ``now_s``, unless that one began 23 hours or more before it (from 13:10 to 16:40
    UTC): then at the latest ten minutes that end two hours before it (10:40 to 14:10 UTC, busy
    hours too). So its alert's events fall in the last day, which the Alerts page shows by default,
    and out of the last hour, which the live collector's rules read."""
    incident = Incident(SUPPORT_BOT.name, math.floor(now_s / DAY_S) * DAY_S + 14 * HOUR_S + 10 * 60)
    latest = now_s - 2 * HOUR_S - (incident.end_s - incident.start_s)  # the latest start ending 2 h before now
    if incident.start_s > latest:
        incident = replace(incident, start_s=incident.start_s - DAY_S)
    if incident.start_s <= now_s - DAY_S + HOUR_S:  # its firing and resolving would be a day old, or nearly
        incident = replace(incident, start_s=math.floor(latest / 600) * 600)
    return incident


def hourly_weight(t_s: float) -> float:
    """Relative request rate at ``t_s``: 1.0 at the weekday peak (15:00 UTC), ~0.15 at night."""
    hour = (t_s % DAY_S) / HOUR_S
    weekday = int(t_s // DAY_S + 3) % 7  # 1970-01-01 was a Thursday; Monday is 0
    curve = 0.15 + 0.85 * math.exp(-(((hour - 15.0) / 4.5) ** 2))
    return curve * (0.5 if weekday >= 5 else 1.0)


_MEAN_WEIGHT = sum(hourly_weight(h * HOUR_S + 4 * DAY_S) for h in range(24)) / 24  # a Monday


def requests_per_hour(service: Service, t_s: float, per_day: float) -> float:
    """Mean requests an hour of ``service`` at ``t_s`` for ``per_day`` requests on a weekday (all services)."""
    return per_day * service.share / 24 * hourly_weight(t_s) / _MEAN_WEIGHT


@dataclass
class _Ids:
    rng: random.Random

    def trace(self) -> bytes:
        return self.rng.getrandbits(128).to_bytes(16, "big")

    def span(self) -> bytes:
        return self.rng.getrandbits(64).to_bytes(8, "big")


def _value(v: Any) -> AnyValue:
    if isinstance(v, bool):
        return AnyValue(bool_value=v)
    if isinstance(v, int):
        return AnyValue(int_value=v)
    if isinstance(v, float):
        return AnyValue(double_value=v)
    if isinstance(v, (list, tuple)):
        return AnyValue(array_value=ArrayValue(values=[_value(x) for x in v]))
    return AnyValue(string_value=str(v))


def _attrs(attrs: dict[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=k, value=_value(v)) for k, v in attrs.items() if v is not None]


def _span(trace_id: bytes, span_id: bytes, parent: bytes | None, name: str, start_s: float, end_s: float,
          attrs: dict[str, Any], *, kind: Span.SpanKind.ValueType = Span.SPAN_KIND_INTERNAL,
          error: str | None = None) -> Span:
    return Span(trace_id=trace_id, span_id=span_id, parent_span_id=parent or b"", name=name, kind=kind,
                start_time_unix_nano=int(start_s * 1e9), end_time_unix_nano=int(end_s * 1e9),
                attributes=_attrs(attrs),
                status=Status(code=Status.STATUS_CODE_ERROR, message=error) if error else None)


_TOPICS = ("refund", "invoice", "plan", "login", "export", "api", "sso", "quota", "webhook", "billing")


FEEDBACK_SHARE = 0.03  # of the requests that went well: most users never click
TROUBLED_FEEDBACK_SHARE = 0.3  # of those that failed or answered badly: an annoyed user clicks
_UP_COMMENTS = ("", "", "", "thanks", "helpful", "exactly what I needed")
_DOWN_COMMENTS = ("", "", "wrong answer", "it kept repeating itself", "the answer stopped halfway",
                  "did not answer my question")


@dataclass(frozen=True)
class Feedback:
    """One user's thumbs on one past request, given ``at_s`` (shortly after its answer)."""

    trace_id: str  # 32 hex digits, as the trace's spans carry it
    at_s: float
    thumbs: str  # "up" or "down"
    user: str
    comment: str

    def item(self) -> dict[str, str]:
        """The item as ``POST /api/v1/feedback`` takes it; its id follows from the trace, so a
        redone backfill's feedback is counted once."""
        item = {"id": f"demo-{self.trace_id}", "trace_id": self.trace_id, "thumbs": self.thumbs,
                "user_id": self.user}
        return item | ({"comment": self.comment} if self.comment else {})


@dataclass(frozen=True)
class Turn:
    """One request of a session."""

    service: Service
    route: str
    provider: str
    model: str
    tenant: str
    user: str
    session: str
    at_s: float
    version: str


class WeekOfTraffic:
    """The requests of ``[start_s, end_s)`` and their spans, in time order by session start.

    Args:
        start_s, end_s: the window (Unix seconds).
        per_day: requests on a weekday, all services together (weekends about half).
        incident: the outage to play, if it falls in the window.
        release_s: when ``support-bot`` went from 1.4.0 to 1.5.0.
        error_rate: share of model calls that fail outside the incident (429s and 5xx).
        services: the services whose requests to make.
        seed: the same seed gives the same spans.
    """

    def __init__(self, start_s: float, end_s: float, *, per_day: float, incident: Incident | None = None,
                 release_s: float | None = None, error_rate: float = 0.008,
                 services: tuple[Service, ...] = SERVICES, seed: int = 11) -> None:
        self.services = services
        self.start_s = start_s
        self.end_s = end_s
        self.per_day = per_day
        self.incident = incident
        self.release_s = release_s if release_s is not None else (start_s + end_s) / 2
        self.error_rate = error_rate
        self._rng = random.Random(seed)
        self._ids = _Ids(random.Random(seed + 1))
        self._feedback_rng = random.Random(seed + 2)  # apart, so feedback leaves the spans as they were
        self.feedback: list[Feedback] = []
        """The users' thumbs on the requests made so far by :meth:`spans` (and :meth:`bodies`), in order."""

    def turns(self) -> Iterator[Turn]:
        """Every request of the window, hour by hour (sessions started in an hour, all their turns)."""
        rng = self._rng
        hour = math.floor(self.start_s / HOUR_S) * HOUR_S
        while hour < self.end_s:
            for service in self.services:
                rate = requests_per_hour(service, hour + HOUR_S / 2, self.per_day)
                yield from self._hour_of(service, hour, rate, rng)
            hour += HOUR_S

    def expected_requests(self) -> int:
        """About how many requests :meth:`turns` yields (the mean; for a progress bar)."""
        total = 0.0
        hour = math.floor(self.start_s / HOUR_S) * HOUR_S
        while hour < self.end_s:
            share = (min(hour + HOUR_S, self.end_s) - max(hour, self.start_s)) / HOUR_S
            total += share * sum(requests_per_hour(s, hour + HOUR_S / 2, self.per_day) for s in self.services)
            hour += HOUR_S
        incident = self.incident
        if incident is not None and any(s.name == incident.service for s in self.services):
            total += incident.minutes * incident.min_requests_per_min
            total += incident.recovery_minutes * incident.recovery_requests_per_min
        return round(total)

    def _hour_of(self, service: Service, hour: float, rate: float, rng: random.Random) -> Iterator[Turn]:
        turns_per_session = 2.5
        sessions = _poisson(rng, rate / turns_per_session)
        out: list[Turn] = []
        for _ in range(sessions):
            out.extend(self._session(service, hour + rng.random() * HOUR_S, rng))
        incident = self.incident
        if incident is not None and incident.service == service.name:
            # retries during the incident (users ask again while the provider fails), then the
            # users who gave up, back once it answers
            for lo, hi, per_min in ((incident.start_s, incident.end_s, incident.min_requests_per_min),
                                    (incident.end_s, incident.recovered_s, incident.recovery_requests_per_min)):
                lo, hi = max(hour, lo), min(hour + HOUR_S, hi)
                extra = _poisson(rng, max(0.0, hi - lo) / 60 * per_min)
                for _ in range(extra):
                    out.extend(self._session(service, lo + rng.random() * (hi - lo), rng, turns=1))
        yield from (t for t in sorted(out, key=lambda t: t.at_s) if self.start_s <= t.at_s < self.end_s)

    def _session(self, service: Service, at_s: float, rng: random.Random, turns: int | None = None) -> list[Turn]:
        tenant = rng.choices(TENANTS, weights=TENANT_WEIGHTS)[0]
        user = f"{tenant}-u{int(rng.paretovariate(1.2)) % 60}"
        session = f"s-{rng.getrandbits(48):012x}"
        route, provider, model = rng.choice(service.routes)
        n = turns if turns is not None else 1 + min(int(rng.expovariate(1 / 2.0)), 7)  # 2.5 turns on average
        version = "1.5.0" if at_s >= self.release_s else "1.4.0"
        if service is SEARCH_API:
            version = "2.2.1"
        out = []
        for _ in range(n):
            out.append(Turn(service, route, provider, model, tenant, user, session, at_s, version))
            at_s += 20 + rng.expovariate(1 / 70)
        return out

    def spans(self, turn: Turn) -> list[Span]:
        """One request's trace: request span, retrieval, rerank, model call (OTLP spans)."""
        rng, ids = self._rng, self._ids
        trace_id, root = ids.trace(), ids.span()
        base = {semconv.TENANT: turn.tenant, semconv.USER: turn.user, semconv.ROUTE: turn.route,
                SESSION_ID: turn.session}
        question = " ".join(rng.choices(_TOPICS, k=rng.randint(3, 14)))
        t = turn.at_s
        queue_wait = rng.expovariate(1 / 0.03)  # milliseconds: the service runs within its capacity
        t0 = t + queue_wait
        queued = {semconv.QUEUE_WAIT_S: queue_wait, semconv.QUEUE_SOURCE: "mark_started"}
        retrieval_s = rng.lognormvariate(math.log(0.025), 0.4)
        candidates = rng.choice((8, 12, 20, 40))
        rerank_s = candidates * rng.uniform(0.0004, 0.0008)
        top_k = 4
        docs = [{"score": round(0.92 - i * 0.07, 2), "content": f"article {i} about {question[:30]}"}
                for i in range(top_k)]
        spans = [
            _span(trace_id, ids.span(), root, "retrieval", t0, t0 + retrieval_s, {
                semconv.DATA_SOURCE: "kb-articles", semconv.OPERATION: "retrieval", **base,
                semconv.RETRIEVAL_RETURNED: top_k, semconv.RETRIEVAL_QUERY: question,
                semconv.RETRIEVAL_DOCUMENTS: json.dumps(docs)}, kind=Span.SPAN_KIND_CLIENT),
            _span(trace_id, ids.span(), root, "rerank bge-reranker-v2", t0 + retrieval_s,
                  t0 + retrieval_s + rerank_s, {
                      semconv.OPERATION: "rerank", semconv.REQUEST_MODEL: "bge-reranker-v2", **base,
                      semconv.RERANK_CANDIDATES: candidates, semconv.RERANK_RETURNED: 2,
                      semconv.RERANK_S_PER_CANDIDATE: rerank_s / candidates}),
        ]
        llm_start = t0 + retrieval_s + rerank_s
        llm, llm_end, troubled = self._llm_span(turn, trace_id, root, {**base, **queued}, question, llm_start)
        spans.append(llm)
        spans.append(_span(trace_id, root, None, f"request {turn.route}", t, llm_end + 0.002, base))
        self._give_feedback(turn, trace_id, llm_end, troubled)
        return spans

    def _give_feedback(self, turn: Turn, trace_id: bytes, answered_s: float, troubled: bool) -> None:
        rng = self._feedback_rng
        if rng.random() >= (TROUBLED_FEEDBACK_SHARE if troubled else FEEDBACK_SHARE):
            return
        down = rng.random() < (0.85 if troubled else 0.1)
        comment = rng.choice(_DOWN_COMMENTS if down else _UP_COMMENTS)
        at_s = min(answered_s + 5 + rng.expovariate(1 / 60), self.end_s)  # read the answer, then clicked
        self.feedback.append(Feedback(trace_id.hex(), at_s, "down" if down else "up", turn.user, comment))

    def _llm_span(self, turn: Turn, trace_id: bytes, parent: bytes, base: dict[str, Any], question: str,
                  start: float) -> tuple[Span, float, bool]:
        """The model call's span, its end, and whether it failed or answered badly."""
        rng = self._rng
        input_tokens = 120 + len(question.split()) * 2 + rng.randint(0, 400)
        incident = self.incident
        failing = incident.error_share if incident is not None and incident.covers(turn.service.name, start) else 0
        # just after the incident every call is answered: an error then would hold its alert
        background = 0.0 if incident is not None and incident.recovering(turn.service.name, start) else self.error_rate
        attrs: dict[str, Any] = {semconv.OPERATION: "chat", semconv.PROVIDER: turn.provider,
                                 semconv.REQUEST_MODEL: turn.model, **base,
                                 semconv.INPUT_MESSAGES: _messages("user", question)}
        name = f"chat {turn.model}"
        roll = rng.random()
        if roll < max(failing, background):
            overloaded = failing > 0 or roll < background * 0.4
            error = "InternalServerError" if overloaded else "RateLimitError"
            end = start + (rng.uniform(2.0, 8.0) if overloaded else rng.uniform(0.05, 0.3))
            attrs.update({semconv.ERROR_TYPE: error, semconv.ERROR_CLASS: "transient"})
            message = "Error code: 503 - upstream overloaded" if overloaded else "Error code: 429 - rate limited"
            span = _span(trace_id, self._ids.span(), parent, name, start, end, attrs, kind=Span.SPAN_KIND_CLIENT,
                         error=message)
            return span, end, True
        output_tokens = max(8, int(rng.lognormvariate(math.log(90), 0.6)))
        finish, text = "stop", " ".join(rng.choices(_WORDS, k=min(output_tokens, 60)))
        quirk, troubled = rng.random(), True
        if turn.route == "sales.email":
            text = json.dumps({"subject": "Your plan", "body": text, "tags": ["billing"]})
            attrs[semconv.OUTPUT_TYPE] = "json"
            if quirk < 0.03:
                text, finish, output_tokens = text[: len(text) // 2], "length", 400
            else:
                troubled = False
        elif quirk < 0.012:
            text = text + " " + " ".join(["Let me check that again for you."] * 25)
            finish, output_tokens = "length", 400
        elif quirk < 0.022:
            text, output_tokens = "I'm sorry, but I can't help with that request.", 12
        else:
            troubled = False
        ttft = rng.lognormvariate(math.log(0.35 if turn.model != "gpt-4o" else 0.6), 0.35)
        tpot = rng.uniform(0.008, 0.02)
        end = start + ttft + output_tokens * tpot
        attrs.update({
            semconv.RESPONSE_MODEL: turn.model, semconv.FINISH_REASONS: [finish],
            semconv.INPUT_TOKENS: input_tokens, semconv.OUTPUT_TOKENS: output_tokens,
            semconv.TTFT_S: ttft, semconv.TPOT_S: tpot,
            semconv.OUTPUT_MESSAGES: _messages("assistant", text, finish),
        })
        if turn.route == "support.answer":  # streamed: inter-token latency is measured
            attrs.update({semconv.PREFILL_S: ttft, semconv.STREAM_CHUNKS: output_tokens + 2, semconv.ITL_STALLS: 0,
                          semconv.ITL_MAX_S: tpot * rng.uniform(2, 6), semconv.ITL_P50_S: tpot * 0.9,
                          semconv.ITL_P95_S: tpot * 1.8})
        span = _span(trace_id, self._ids.span(), parent, name, start, end, attrs, kind=Span.SPAN_KIND_CLIENT)
        return span, end, troubled

    def bodies(self, requests_per_body: int = 100) -> Iterator[tuple[int, ExportTraceServiceRequest]]:
        """OTLP ``ExportTraceServiceRequest`` bodies of the window, with how many requests each holds."""
        batch: dict[tuple[str, str], list[Span]] = {}
        count = 0
        for turn in self.turns():
            batch.setdefault((turn.service.name, turn.version), []).extend(self.spans(turn))
            count += 1
            if count == requests_per_body:
                yield count, _body(batch)
                batch, count = {}, 0
        if count:
            yield count, _body(batch)


def _body(batch: dict[tuple[str, str], list[Span]]) -> ExportTraceServiceRequest:
    scope = InstrumentationScope(name="infersight.demo.backfill")
    return ExportTraceServiceRequest(resource_spans=[
        ResourceSpans(resource=Resource(attributes=_attrs({
            "service.name": service, "service.version": version, "service.instance.id": f"{service}-{version}"})),
            scope_spans=[ScopeSpans(scope=scope, spans=spans)])
        for (service, version), spans in batch.items()
    ])


def _messages(role: str, text: str, finish: str | None = None) -> str:
    message: dict[str, Any] = {"role": role, "parts": [{"type": "text", "content": text}]}
    if finish:
        message["finish_reason"] = finish
    return json.dumps([message])


def _poisson(rng: random.Random, mean: float) -> int:
    # Knuth's method is fine at these means (under a few hundred); a normal beyond.
    if mean > 200:
        return max(0, round(rng.gauss(mean, math.sqrt(mean))))
    limit, k, p = math.exp(-mean), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1

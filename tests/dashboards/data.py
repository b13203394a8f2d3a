"""Rows for the dashboards' tests: OTLP-shaped ``otel_traces`` rows (the materialized views make
``llm_spans``, the rollups and ``llm_span_extras`` from them), detections, judge scores, alerts."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from infersight.collector import Store, encode_rows

NS = 1_000_000_000
HOUR_NS = 3600 * NS


def ts(unix_ns: int) -> str:
    return f"{unix_ns // NS:010d}.{unix_ns % NS:09d}"


def ms_text(unix_ns: int) -> str:
    """A DateTime64(3) value as the evaluator writes it."""
    from datetime import datetime, timezone

    return datetime.fromtimestamp(unix_ns / NS, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}], ensure_ascii=False)


def span_row(
    project: str, trace_id: str, span_id: str, start_ns: int, duration_s: float, attrs: dict[str, Any], *,
    name: str, parent: str = "", service: str = "support-bot", version: str = "v1", error: bool = False,
    message: str = "",
) -> dict[str, Any]:
    return {
        "Timestamp": ts(start_ns), "TraceId": trace_id, "SpanId": span_id, "ParentSpanId": parent,
        "TraceState": "", "SpanName": name, "SpanKind": "Client", "ServiceName": service,
        "ResourceAttributes": {"service.name": service, "service.version": version, "infersight.project": project},
        "ScopeName": "infersight.sdk", "ScopeVersion": "", "SpanAttributes": {k: str(v) for k, v in attrs.items()},
        "Duration": int(duration_s * NS), "StatusCode": "Error" if error else "Unset", "StatusMessage": message,
        "Events.Timestamp": [], "Events.Name": [], "Events.Attributes": [],
        "Links.TraceId": [], "Links.SpanId": [], "Links.TraceState": [], "Links.Attributes": [],
    }


@dataclass
class Call:
    """One request of a RAG app: an HTTP span with retrieval, rerank and one LLM call under it."""

    project: str
    start_ns: int
    trace_id: str
    tenant: str = "acme"
    route: str = "support.answer"
    model: str = "gpt-4o-mini"
    service: str = "support-bot"
    version: str = "v1"
    user: str = "u-1"
    input_tokens: int = 400
    output_tokens: int = 120
    cost_usd: float = 0.0012
    queue_wait_s: float = 0.05
    prefill_s: float = 0.2
    decode_s: float = 1.0
    itl_p50_s: float = 0.02
    itl_p95_s: float = 0.05
    candidates: int = 40
    retrieval_s: float = 0.03
    rerank_s: float = 0.08
    error: bool = False
    prompt: str = "Where is my invoice?"
    output: str = "Your invoice is in the billing tab."
    finish_reason: str = "stop"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def llm_span_id(self) -> str:
        return self.trace_id[:13] + "003"

    def rows(self) -> list[dict[str, Any]]:
        root, retrieval, rerank, llm = (self.trace_id[:13] + f"{i:03d}" for i in range(4))
        common = {"infersight.tenant.id": self.tenant, "infersight.route": self.route, "infersight.user.id": self.user}
        t0 = self.start_ns
        t_llm = t0 + int((self.retrieval_s + self.rerank_s + 0.01) * NS)
        ttft = self.prefill_s
        llm_s = ttft + self.decode_s
        total = self.retrieval_s + self.rerank_s + 0.01 + llm_s + 0.005
        llm_attrs = {
            **common,
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": self.model,
            "gen_ai.response.model": self.model, "gen_ai.usage.input_tokens": self.input_tokens,
            "gen_ai.usage.output_tokens": self.output_tokens, "infersight.cost.usd": repr(self.cost_usd),
            "gen_ai.response.time_to_first_chunk": repr(ttft), "infersight.queue.wait_s": repr(self.queue_wait_s),
            "infersight.queue.source": "argument", "infersight.prefill_s": repr(self.prefill_s),
            "infersight.itl.p50_s": repr(self.itl_p50_s), "infersight.itl.p95_s": repr(self.itl_p95_s),
            "infersight.itl.max_s": repr(self.itl_p95_s * 2),
            "infersight.tpot_s": repr(self.decode_s / max(self.output_tokens - 1, 1)),
            "gen_ai.response.finish_reasons": json.dumps([self.finish_reason]),
            "gen_ai.input.messages": messages("user", self.prompt),
            "gen_ai.output.messages": messages("assistant", self.output),
            **self.extra,
        }
        if self.error:
            llm_attrs.update({"error.type": "RateLimitError", "infersight.error.class": "transient"})
        svc = {"service": self.service, "version": self.version}
        return [
            span_row(self.project, self.trace_id, root, t0, total, common, name="POST /answer", **svc),
            span_row(self.project, self.trace_id, retrieval, t0 + NS // 1000, self.retrieval_s,
                     {**common, "gen_ai.operation.name": "retrieval", "gen_ai.request.model": "bge-small",
                      "gen_ai.data_source.id": "kb"}, name="retrieval kb", parent=root, **svc),
            span_row(self.project, self.trace_id, rerank, t0 + int((self.retrieval_s + 0.002) * NS), self.rerank_s,
                     {**common, "gen_ai.operation.name": "rerank", "gen_ai.request.model": "bge-reranker",
                      "infersight.rerank.candidates": self.candidates}, name="rerank bge-reranker", parent=root, **svc),
            span_row(self.project, self.trace_id, llm, t_llm, llm_s, llm_attrs, name=f"chat {self.model}",
                     parent=root, error=self.error, message="429 Too Many Requests" if self.error else "", **svc),
        ]


def detection_row(call: Call, detector: str, label: str, *, score: float = 1.0, evidence: str = "",
                  version: str = "1") -> dict[str, Any]:
    return {
        "project": call.project, "ts": ts(call.start_ns), "trace_id": call.trace_id, "span_id": call.llm_span_id,
        "service": call.service, "tenant": call.tenant, "route": call.route, "model": call.model,
        "detector": detector, "version": version, "label": label, "score": score, "evidence": evidence,
    }


def judge_row(call: Call, score: int, *, rubric: str = "helpfulness", rubric_version: int = 1,
              judge_model: str = "judge-small", reason: str = "ok", sample_rate: float = 1.0) -> dict[str, Any]:
    return {
        "project": call.project, "ts": ts(call.start_ns), "judged_at": ts(call.start_ns + 60 * NS),
        "trace_id": call.trace_id, "span_id": call.llm_span_id, "tenant": call.tenant, "route": call.route,
        "service_version": call.version, "judge_model": judge_model, "rubric_id": rubric,
        "rubric_version": rubric_version, "score": score, "reason": reason, "judge_cost_usd": 0.0001,
        "judge_latency_s": 0.4, "sample_rate": sample_rate, "source": "sample",
    }


def alert_rows(project: str, at_ns: int, *, name: str = "error_spike", labels: dict[str, str] | None = None,
               summary: str = "support-bot: 12.0% of 500 LLM calls failed",
               link: str = "/traces?service=support-bot&status=error",
               firing: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """An ``alerts`` state row and its ``alert_events`` row."""
    labels = labels or {"project": project, "service": "support-bot"}
    fingerprint = f"{abs(hash((project, name, tuple(sorted(labels.items()))))):016x}"
    state = {
        "project": project, "fingerprint": fingerprint, "name": name, "status": "firing" if firing else "resolved",
        "labels": labels, "summary": summary, "details": "Burn 24x over 1 h.", "numbers": {"error_rate": 0.12},
        "link": link, "starts_at": ms_text(at_ns), "ends_at": None if firing else ms_text(at_ns + HOUR_NS),
        "last_notified_at": ms_text(at_ns), "updated_at": ms_text(at_ns),
    }
    event = {
        "project": project, "ts": ms_text(at_ns), "fingerprint": fingerprint, "name": name,
        "event": "firing", "labels": labels, "summary": summary, "details": "Burn 24x over 1 h.",
        "numbers": {"error_rate": 0.12}, "link": link, "delivered": ["webhook"], "failed": [],
    }
    return state, event


def insert(store: Store, table: str, rows: list[dict[str, Any]]) -> None:
    if rows:
        store.insert(table, encode_rows(rows))


def insert_calls(store: Store, calls: list[Call]) -> None:
    insert(store, "otel_traces", [row for call in calls for row in call.rows()])


def trace_id(rng: random.Random) -> str:
    return f"{rng.getrandbits(128):032x}"


def demo_calls(project: str, end_ns: int, count: int = 400, *, span_s: int = 7 * 86400, seed: int = 7) -> list[Call]:
    """``count`` requests spread over ``span_s`` before ``end_ns``: four tenants, three routes,
    two models and app versions, a few errors, and a slow afternoon for one route."""
    rng = random.Random(seed)
    tenants = ["acme", "globex", "initech", "umbrella"]
    routes = ["support.answer", "support.triage", "search.summarize"]
    calls = []
    for i in range(count):
        start = end_ns - int(span_s * NS * (i + 0.5) / count)
        route = routes[i % 3]
        model = "gpt-4o" if i % 5 == 0 else "gpt-4o-mini"
        slow = route == "search.summarize" and (start // HOUR_NS) % 24 in (14, 15)
        tokens_in = rng.randint(200, 3000) * (8 if i % 97 == 0 else 1)
        tokens_out = rng.randint(40, 600)
        cost = (tokens_in * (2.5e-6 if model == "gpt-4o" else 1.5e-7)
                + tokens_out * (1e-5 if model == "gpt-4o" else 6e-7))
        calls.append(Call(
            project=project, start_ns=start, trace_id=trace_id(rng), tenant=tenants[rng.randrange(4) if i % 7 else 0],
            route=route, model=model, version="v2" if start > end_ns - span_s * NS // 3 else "v1",
            user=f"u-{rng.randrange(40)}", input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=cost,
            queue_wait_s=rng.uniform(0.01, 0.3) * (6 if slow else 1), prefill_s=rng.uniform(0.1, 0.5),
            decode_s=tokens_out * rng.uniform(0.01, 0.03), itl_p50_s=rng.uniform(0.01, 0.03),
            itl_p95_s=rng.uniform(0.03, 0.12), candidates=rng.randint(20, 120), retrieval_s=rng.uniform(0.01, 0.08),
            rerank_s=rng.uniform(0.02, 0.3), error=rng.random() < 0.03,
            prompt=f"Question {i}: where is my invoice for order {rng.randrange(10_000)}?",
            output=f"Answer {i}: your invoice is in the billing tab.",
        ))
    return calls


def demo_extras(calls: list[Call]) -> dict[str, list[dict[str, Any]]]:
    """Detections, judge scores and alerts to go with :func:`demo_calls`."""
    rng = random.Random(11)
    detections, scores = [], []
    json_labels = ["json.truncated", "json.malformed", "json.wrapped", "json.schema_invalid"]
    for i, call in enumerate(calls):
        if i % 23 == 0:
            detections.append(detection_row(call, "repetition", "repetition.loop", evidence="the the the the"))
        if i % 17 == 0:
            detections.append(detection_row(call, "json", json_labels[i % 4], evidence='{"a": 1,'))
        if i % 31 == 0:
            detections.append(detection_row(call, "refusal", "refusal.phrase", evidence="I can't help with that"))
        if i % 41 == 0:
            detections.append(detection_row(call, "truncation", "truncation.length", evidence="…and then"))
        if i % 97 == 0:
            detections.append(detection_row(call, "context_stuffing", "context_stuffing.input_tokens",
                                            evidence=f"{call.input_tokens} input tokens, route p95 3000 ($0.42)"))
        if i % 4 == 0:
            base = 4.2 if call.version == "v2" else 3.8
            scores.append(judge_row(call, max(1, min(5, round(rng.gauss(base, 0.8))))))
    drift = detection_row(calls[len(calls) // 5], "drift", "drift.input_tokens", score=0.82,
                          evidence="input tokens moved: Wasserstein 0.41 (threshold 0.2); p50 410 -> 980")
    drift["route"] = "search.summarize"
    detections.append(drift)
    state, event = alert_rows(calls[0].project, calls[3].start_ns)
    return {"detections": detections, "judge_scores": scores, "alerts": [state], "alert_events": [event]}


def judge_rows_for(call: Call, *, score: int = 4, reason: str = "ok") -> list[dict[str, Any]]:
    return [judge_row(call, score, reason=reason)]

"""Every figure a user reads agrees with one reference computed here from the raw spans.

A mixed dataset goes in through the real OTLP route: RAG requests (retrieval, rerank, an LLM
call, sometimes a tool) with failures in every kind, a provider client span nested in our LLM
span and OpenInference's span over a GenAI one (one call seen twice, each), streams that reported
no usage, embeddings that cost money, an unpriced model, and two tenants whose users share an
id, calls whose usage the SDK estimated (priced apart) and half estimates (input unknown: not
priced), and LangChain over a client without a request span (two traces, one call: the client's
root span is counted, LangChain's trace shows its span as the same call, with a link). The
Overview, the Latency, Cost, Quality and Traces pages, their ``/api/v1`` twins,
``/api/v1/summary``, the daily digest and the weekly report must all show the reference's calls,
errors, error rate, tokens, cost and latency, on both store backends: unknown tokens and cost as
unknown (null, "–", "unpriced"), never 0, and the same money as the same number and string.
"""

from __future__ import annotations

import html
import json
import math
import random
import re
import time
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from fastapi.testclient import TestClient
from genai_prices import Usage, calc_price

from infersight.collector import Settings, create_app
from infersight.collector.alerts._digest import build_digest
from infersight.collector.store import ClickHouseStore, Store, percentiles, usd_text
from infersight.dashboards._report import weekly_data
from tests.conftest import wait_for

NS = 10**9
PRICED, UNPRICED = "gpt-4o-mini", "in-house-llm-7b"
INSTRUMENTATION = "openinference.instrumentation"


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent: str
    start_ns: int
    duration_s: float
    attributes: dict[str, Any]
    error: bool = False
    scope: str = ""

    def otlp(self) -> dict[str, Any]:
        def value(v: Any) -> dict[str, Any]:
            if isinstance(v, bool):
                return {"boolValue": v}
            if isinstance(v, int):
                return {"intValue": str(v)}
            if isinstance(v, float):
                return {"doubleValue": v}
            return {"stringValue": str(v)}

        return {
            "traceId": self.trace_id, "spanId": self.span_id, "parentSpanId": self.parent, "name": "span",
            "kind": 3, "startTimeUnixNano": str(self.start_ns),
            "endTimeUnixNano": str(self.start_ns + round(self.duration_s * NS)),
            "attributes": [{"key": k, "value": value(v)} for k, v in self.attributes.items()],
            "status": {"code": 2} if self.error else {},
        }


@dataclass
class Call:
    """What the reference knows of one LLM call, read from the span that describes it."""

    trace_id: str
    tenant: str
    user: str
    model: str
    error: bool
    input_tokens: int | None  # None: not reported
    output_tokens: int | None
    cost_usd: Decimal | None  # known cost; None: unknown, or estimated
    estimated_usd: Decimal | None  # a cost from the SDK's estimated token counts
    duration_s: float

    @property
    def no_usage(self) -> bool:
        return self.input_tokens is None and self.output_tokens is None


def price(model: str, i: int, o: int) -> Decimal | None:
    """The exact price genai-prices gives (a Decimal), None for a model it does not know."""
    if model != PRICED:
        return None
    return calc_price(Usage(input_tokens=i, output_tokens=o), model, provider_id="openai").total_price


def call_of(span: Span, tenant: str, user: str, model: str) -> Call:
    """The call as the raw span says it: a cost the span carries (the SDK's) or genai-prices'
    for its tokens; no price without the input count; an estimate's cost apart from known cost."""
    a = span.attributes
    i, o = a.get("gen_ai.usage.input_tokens"), a.get("gen_ai.usage.output_tokens")
    estimated = a.get("infersight.usage.estimated") is True
    if "infersight.cost.usd" in a:
        cost = Decimal(repr(a["infersight.cost.usd"]))
    else:
        cost = price(model, i, o or 0) if i is not None else None
    if i is None:
        cost = None  # half an estimate: what the span carries is its output's price only
    cost = None if cost is None else cost.quantize(Decimal("1e-12"))
    return Call(span.trace_id, tenant, user, model, span.error, i, o, None if estimated else cost,
                cost if estimated else None, span.duration_s)


def dataset(base_ns: int, seed: int = 11) -> tuple[list[Span], list[Call], dict[str, int]]:
    """The spans to send, the LLM calls among them as the reference sees them, and spans per kind.
    ``calls`` is followed by the calls made without a request span: see :func:`same_calls`."""
    rng = random.Random(seed)
    spans: list[Span] = []
    calls: list[Call] = []
    kinds: dict[str, int] = {}
    ids = iter(range(1, 10**6))

    def span(trace: str, parent: str, at: int, seconds: float, attributes: dict[str, Any], kind: str | None,
             error: bool = False, scope: str = "") -> str:
        span_id = f"{next(ids):016x}"
        spans.append(Span(trace, span_id, parent, at, seconds, attributes, error, scope))
        if kind:
            kinds[kind] = kinds.get(kind, 0) + 1
        return span_id

    for i in range(48):
        trace = f"{i + 1:032x}"
        at = base_ns + i * 20 * NS
        tenant = "acme" if i % 3 else "globex"
        who = {"infersight.tenant.id": tenant, "infersight.user.id": f"u-{i % 4}", "infersight.route": "support"}
        root = span(trace, "", at, 3.0, {"http.route": "/ask"}, None)  # not GenAI: no kind
        span(trace, root, at, 0.03, {**who, "gen_ai.operation.name": "retrieval"}, "retrieval", error=i % 7 == 0)
        span(trace, root, at + 40_000_000, 0.08, {**who, "openinference.span.kind": "RERANKER"}, "rerank",
             error=i % 11 == 0)
        if i % 4 == 0:
            span(trace, root, at + 50_000_000, 0.01, {**who, "gen_ai.operation.name": "embeddings",
                                                      "gen_ai.request.model": "text-embedding-3-small",
                                                      "gen_ai.usage.input_tokens": 50}, "embedding")
        model = UNPRICED if i % 8 == 5 else PRICED
        tokens_in, tokens_out = rng.randrange(200, 2000), rng.randrange(20, 400)
        seconds = round(rng.lognormvariate(0, 0.6), 3)
        error = i % 6 == 1
        no_usage = i % 10 == 3  # a stream whose usage was never reported: unknown, not 0
        attributes = {**who, "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                      "gen_ai.request.model": model}
        estimated = i % 12 == 9 and not error and not no_usage  # the SDK counted the tokens itself
        half = i % 12 == 11 and not error and not no_usage  # ... and only the answer's
        if not error and not no_usage and not half:
            attributes |= {"gen_ai.usage.input_tokens": tokens_in, "gen_ai.usage.output_tokens": tokens_out}
        if estimated or half:
            attributes["infersight.usage.estimated"] = True
            # What the SDK sends: its price of what it counted (older SDKs priced half an estimate).
            sdk_price = price(model, 0 if half else tokens_in, tokens_out)
            if sdk_price is not None:
                attributes["infersight.cost.usd"] = float(sdk_price)
        if half:
            attributes["gen_ai.usage.output_tokens"] = tokens_out
        parent = root
        if i % 7 == 4:
            # A framework's span (OpenInference) over the client's (GenAI): the same call, once,
            # with the innermost span's timings and the outer span's attribution.
            outer = {**who, "openinference.span.kind": "LLM", "llm.model_name": model}
            if "gen_ai.usage.input_tokens" in attributes:
                outer |= {"llm.token_count.prompt": tokens_in, "llm.token_count.completion": tokens_out}
            parent = span(trace, root, at + 99_000_000, seconds + 0.05, outer, None, error=error)
            attributes = {k: v for k, v in attributes.items() if k not in who}
        llm = span(trace, parent, at + 100_000_000, seconds, attributes, "llm", error=error)
        counted = spans[-1]
        if i % 5 == 2:
            # The provider client's own span under ours: the same call again, marked by our SDK.
            span(trace, llm, at + 101_000_000, seconds - 0.001,
                 {"gen_ai.operation.name": "chat", "gen_ai.request.model": model, "infersight.parent_llm_span": llm,
                  "gen_ai.usage.input_tokens": tokens_in, "gen_ai.usage.output_tokens": tokens_out}, None)
        if i % 9 == 0:
            span(trace, root, at + 2_500_000_000, 0.2, {**who, "gen_ai.operation.name": "execute_tool"}, "tool",
                 error=i % 18 == 0)
        calls.append(call_of(counted, tenant, f"u-{i % 4}", model))
    for j, (proof, model, error) in enumerate((("id", PRICED, False), ("prompt", PRICED, True),
                                               ("usage", UNPRICED, False))):
        # LangChain (OpenInference) over a client without a request span: each span is the root of
        # a trace of its own. The proof is the response id in LangChain's output, else the prompt
        # with the same usage (or the same failure); the client's span is the call, LangChain's
        # gives the attribution.
        at, seconds = base_ns + (48 + j) * 20 * NS, round(rng.lognormvariate(0, 0.6), 3)
        tokens_in, tokens_out = rng.randrange(200, 2000), rng.randrange(20, 400)
        tenant, user = "acme", f"u-{j}"
        who = {"infersight.tenant.id": tenant, "infersight.user.id": user, "infersight.route": "support"}
        prompt = {"gen_ai.input.messages": json.dumps([{"role": "user", "content": f"question {j}"}])}
        usage = {} if error else {"gen_ai.usage.input_tokens": tokens_in, "gen_ai.usage.output_tokens": tokens_out}
        outer = {**who, **prompt, "openinference.span.kind": "LLM", "llm.model_name": model}
        if not error:
            outer |= {"llm.token_count.prompt": tokens_in, "llm.token_count.completion": tokens_out}
        inner = {**usage, "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                 "gen_ai.request.model": model}
        if proof == "id":
            outer |= {"output.mime_type": "application/json",
                      "output.value": json.dumps({"generations": [], "llm_output": {"id": f"chatcmpl-{j}"}})}
            inner["gen_ai.response.id"] = f"chatcmpl-{j}"
        else:
            inner |= prompt
        span(f"{0xa0 + j:032x}", "", at, seconds + 0.01, outer, None, error, f"{INSTRUMENTATION}.langchain")
        span(f"{0xb0 + j:032x}", "", at + 2_000_000, seconds, inner, "llm", error, f"{INSTRUMENTATION}.openai")
        calls.append(call_of(spans[-1], tenant, user, model))
    return spans, calls, kinds


def same_calls(spans: list[Span]) -> dict[str, tuple[str, str]]:
    """LangChain's traces of the calls made without a request span: (trace id, span id) of the
    client's span each repeats, read from the raw spans (the same prompt or response id)."""
    roots = [s for s in spans if not s.parent and s.scope]
    out = {}
    for outer in (s for s in roots if s.scope.endswith("langchain")):
        (inner,) = [s for s in roots if s.scope.endswith("openai") and s.start_ns >= outer.start_ns
                    and s.start_ns < outer.start_ns + round(outer.duration_s * NS)]
        out[outer.trace_id] = (inner.trace_id, inner.span_id)
    return out


def figures(mine: list[Call]) -> dict[str, Any]:
    """The reference's figures of some calls: sums of what is known, None where nothing is."""
    errors = sum(c.error for c in mine)
    known = [c.cost_usd for c in mine if c.cost_usd is not None]
    estimated = [c.estimated_usd for c in mine if c.estimated_usd is not None]
    inputs = [c.input_tokens for c in mine if c.input_tokens is not None]
    outputs = [c.output_tokens for c in mine if c.output_tokens is not None]
    out = {
        "llm_calls": len(mine), "llm_errors": errors, "llm_error_rate": errors / len(mine),
        "input_tokens": sum(inputs) if inputs else None,  # of the calls that reported it
        "output_tokens": sum(outputs) if outputs else None,
        # Exact sums, as floats once: the same number whatever the order of the terms.
        "cost_usd": float(sum(known)) if known else None,
        "estimated_cost_usd": float(sum(estimated)) if estimated else None,
        "estimated_calls": len(estimated),
        # A failed call that reported no usage costs nothing; an answer without usage, tokens of a
        # model with no price, and half an estimate have an unknown cost.
        "unpriced_calls": sum(1 for c in mine if c.cost_usd is None and c.estimated_usd is None
                              and (c.input_tokens or c.output_tokens or (c.no_usage and not c.error))),
        "unknown_usage_calls": sum(1 for c in mine if c.no_usage and not c.error),
    }
    out["usd_text"] = usd_text(out["cost_usd"], out["unpriced_calls"], out["estimated_cost_usd"])
    return out


SPEND = ("input_tokens", "output_tokens", "cost_usd", "estimated_cost_usd", "estimated_calls", "unpriced_calls",
         "unknown_usage_calls")


def reference(calls: list[Call]) -> dict[str, Any]:
    out = figures(calls)
    out["tenants"] = {t: figures([c for c in calls if c.tenant == t]) for t in sorted({c.tenant for c in calls})}
    out["models"] = {m: figures([c for c in calls if c.model == m]) for m in sorted({c.model for c in calls})}
    out["traces"] = {c.trace_id: figures([c]) for c in calls}
    durations = sorted(c.duration_s for c in calls)
    out["latency_s"] = {name: durations[max(math.ceil(level * len(durations)), 1) - 1]
                        for name, level in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))}
    return out


def page_value(page: str, element_id: str) -> str:
    match = re.search(rf'id="{element_id}">([^<]*)<', page)
    assert match, f"no #{element_id} on the page"
    return match.group(1)


def ms(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds * 1000:,.0f} ms"


@pytest.fixture(params=["chdb", "clickhouse"])
def backend(request: pytest.FixtureRequest, store: Store) -> Store:
    if request.param == "chdb":
        return store
    server_store: ClickHouseStore = request.getfixturevalue("server_stores")("figures")
    return server_store


def test_every_surface_shows_the_reference_figures(backend, tmp_path):
    now = time.time_ns()
    day_start = int(datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0).timestamp()) * NS
    # All spans within one UTC day (the digest's) and the last 24 hours (the pages').
    base = now - 30 * 60 * NS if now - day_start > 40 * 60 * NS else day_start - 40 * 60 * NS
    day = datetime.fromtimestamp(base / NS, tz=timezone.utc).date()
    spans, calls, kinds = dataset(base)
    ref = reference(calls) | {"same_calls": same_calls(spans)}
    project = f"figures-{now % 10**9}"
    settings = Settings(data_dir=tmp_path, auth=False, alerts=False, project=project, decode_workers=0)
    with TestClient(create_app(settings, store=backend)) as client:
        body = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name",
                                                                  "value": {"stringValue": "rag-app"}}]},
                                   "scopeSpans": [{"scope": {"name": scope},
                                                   "spans": [s.otlp() for s in spans if s.scope == scope]}
                                                  for scope in sorted({s.scope for s in spans})]}]}
        response = client.post("/v1/traces", content=json.dumps(body), headers={"content-type": "application/json"})
        assert response.status_code == 200 and "partialSuccess" not in response.text
        summary = wait_for(lambda: (s := client.get("/api/v1/summary", params={"since": "24h"}).json())
                           and sum(s["kinds"].values()) == sum(kinds.values()) and s)
        _check_summary(summary, ref, kinds)
        _check_overview(client.get("/", params={"range": "24h"}).text, summary, ref)
        _check_overview_series(client, ref)
        _check_latency(client, summary, ref)
        _check_cost(client, ref)
        _check_traces(client, ref)
        quality = client.get("/api/v1/quality", params={"since": "24h"}).json()
        assert quality["calls"] == ref["llm_calls"]  # the denominator of every soft-failure rate
    _check_digest(backend, project, day, summary, ref)
    _check_weekly(backend, project, day, ref)


def _close(shown: float, expected: float) -> bool:
    return shown == pytest.approx(expected, rel=1e-9, abs=1e-12)


def _same_spend(shown: dict[str, Any], expected: dict[str, Any], what: object) -> None:
    """Tokens and money exactly as the reference has them: None where unknown, the same floats."""
    for key in SPEND:
        assert shown[key] == expected[key], (what, key, shown[key], expected[key])


def _check_summary(summary: dict[str, Any], ref: dict[str, Any], kinds: dict[str, int]) -> None:
    assert summary["kinds"] == kinds
    for key in ("llm_calls", "llm_errors"):
        assert summary[key] == ref[key], key
    _same_spend(summary, ref, "summary")
    assert _close(summary["llm_error_rate"], ref["llm_error_rate"])
    tenants = {t["tenant"]: t for t in summary["tenants"]}
    assert sorted(tenants) == sorted(ref["tenants"])
    for name, expected in ref["tenants"].items():
        for key in ("llm_calls", "llm_errors"):
            assert tenants[name][key] == expected[key], (name, key)
        _same_spend(tenants[name], expected, name)
    for name, expected in ref["latency_s"].items():
        # One histogram for every latency figure: within 4.4% of the exact percentile.
        assert summary["latency_s"][name] == pytest.approx(expected, rel=0.045), name


def _check_overview(page: str, summary: dict[str, Any], ref: dict[str, Any]) -> None:
    assert page_value(page, "llm-calls") == f"{ref['llm_calls']:,}"
    assert page_value(page, "error-rate") == f"{ref['llm_error_rate'] * 100:.1f}%"
    assert page_value(page, "cost") == ref["usd_text"]  # "$x + $y estimated + N unpriced"
    assert f"{ref['unpriced_calls']:,} calls of unknown cost" in page
    assert f"{ref['estimated_calls']:,} calls priced from estimated tokens" in page
    assert page_value(page, "tokens") == f"{ref['input_tokens']:,} / {ref['output_tokens']:,}"
    assert f"{ref['unknown_usage_calls']:,} calls reported no usage" in page
    assert ms(summary["latency_s"]["p50"]) in page and ms(summary["latency_s"]["p95"]) in page


def _check_overview_series(client: TestClient, ref: dict[str, Any]) -> None:
    """The Overview's time series add up to the figures, bucket by bucket of its ranges."""
    for since in ("1h", "24h", "7d"):
        points = client.get("/api/v1/overview", params={"since": since}).json()["series"]
        if since == "1h":  # the spans are 30 to 40 minutes old, or in the day before: some or none
            assert sum(p["calls"] for p in points) <= ref["llm_calls"]
            continue
        assert sum(p["calls"] for p in points) == ref["llm_calls"], since
        assert sum(p["errors"] for p in points) == ref["llm_errors"], since
        known = sum(Decimal(repr(p["cost_usd"])) for p in points if p["cost_usd"] is not None)
        assert float(known) == pytest.approx(ref["cost_usd"], rel=1e-9), since
        estimated = sum(p["estimated_cost_usd"] or 0 for p in points)
        assert estimated == pytest.approx(ref["estimated_cost_usd"] or 0, rel=1e-9), since


def _check_latency(client: TestClient, summary: dict[str, Any], ref: dict[str, Any]) -> None:
    totals = client.get("/api/v1/latency", params={"since": "24h"}).json()["totals"]
    assert (totals["requests"], totals["errors"]) == (ref["llm_calls"], ref["llm_errors"])
    assert _close(totals["error_rate"], ref["llm_error_rate"])
    for name in ("p50", "p95", "p99"):
        assert totals["duration_s"][name] == summary["latency_s"][name], name  # the same number, not close
    page = client.get("/latency", params={"range": "24h"}).text
    assert page_value(page, "calls") == f"{ref['llm_calls']:,}"
    assert page_value(page, "error-rate") == f"{ref['llm_error_rate'] * 100:.1f}%"


def _check_cost(client: TestClient, ref: dict[str, Any]) -> None:
    data = client.get("/api/v1/cost", params={"since": "24h"}).json()
    totals = data["totals"]
    assert totals["requests"] == ref["llm_calls"]
    _same_spend(totals, ref, "cost totals")
    for table, key in (("tenants", "tenants"), ("models", "models")):
        rows = {t["name"]: t for t in data[table]}
        assert sorted(rows) == sorted(ref[key])
        for name, expected in ref[key].items():
            assert rows[name]["requests"] == expected["llm_calls"]
            _same_spend(rows[name], expected, name)
    assert data["models"][-1]["name"] == UNPRICED and data["models"][-1]["cost_usd"] is None  # not $0
    page = client.get("/cost", params={"range": "24h"}).text
    assert page_value(page, "cost") == ref["usd_text"]
    assert page_value(page, "calls") == f"{ref['llm_calls']:,}"
    for name, expected in ref["models"].items():
        shown = re.search(rf'>{re.escape(name)}</a></td>\s*<td class="num">([^<]*)<', page)
        assert shown and shown.group(1) == expected["usd_text"], name
    assert re.search(rf'>{UNPRICED}</a></td>\s*<td class="num">unpriced<', page)
    # Users are a tenant's: u-0 of acme and u-0 of globex are two rows.
    users = {(u["tenant"], u["user_id"]): u["requests"] for u in data["users"]}
    assert sum(users.values()) == ref["llm_calls"]
    assert ("acme", "u-0") in users and ("globex", "u-0") in users


def _check_traces(client: TestClient, ref: dict[str, Any]) -> None:
    traces = client.get("/api/v1/traces", params={"since": "24h", "limit": 200}).json()["traces"]
    assert len(traces) == ref["llm_calls"]  # one request, one trace, one call each
    assert sum(t["llm_calls"] for t in traces) == ref["llm_calls"]
    for shown in traces:
        _same_spend(shown, ref["traces"][shown["trace_id"]], shown["trace_id"])
    page, url = "", "/traces?range=24h"
    while url:  # every page of the list, through its "next" links
        shown_page = client.get(url).text
        page += shown_page
        link = re.search(r'id="next-page" href="([^"]+)"', shown_page)
        url = "/traces" + html.unescape(link.group(1)) if link else ""
    assert '<td class="num">$0</td>' not in page and ">0 / 0<" not in page
    for trace_id, expected in ref["traces"].items():  # unknown reads unknown, never 0 or blank
        row = re.search(rf'href="/traces/{trace_id}[^"]*".*?</tr>', page, re.S)
        assert row, trace_id
        cells = re.search(r'<td class="num tokens">(.*?)</td>\s*<td class="num cost">(.*?)</td>', row.group(0), re.S)
        assert cells, trace_id
        assert (cells.group(1).count(">unknown<") == (expected["input_tokens"] is None)
                + (expected["output_tokens"] is None)), (trace_id, cells.group(1))
        if expected["usd_text"] == "–":
            assert ">unknown<" in cells.group(2), (trace_id, cells.group(2))
        else:
            assert cells.group(2) == expected["usd_text"], (trace_id, cells.group(2))
    for trace_id, expected in ref["traces"].items():
        one = client.get(f"/api/v1/traces/{trace_id}").json()
        _same_spend(one, expected, trace_id)  # its counted call, not every span that describes it
        assert page_value(client.get(f"/traces/{trace_id}").text, "trace-cost") == expected["usd_text"], trace_id
    for trace_id, (other_trace, other_span) in ref["same_calls"].items():
        # LangChain's trace shows its span as the client's call, counted in the client's trace.
        one = client.get(f"/api/v1/traces/{trace_id}").json()
        assert [s["same_call"] for s in one["spans"]] == [{"trace_id": other_trace, "span_id": other_span}]
        assert (one["input_tokens"], one["cost_usd"], one["unpriced_calls"]) == (None, None, 0)
        assert f'href="/traces/{other_trace}#span-{other_span}"' in client.get(f"/traces/{trace_id}").text


def _check_digest(store: Store, project: str, day: date, summary: dict[str, Any], ref: dict[str, Any]) -> None:
    digest = build_digest(store, project, day)
    totals = digest.totals
    for key in ("llm_calls", "llm_errors"):
        assert totals[key] == ref[key], key
    _same_spend(totals, ref, "digest")
    assert totals["latency_s"] == summary["latency_s"]
    spenders = {r["tenant"]: r for r in digest.top_spenders}
    for name, expected in ref["tenants"].items():
        _same_spend(spenders[name], expected, name)
    first = digest.lines()[0]
    assert f"{ref['llm_calls']:,} calls" in first and f"error rate {ref['llm_error_rate']:.2%}" in first
    assert f"cost {ref['usd_text']} (" in first
    assert f'id="cost">{ref["usd_text"]}<' in digest.html()
    assert f"p95 latency {ms(summary['latency_s']['p95'])}" in first


def _check_weekly(store: Store, project: str, day: date, ref: dict[str, Any]) -> None:
    monday = datetime(day.year, day.month, day.day, tzinfo=timezone.utc) - timedelta(days=day.weekday())
    data = weekly_data(store, project, monday)
    headline = {row["label"]: row for row in data["headline"]}
    assert headline["LLM calls"]["current"] == ref["llm_calls"]
    assert headline["Spend"]["current"] == ref["cost_usd"]
    assert headline["Spend"]["text"] == ref["usd_text"]
    assert _close(headline["Error rate"]["current"], ref["llm_error_rate"])
    tenants = {row["name"]: row for row in data["tenants"]}
    for name, expected in ref["tenants"].items():
        _same_spend(tenants[name], expected, name)


def test_the_reference_is_not_trivial():
    """The dataset exercises what the test claims: failures in every kind, nesting, unpriced calls."""
    spans, calls, kinds = dataset(10**18)
    assert set(kinds) == {"retrieval", "rerank", "embedding", "llm", "tool"}
    assert sum(1 for s in spans if "infersight.parent_llm_span" in s.attributes) >= 5
    assert sum(1 for s in spans if s.attributes.get("openinference.span.kind") == "LLM") >= 5
    assert sum(c.no_usage and not c.error for c in calls) >= 3
    ref = reference(calls)
    assert ref["llm_errors"] and ref["unpriced_calls"] and ref["cost_usd"] > 0
    # Every case of unknown and estimated: a trace of each.
    traces = ref["traces"].values()
    assert any(t["cost_usd"] is None and t["unpriced_calls"] and t["input_tokens"] for t in traces)  # no price
    assert any(t["input_tokens"] is None and t["unknown_usage_calls"] for t in traces)  # a stream without usage
    assert any(t["llm_errors"] and t["input_tokens"] is None and not t["unpriced_calls"] for t in traces)  # failed
    assert any(t["estimated_calls"] and t["cost_usd"] is None for t in traces)  # estimated, priced apart
    assert any(t["input_tokens"] is None and t["output_tokens"] and t["unpriced_calls"] for t in traces)  # half
    assert sum(1 for s in spans if s.error and "gen_ai.operation.name" in s.attributes
               and s.attributes["gen_ai.operation.name"] != "chat") >= 3
    # Calls without a request span, each proved differently: by the response id, a failure's prompt, the usage.
    assert len(same_calls(spans)) == 3 and sum(1 for s in spans if s.attributes.get("gen_ai.response.id")) == 1
    assert len(ref["tenants"]) == 2 and percentiles({}) == {"p50": None, "p95": None, "p99": None, "p999": None}

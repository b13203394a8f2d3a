"""Spans from other instrumentations land in the same llm_spans columns as the SDK's own, with
the collector computing the cost they lack. The real instrumentation packages instrument the real
openai client against a local OpenAI-compatible server."""

from __future__ import annotations

import json
import time

import httpx
import openai
import pytest
from genai_prices import Usage, calc_price
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from infersight.demo import FakeLLM
from tests.collector.test_foreign_instrumentations import openai_restored
from tests.conftest import wait_for


def price(model, i, o):
    return float(calc_price(Usage(input_tokens=i, output_tokens=o), model, provider_id="openai").total_price)


def instrumentor(name):
    if name == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor
    else:
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
    return OpenAIInstrumentor()


@pytest.mark.parametrize("name", ["openinference", "openllmetry"])
def test_foreign_instrumentation_lands_in_llm_spans(collector, name):
    llm = FakeLLM(latency_s=(0, 0)).start()
    provider = TracerProvider(resource=Resource.create({"service.name": f"{name}-app"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=collector.url + "/v1/traces")))
    inst = instrumentor(name)
    with openai_restored():
        inst.instrument(tracer_provider=provider)
        try:
            client = openai.OpenAI(base_url=llm.url + "/v1", api_key="test", max_retries=0)
            response = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "hi there"}]
            )
        finally:
            inst.uninstrument()
            provider.shutdown()
            llm.stop()
    rows = wait_for(lambda: httpx.get(f"{collector.url}/api/v1/spans").json()["spans"])
    assert len(rows) == 1
    row = rows[0]
    usage = response.usage
    assert (row["operation"], row["provider"], row["model"]) == ("chat", "openai", "gpt-4o-mini")
    assert (row["input_tokens"], row["output_tokens"]) == (usage.prompt_tokens, usage.completion_tokens)
    assert row["cost_usd"] == pytest.approx(price("gpt-4o-mini", usage.prompt_tokens, usage.completion_tokens))
    assert row["finish_reason"] == "stop"
    assert row["service"] == f"{name}-app"


def test_deprecated_genai_names_and_unknown_models(collector):
    now = time.time_ns()

    def span(span_id, attrs):
        return {
            "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": span_id, "name": "chat",
            "startTimeUnixNano": str(now - 10**8), "endTimeUnixNano": str(now),
            "attributes": [{"key": k, "value": {"stringValue": v} if isinstance(v, str) else {"intValue": v}}
                           for k, v in attrs.items()],
        }

    body = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [
        span("b7ad6b7169203331", {"gen_ai.operation.name": "chat", "gen_ai.system": "openai",
                                  "gen_ai.request.model": "gpt-4o", "gen_ai.usage.prompt_tokens": 1000,
                                  "gen_ai.usage.completion_tokens": 100}),
        span("b7ad6b7169203332", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "acme-private-7b",
                                  "gen_ai.usage.input_tokens": 50, "gen_ai.usage.output_tokens": 5}),
    ]}]}]}
    response = httpx.post(f"{collector.url}/v1/traces", content=json.dumps(body),
                          headers={"content-type": "application/json"})
    assert response.status_code == 200
    rows = wait_for(lambda: (r := httpx.get(f"{collector.url}/api/v1/spans").json()["spans"]) and len(r) == 2 and r)
    by_model = {r["model"]: r for r in rows}
    old = by_model["gpt-4o"]
    assert (old["provider"], old["input_tokens"], old["output_tokens"]) == ("openai", 1000, 100)
    assert old["cost_usd"] == pytest.approx(price("gpt-4o", 1000, 100))
    assert by_model["acme-private-7b"]["cost_usd"] is None  # unknown model: no cost, never a guess

"""Every vocabulary fully read: what the real instrumentation packages write elsewhere than the
GenAI names (OpenInference's invocation parameters, OpenLLMetry's finish reasons) reaches the
same columns and detectors as the SDK's own spans. The packages instrument the real openai
client against the local OpenAI-compatible server."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import httpx
import openai
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from infersight.collector._fake_llm import FakeLLM
from tests.conftest import wait_for

MODEL = "gpt-4o-mini"
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


@contextlib.contextmanager
def instrumented(collector: Any, package: str) -> Iterator[Any]:
    if package == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor
    else:
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
    provider = TracerProvider(resource=Resource.create({"service.name": f"{package}-vocab"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=collector.url + "/v1/traces")))
    inst = OpenAIInstrumentor()
    inst.instrument(tracer_provider=provider)
    try:
        yield provider.get_tracer("app")
    finally:
        inst.uninstrument()
        provider.shutdown()


def trace_of(span: Any) -> str:
    return format(span.get_span_context().trace_id, "032x")


def rows_of(collector: Any, trace_ids: set[str], count: int) -> list[dict[str, Any]]:
    def check() -> list[dict[str, Any]]:
        spans = httpx.get(f"{collector.url}/api/v1/spans", params={"limit": 500}).json()["spans"]
        found = [s for s in spans if s["trace_id"] in trace_ids]
        return found if len(found) >= count else []

    return wait_for(check) or []  # type: ignore[return-value]


def labels_of(collector: Any, trace_id: str) -> set[str]:
    found = httpx.get(f"{collector.url}/api/v1/detections").json()["detections"]
    return {d["label"] for d in found if d["trace_id"] == trace_id}


def test_openinference_response_format_reaches_the_json_detector(collector):
    """OpenInference keeps response_format in llm.invocation_parameters: a schema the answer
    breaks, and a JSON object cut off at max tokens, are both found (neither was before)."""
    schema = {"type": "object", "required": ["priority"], "properties": {"priority": {"type": "integer"}}}
    formats = {
        "schema": {"type": "json_schema", "json_schema": {"name": "ticket", "schema": schema}},
        "object": {"type": "json_object"},
    }
    llm = FakeLLM(latency_s=(0, 0), truncate_rate=0.0).start()
    cut = FakeLLM(latency_s=(0, 0), truncate_rate=1.0).start()
    traces: dict[str, str] = {}
    with instrumented(collector, "openinference") as tracer:
        for name, fmt in formats.items():
            server = llm if name == "schema" else cut
            client = openai.OpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)
            with tracer.start_as_current_span(f"request {name}") as root:
                client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "file it"}],
                                               response_format=fmt)  # type: ignore[arg-type]
            traces[name] = trace_of(root)
    llm.stop()
    cut.stop()
    rows_of(collector, set(traces.values()), 2)

    assert wait_for(lambda: "json.schema_invalid" in labels_of(collector, traces["schema"])), \
        labels_of(collector, traces["schema"])
    assert wait_for(lambda: "json.truncated" in labels_of(collector, traces["object"])), \
        labels_of(collector, traces["object"])


def test_openllmetry_tool_call_finish_reason_is_the_providers(collector):
    """OpenLLMetry writes OpenAI's "tool_calls" as "tool_call": the row says what OpenAI said."""
    llm = FakeLLM(latency_s=(0, 0)).start()
    with instrumented(collector, "openllmetry") as tracer, tracer.start_as_current_span("request") as root:
        client = openai.OpenAI(base_url=llm.url + "/v1", api_key="test", max_retries=0)
        answer = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "look up"}],
                                                tools=TOOLS)  # type: ignore[arg-type]
    llm.stop()
    assert answer.choices[0].finish_reason == "tool_calls"
    (row,) = rows_of(collector, {trace_of(root)}, 1)
    assert row["finish_reason"] == "tool_calls"

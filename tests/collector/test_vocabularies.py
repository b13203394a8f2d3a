"""Every vocabulary fully read: what the real instrumentation packages write elsewhere than the
GenAI names (OpenInference's invocation parameters, OpenLLMetry's finish reasons) reaches the
same columns and detectors as the SDK's own spans. The packages instrument the real openai
client against the local OpenAI-compatible server."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from infersight.demo import FakeLLM
from tests import http
from tests.collector.test_foreign_instrumentations import openai_restored
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
    with openai_restored():
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
        spans = http.get(f"{collector.url}/api/v1/spans", params={"limit": 500}).json()["spans"]
        found = [s for s in spans if s["trace_id"] in trace_ids]
        return found if len(found) >= count else []

    return wait_for(check) or []  # type: ignore[return-value]


def labels_of(collector: Any, trace_id: str) -> set[str]:
    found = http.get(f"{collector.url}/api/v1/detections").json()["detections"]
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


def stored_events(store: Any, project: str, trace_id: str) -> list[dict[str, Any]]:
    return store.query(
        "SELECT span_id, event_name, body, finish_reasons FROM genai_events"
        " WHERE project = {p:String} AND trace_id = {t:String} ORDER BY ts", {"p": project, "t": trace_id})


def events_of(store: Any, project: str, trace_id: str, count: int) -> list[dict[str, Any]]:
    def check() -> list[dict[str, Any]]:
        rows = stored_events(store, project, trace_id)
        return rows if len(rows) >= count else []

    return wait_for(check) or []  # type: ignore[return-value]


@pytest.mark.parametrize("capture", [True, False])
def test_openai_v2_events_arrive_on_v1_logs_joined_to_their_span(collector, store, monkeypatch, capture):
    """openai-v2 records a stream's finish reason and the answer only as log events: the stock
    OTLP log exporter sends them to /v1/logs, where they are stored with their span's ids; the
    answer's text only when the app captures content."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true" if capture else "false")
    llm = FakeLLM(latency_s=(0, 0)).start()
    resource = Resource.create({"service.name": "openai-v2-events"})
    spans = TracerProvider(resource=resource)
    spans.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=collector.url + "/v1/traces")))
    logs = LoggerProvider(resource=resource)
    logs.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=collector.url + "/v1/logs")))
    inst = OpenAIInstrumentor()
    with openai_restored():
        inst.instrument(tracer_provider=spans, logger_provider=logs)
        try:
            with spans.get_tracer("app").start_as_current_span("request") as root:
                client = openai.OpenAI(base_url=llm.url + "/v1", api_key="test", max_retries=0)
                stream = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}],
                                                        stream=True)
                answer = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        finally:
            inst.uninstrument()
            spans.shutdown()
            logs.shutdown()
            llm.stop()
    trace_id = trace_of(root)
    (row,) = rows_of(collector, {trace_id}, 1)
    events = events_of(store, collector.project, trace_id, 2)
    names = [e["event_name"] for e in events]
    assert names == ["gen_ai.user.message", "gen_ai.choice"]
    assert {e["span_id"] for e in events} == {row["span_id"]}  # joined to the call's span
    choice = next(e for e in events if e["event_name"] == "gen_ai.choice")
    assert json.loads(choice["finish_reasons"]) == ["stop"]
    body = json.loads(choice["body"])
    assert body.get("message", {}).get("content") == (answer if capture else None)
    # The span carries no finish reason; every reader of the call shows the events' one.
    assert row["finish_reason"] == "stop"
    assert reason_on_trace_page(collector, trace_id, row["span_id"]) == "stop"


def reason_on_trace_page(collector: Any, trace_id: str, span_id: str) -> str:
    found = http.get(f"{collector.url}/api/v1/traces/{trace_id}")
    assert found.status_code == 200, found.text
    (span,) = [s for s in found.json()["spans"] if s["span_id"] == span_id]
    return str(span["finish_reason"])


@pytest.mark.parametrize("first", ["span", "events"])
def test_openai_v2_finish_reason_is_read_whichever_of_span_and_events_arrives_first(
        collector, store, monkeypatch, first):
    """The span and its events come in separate requests, in either order: the call shows the
    events' finish reason as soon as both are stored, and none before."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "false")
    llm = FakeLLM(latency_s=(0, 0)).start()
    resource = Resource.create({"service.name": f"openai-v2-{first}-first"})
    span_memory, log_memory = InMemorySpanExporter(), InMemoryLogRecordExporter()
    spans = TracerProvider(resource=resource)
    spans.add_span_processor(SimpleSpanProcessor(span_memory))
    logs = LoggerProvider(resource=resource)
    logs.add_log_record_processor(SimpleLogRecordProcessor(log_memory))
    inst = OpenAIInstrumentor()
    with openai_restored():
        inst.instrument(tracer_provider=spans, logger_provider=logs)
        try:
            with spans.get_tracer("app").start_as_current_span("request") as root:
                client = openai.OpenAI(base_url=llm.url + "/v1", api_key="test", max_retries=0)
                stream = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}],
                                                        stream=True)
                assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        finally:
            inst.uninstrument()
            llm.stop()
    trace_id = trace_of(root)
    span_exporter = OTLPSpanExporter(endpoint=collector.url + "/v1/traces")
    log_exporter = OTLPLogExporter(endpoint=collector.url + "/v1/logs")
    try:
        if first == "span":
            assert span_exporter.export(span_memory.get_finished_spans()).name == "SUCCESS"
            (row,) = rows_of(collector, {trace_id}, 1)
            assert row["finish_reason"] == ""  # nothing says yet how the call ended
            assert log_exporter.export(log_memory.get_finished_logs()).name == "SUCCESS"
        else:
            assert log_exporter.export(log_memory.get_finished_logs()).name == "SUCCESS"
            assert span_exporter.export(span_memory.get_finished_spans()).name == "SUCCESS"
    finally:
        span_exporter.shutdown()
        log_exporter.shutdown()
        spans.shutdown()
        logs.shutdown()
    (row,) = rows_of(collector, {trace_id}, 1)
    assert row["finish_reason"] == "stop"
    assert reason_on_trace_page(collector, trace_id, row["span_id"]) == "stop"


def logs_body(trace_id: str, span_id: str, at_ns: int) -> dict[str, Any]:
    """OTLP/JSON logs: one gen_ai.choice of a span, one record without a span, one plain log."""
    choice = {"timeUnixNano": str(at_ns), "eventName": "gen_ai.choice", "traceId": trace_id, "spanId": span_id,
              "body": {"kvlistValue": {"values": [
                  {"key": "index", "value": {"intValue": "0"}},
                  {"key": "finish_reason", "value": {"stringValue": "tool_calls"}}]}}}
    orphan = {**choice, "traceId": "", "spanId": ""}
    plain = {"timeUnixNano": str(at_ns), "body": {"stringValue": "GET /health"},
             "traceId": trace_id, "spanId": span_id}
    return {"resourceLogs": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "json-logs"}}]},
        "scopeLogs": [{"logRecords": [choice, orphan, plain]}]}]}


def test_v1_logs_takes_json_and_gzip_once_with_the_keys_and_errors_of_v1_traces(auth_collector, store):
    import gzip
    import time

    trace_id, span_id = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"
    body = json.dumps(logs_body(trace_id, span_id, time.time_ns())).encode()
    url, headers = auth_collector.url + "/v1/logs", auth_collector.headers("alpha")
    json_headers = {**headers, "content-type": "application/json"}

    assert http.post(url, content=body, headers={"content-type": "application/json"}).status_code == 401
    unsupported = http.post(url, content=body, headers={**headers, "content-type": "text/plain"})
    assert unsupported.status_code == 415
    broken = http.post(url, content=b"{nope", headers=json_headers)
    assert broken.status_code == 400 and "not valid JSON" in broken.json()["message"]
    for _ in range(2):  # an exporter's retry of an acknowledged request is stored once
        sent = http.post(url, content=gzip.compress(body), headers={**json_headers, "content-encoding": "gzip"})
        assert sent.status_code == 200, sent.text
    # The 200 comes after the insert: what is stored is there now, once, in the key's project.
    (event,) = stored_events(store, auth_collector.projects["alpha"], trace_id)
    assert (event["span_id"], event["event_name"]) == (span_id, "gen_ai.choice")
    assert json.loads(event["finish_reasons"]) == ["tool_calls"]
    assert stored_events(store, auth_collector.projects["beta"], trace_id) == []

"""What GenAI events sent as OTLP logs say about a call reaches its counted row and the inline
detectors, whichever of span and events arrives first.

openai-v2 (the real instrumentation, against the local OpenAI-compatible server) records a
stream's finish reason, and its answer when content is captured, only as ``gen_ai.choice`` log
events; the server answers with a repetition loop cut at max tokens (finish reason ``length``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from infersight.collector.store import ClickHouseStore, Store, complete_calls, encode_rows, span_finish_reason
from infersight.demo import FakeLLM
from infersight.detectors import row_time_text
from infersight.sdk import semconv
from tests.collector.test_foreign_instrumentations import openai_restored
from tests.conftest import wait_for

MODEL = "gpt-4o-mini"


@pytest.fixture
def looping() -> Iterator[FakeLLM]:
    server = FakeLLM(latency_s=(0, 0), loop_rate=1.0).start()
    yield server
    server.stop()


def recorded_stream(url: str, monkeypatch: pytest.MonkeyPatch, capture: bool) -> tuple[list[Any], list[Any], str]:
    """One openai-v2 stream, its spans and log records kept in memory (to send in either order)."""
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true" if capture else "false")
    resource = Resource.create({"service.name": "openai-v2-events"})
    span_memory, log_memory = InMemorySpanExporter(), InMemoryLogRecordExporter()
    spans = TracerProvider(resource=resource)
    spans.add_span_processor(SimpleSpanProcessor(span_memory))
    logs = LoggerProvider(resource=resource)
    logs.add_log_record_processor(SimpleLogRecordProcessor(log_memory))
    inst = OpenAIInstrumentor()
    with openai_restored():
        inst.instrument(tracer_provider=spans, logger_provider=logs)
        try:
            client = openai.OpenAI(base_url=url + "/v1", api_key="test", max_retries=0)
            stream = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}],
                                                    stream=True)
            assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        finally:
            inst.uninstrument()
            spans.shutdown()
            logs.shutdown()
    (span,) = span_memory.get_finished_spans()
    return [span], list(log_memory.get_finished_logs()), format(span.context.trace_id, "032x")


def send(collector: Any, spans: list[Any], logs: list[Any], first: str) -> None:
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

    span_exporter = OTLPSpanExporter(endpoint=collector.url + "/v1/traces")
    log_exporter = OTLPLogExporter(endpoint=collector.url + "/v1/logs")
    try:
        order = [lambda: span_exporter.export(spans), lambda: log_exporter.export(logs)]
        for export in order if first == "span" else order[::-1]:
            assert export().name == "SUCCESS"
            if first == "span" and export is order[0]:
                assert wait_for(lambda: call_row(collector), 60), "the span was not stored"
    finally:
        span_exporter.shutdown()
        log_exporter.shutdown()


def call_row(collector: Any) -> dict[str, Any] | None:
    rows = collector_store(collector).query(
        "SELECT trace_id, span_id, finish_reason FROM llm_spans WHERE project = {p:String}", {"p": collector.project})
    return rows[0] if rows else None


def collector_store(collector: Any) -> Store:
    return collector._store  # type: ignore[no-any-return]


def labels(collector: Any, trace_id: str) -> list[tuple[str, str]]:
    rows = collector_store(collector).query(
        "SELECT span_id, label FROM detections WHERE project = {p:String} AND trace_id = {t:String} ORDER BY label",
        {"p": collector.project, "t": trace_id})
    return [(r["span_id"], r["label"]) for r in rows]


@pytest.mark.parametrize("first", ["span", "events"])
def test_the_events_finish_reason_and_answer_reach_the_row_and_the_detectors(collector, looping, monkeypatch, first):
    spans, logs, trace_id = recorded_stream(looping.url, monkeypatch, capture=True)
    assert semconv.FINISH_REASONS not in (spans[0].attributes or {})  # only the events say how it ended
    send(collector, spans, logs, first)

    def completed() -> dict[str, Any] | None:
        row = call_row(collector)
        return row if row and row["finish_reason"] == "length" else None

    row = wait_for(completed, 60)
    assert row, f"llm_spans never got the events' finish reason ({first} first): {call_row(collector)}"
    expected = {(row["span_id"], "repetition.loop"), (row["span_id"], "truncation.length")}
    assert wait_for(lambda: expected <= set(labels(collector, trace_id)), 60), labels(collector, trace_id)
    # each once, whichever side completed the call (or both did)
    found = labels(collector, trace_id)
    assert sorted(found) == sorted(set(found))
    summary = collector_store(collector).query(
        "SELECT count() AS n FROM llm_spans WHERE project = {p:String}", {"p": collector.project})
    assert summary == [{"n": 1}]
    (stored,) = collector_store(collector).query(
        "SELECT SpanAttributes AS attrs FROM otel_traces WHERE TraceId = {t:String}", {"t": trace_id})
    # Events first: the span was stored with them joined, as if it had said so itself; span first:
    # it stays as sent, its row and detections completed afterwards.
    assert (span_finish_reason(stored["attrs"]) == "length") == (first == "events")


def test_without_captured_content_the_reason_still_reaches_the_row(collector, looping, monkeypatch):
    spans, logs, _ = recorded_stream(looping.url, monkeypatch, capture=False)
    send(collector, spans, logs, "span")
    assert wait_for(lambda: (call_row(collector) or {}).get("finish_reason") == "length", 60), call_row(collector)


ATTRIBUTE_SETS = [
    {semconv.FINISH_REASONS: '["length", "stop"]'},
    {semconv.FINISH_REASONS: "content_filter"},  # not the conventions' list: no reason, by either reading
    {semconv.FINISH_REASONS: "[]", "llm.finish_reason": "stop"},
    {"llm.finish_reason": "tool_calls"},
    {semconv.FINISH_REASONS: '["stop"]', "llm.finish_reason": "length"},
    {},
]


@pytest.fixture(params=["chdb", "clickhouse"])
def backend(request: pytest.FixtureRequest, store: Store) -> Store:
    if request.param == "chdb":
        return store
    server_store: ClickHouseStore = request.getfixturevalue("server_stores")("events")
    return server_store


def otel_row(project: str, trace_id: str, span_id: str, at_ns: int, attrs: dict[str, str]) -> dict[str, Any]:
    return {"Timestamp": row_time_text(at_ns), "TraceId": trace_id, "SpanId": span_id, "ParentSpanId": "",
            "TraceState": "", "SpanName": "chat", "SpanKind": "Client", "ServiceName": "app",
            "ResourceAttributes": {semconv.PROJECT: project}, "ScopeName": "s", "ScopeVersion": "",
            "SpanAttributes": {semconv.OPERATION: "chat", **attrs}, "Duration": 10**9, "StatusCode": "Unset",
            "StatusMessage": ""}


def test_the_view_reads_a_span_finish_reason_as_span_finish_reason_does(backend):
    import time

    project, now = f"reasons-{time.time_ns()}", time.time_ns()
    rows = [otel_row(project, f"{i + 1:032x}", f"{i + 1:016x}", now, attrs) for i, attrs in enumerate(ATTRIBUTE_SETS)]
    backend.insert("otel_traces", encode_rows(rows))
    stored = {r["span_id"]: r["finish_reason"] for r in backend.query(
        "SELECT span_id, finish_reason FROM llm_spans WHERE project = {p:String}", {"p": project})}
    assert stored == {r["SpanId"]: span_finish_reason(r["SpanAttributes"]) for r in rows}
    assert [stored[r["SpanId"]] for r in rows] == ["length", "", "stop", "tool_calls", "stop", ""]


def test_a_stored_span_is_completed_by_events_stored_after_it_on_both_backends(backend):
    import time

    project, now = f"late-{time.time_ns()}", time.time_ns()
    trace_id, span_id = "ab" * 16, "cd" * 8
    backend.insert("otel_traces", encode_rows([otel_row(project, trace_id, span_id, now, {})]))
    assert complete_calls(backend, {trace_id}) == 0  # no events yet: nothing to complete
    choice = {"index": 0, "finish_reason": "content_filter", "message": {"role": "assistant", "content": "I can"}}
    backend.insert("genai_events", encode_rows([{
        "project": project, "ts": row_time_text(now + 10**8), "trace_id": trace_id, "span_id": span_id,
        "service": "app", "event_name": "gen_ai.choice", "attributes": {}, "body": json.dumps(choice),
        "finish_reasons": '["content_filter"]'}]))
    assert complete_calls(backend, {trace_id}) == 1

    def reason() -> str:
        (row,) = backend.query("SELECT finish_reason FROM llm_spans WHERE project = {p:String}", {"p": project})
        return str(row["finish_reason"])

    assert wait_for(lambda: reason() == "content_filter", 60), reason()


def test_a_writers_batch_of_calls_is_completed_by_its_events_on_a_server(server_stores):
    """4,000 calls of as many traces: their ids pass what a server takes in one query parameter
    (128 KiB, which the test endpoint holds to as a server does; chDB takes any, and runs the same
    statements in the tests above)."""
    import time

    backend: Store = server_stores("events")

    project, now, count = f"many-{time.time_ns()}", time.time_ns(), 4000
    ids = [(f"{i + 1:032x}", f"{i + 1:016x}") for i in range(count)]
    backend.insert("otel_traces", encode_rows([otel_row(project, t, s, now, {}) for t, s in ids]))
    choice = {"index": 0, "finish_reason": "content_filter", "message": {"role": "assistant", "content": "I can"}}
    backend.insert("genai_events", encode_rows([{
        "project": project, "ts": row_time_text(now + 10**8), "trace_id": t, "span_id": s, "service": "app",
        "event_name": "gen_ai.choice", "attributes": {}, "body": json.dumps(choice),
        "finish_reasons": '["content_filter"]'} for t, s in ids]))
    assert complete_calls(backend, {t for t, _ in ids}) == count

    def completed() -> int:
        (row,) = backend.query("SELECT countIf(finish_reason = 'content_filter') AS n FROM llm_spans"
                               " WHERE project = {p:String}", {"p": project})
        return int(row["n"])

    assert wait_for(lambda: completed() == count, 60), completed()

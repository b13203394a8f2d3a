"""The export path against real sockets: bounded exit whatever the collector does, refusals counted
by reason, and spans finished on the export thread stored exactly as when finished inline."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
import time

import pytest

from infersight import sdk

from .otlp_server import HangingServer, OtlpServer, dead_url

APP = textwrap.dedent("""
    import atexit, sys, time
    from infersight import sdk

    # registered before init(), so it runs after the SDK's own exit hook
    atexit.register(lambda: print("DROPPED", sdk.failure_count("spans_dropped"), flush=True))
    sdk.init(service_name="exit-test", endpoint=sys.argv[1], api_key="isk_test")

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def ask(messages):
        return {"model": "gpt-4o-mini", "usage": {"prompt_tokens": 9, "completion_tokens": 3}}

    for _ in range(300):
        ask(messages=[{"role": "user", "content": "hi"}])
    time.sleep(0.3)  # the first export is under way (hanging, refused or retrying)
    print("LAST", time.time(), flush=True)
""")


@pytest.mark.parametrize("collector", ["dead", "hanging", "503"])
def test_app_exits_within_a_second_of_its_last_line_whatever_the_collector_does(collector):
    server = HangingServer() if collector == "hanging" else OtlpServer(503) if collector == "503" else None
    url = server.url if server is not None else dead_url()
    try:
        child = subprocess.Popen([sys.executable, "-c", APP, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        out, err = child.communicate(timeout=30)
        exited = time.time()
    finally:
        if server is not None:
            server.stop()
    assert child.returncode == 0, err
    lines = dict(line.split(" ", 1) for line in out.splitlines())
    assert exited - float(lines["LAST"]) <= 1.0, (collector, exited - float(lines["LAST"]), err)
    assert int(lines["DROPPED"]) > 0  # none reached a collector; each span is counted


def test_shutdown_is_bounded_and_counts_what_was_queued():
    server = HangingServer()
    try:
        sdk.init(service_name="t", endpoint=server.url, export=True)

        @sdk.traced_llm(model="gpt-4o-mini")
        def ask():
            return None

        for _ in range(50):
            ask()
        time.sleep(1.2)  # the export thread is now stuck on the first batch
        for _ in range(20):
            ask()
        before = sdk.failure_count("spans_dropped")
        started = time.monotonic()
        sdk.shutdown(timeout_s=0.3)
        assert time.monotonic() - started < 0.6
        assert sdk.failure_count("spans_dropped") - before == 70  # in flight and queued
    finally:
        server.stop()


@pytest.mark.parametrize(("status", "reason", "advice"), [
    (401, "unauthorized", "init(api_key=...)"),
    (403, "forbidden", "infersight keys create"),
    (404, "not_found", "without /v1/traces"),
])
def test_collector_refusals_are_counted_by_reason_and_logged_once(status, reason, advice, caplog):
    server = OtlpServer(status)
    try:
        sdk.init(service_name="t", endpoint=server.url, api_key="isk_wrong", meter_provider=_no_metrics())

        @sdk.traced_llm(model="gpt-4o-mini")
        def ask():
            return None

        before = sdk.failure_count(reason)
        with caplog.at_level(logging.WARNING, logger="infersight.sdk"):
            for _ in range(2):
                ask()
                sdk.force_flush(5_000)
        assert sdk.failure_count(reason) - before == 2
        assert server.requests == 2
    finally:
        sdk.shutdown()
        server.stop()
    if before == 0:  # logged the first time this reason is seen in the process
        messages = [r.getMessage() for r in caplog.records if advice in r.getMessage()]
        assert len(messages) == 1, messages


def _no_metrics():
    from opentelemetry.sdk.metrics import MeterProvider

    return MeterProvider()


def _calls():
    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def ask(messages):
        return {"model": "gpt-4o-mini-2024-07-18", "usage": {"prompt_tokens": 12, "completion_tokens": 4},
                "choices": [{"finish_reason": "stop", "message": {"content": "Call +1 415 555 0100 today."}}]}

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def stream(messages):
        yield from ["Hello ", "jane@example.com"]

    @sdk.traced_retrieval(data_source="kb")
    def retrieve(query):
        return [{"id": "d1", "text": "Refunds take 5 days. Mail ops@example.com", "score": 0.9}, "plain hit"]

    messages = [{"role": "user", "content": "my card 4111 1111 1111 1111 was charged twice"}]
    ask(messages=messages)
    messages.append({"role": "assistant", "content": "appended by a chat loop after the call"})
    list(stream(messages=[{"role": "user", "content": "hi"}]))
    retrieve("where is my refund, jane@example.com?")


_TIMINGS = ("gen_ai.response.time_to_first_chunk", "infersight.itl.p50_s", "infersight.itl.p95_s",
            "infersight.itl.max_s", "infersight.prefill_s", "infersight.tpot_s")


def _comparable(attrs):
    return {k: tuple(v) if isinstance(v, list) else v for k, v in attrs.items() if k not in _TIMINGS}


def test_spans_finished_on_the_export_thread_are_stored_as_inline_ones(make_sdk):
    inline = make_sdk()  # the app's own provider: attributes are set on the caller's thread
    _calls()
    want = [(s.name, _comparable(dict(s.attributes))) for s in inline.get_finished_spans()]
    sdk.shutdown()

    server = OtlpServer(200)  # the SDK's own provider and the real OTLP exporter: deferred work
    try:
        sdk.init(service_name="t", endpoint=server.url, meter_provider=_no_metrics())
        _calls()
        assert sdk.force_flush(5_000)
    finally:
        sdk.shutdown()
        server.stop()
    got = [(name, _comparable(attrs)) for name, _, _, attrs in server.spans]
    assert got == want
    first = dict(want[0][1])
    assert "[CARD]" in first["gen_ai.input.messages"] and "appended" not in first["gen_ai.input.messages"]
    assert "[PHONE]" in first["gen_ai.output.messages"]
    docs = json.loads(want[2][1]["gen_ai.retrieval.documents"])
    assert docs[0] == {"id": "d1", "score": 0.9, "content": "Refunds take 5 days. Mail [EMAIL]"}
    assert want[2][1]["gen_ai.retrieval.query.text"] == "where is my refund, [EMAIL]?"


def test_spans_drained_at_shutdown_keep_the_settings_they_were_recorded_under():
    # shutdown() restores the defaults before the queue drains: the spans still queued must not be
    # finished under them (content captured against capture_content=False, a redactor skipped).
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    sdk.init(service_name="drain-app", span_exporter=exporter, capture_content=False,
             prices={"house-model": {"input_mtok": 1.0, "output_mtok": 2.0}})

    @sdk.traced_llm(provider="openai", model="house-model")
    def ask(messages):
        return {"usage": {"prompt_tokens": 30, "completion_tokens": 4}, "choices": [{"message": {"content": "ok"}}]}

    ask(messages=[{"role": "user", "content": "my secret"}])
    sdk.shutdown(timeout_s=5)  # the span waits for the batch delay (1 s): it is drained here
    (span,) = exporter.get_finished_spans()
    assert "gen_ai.input.messages" not in span.attributes
    assert "gen_ai.output.messages" not in span.attributes
    assert span.attributes["infersight.cost.source"] == "override"
    assert span.attributes["infersight.cost.usd"] == pytest.approx(30 * 1e-6 + 4 * 2e-6)

"""The export path against real sockets: bounded shutdown, refusals counted by reason, retries that
honour Retry-After and never re-send a batch a slow collector took, and spans finished on the export
thread stored exactly as when finished inline. Exit of real processes: test_exit.py."""

from __future__ import annotations

import json
import logging
import time

import pytest

from infersight import sdk

from .otlp_server import HangingServer, OtlpServer


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
        assert time.monotonic() - started < 5.0  # the hanging request would hold it forever
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


def _ask_many(n: int) -> None:
    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def ask(messages):
        return {"model": "gpt-4o-mini", "usage": {"prompt_tokens": 9, "completion_tokens": 3}}

    for _ in range(n):
        ask(messages=[{"role": "user", "content": "hi"}])


def test_shutdown_keeps_waiting_while_the_collector_answers(caplog):
    # 5,000 spans in 10 batches, each answered after 0.1 s: 1 s in all, longer than any fixed
    # short bound, and every answer well within the 0.5 s a request may go unanswered at exit
    # (0.4 s to spare for decoding on a busy machine: 0.2 s answers left 0.3, and one ran out).
    server = OtlpServer(delay_s=0.1)
    dropped = sdk.failure_count("spans_dropped")
    try:
        sdk.init(service_name="t", endpoint=server.url, meter_provider=_no_metrics())
        _ask_many(5000)
        with caplog.at_level(logging.WARNING, logger="infersight.sdk"):
            sdk.shutdown()
    finally:
        server.stop()
    assert len(server.spans) == 5000 and server.trace_requests == 10
    assert sdk.failure_count("spans_dropped") == dropped
    assert not [r for r in caplog.records if "not exported" in r.getMessage()]


def test_a_bound_that_runs_out_while_sending_says_so(caplog):
    # 16 batches answered 0.1 s apart: 1.6 s of answers, most of them after the spans are
    # made, against a 0.6 s bound; each answer 0.4 s within the 0.5 s a request may go unanswered
    # at exit (0.3 s answers ran past it at a load of 8, and the message said "timed out")
    server = OtlpServer(delay_s=0.1)
    dropped = sdk.failure_count("spans_dropped")
    try:
        sdk.init(service_name="t", endpoint=server.url, meter_provider=_no_metrics())
        _ask_many(8000)  # within the SDK's queue of 8,192
        with caplog.at_level(logging.WARNING, logger="infersight.sdk"):
            sdk.shutdown(timeout_s=0.6)
    finally:
        server.stop()
    lost = sdk.failure_count("spans_dropped") - dropped
    assert 0 < lost < 8000 and len(server.spans) >= 512
    (message,) = [r.getMessage() for r in caplog.records if "not exported" in r.getMessage()]
    assert f"{lost} spans not exported" in message and "still sending" in message
    assert "unreachable" not in message


def test_a_retry_waits_as_long_as_the_collectors_retry_after():
    server = OtlpServer(first=(503,), retry_after="3")  # the back-off alone would be 1 s
    try:
        sdk.init(service_name="t", endpoint=server.url, meter_provider=_no_metrics())
        _ask_many(1)
        assert sdk.force_flush(30_000)
    finally:
        sdk.shutdown()
        server.stop()
    assert server.trace_requests == 2 and len(server.spans) == 1
    first, second = server.request_times[:2]
    assert second - first >= 3.0


def test_a_slow_answer_is_waited_for_not_sent_again():
    # A restarting collector answers its first request after replaying its spool: 6 s here, longer
    # than the 5 s timeout that used to give up on it and send the batch again (stored twice).
    server = OtlpServer(first_delay_s=6.0)
    try:
        sdk.init(service_name="t", endpoint=server.url, meter_provider=_no_metrics())
        _ask_many(3)
        assert sdk.force_flush(30_000)
    finally:
        sdk.shutdown()
        server.stop()
    assert server.trace_requests == 1 and len(server.spans) == 3


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


def test_deferred_attributes_complete_the_snapshot_as_a_new_span_would():
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

    from infersight.sdk._export import _finished

    provider = TracerProvider()
    span = provider.get_tracer("t").start_span("chat", attributes={"gen_ai.operation.name": "chat"})
    span.end()
    snapshot = span._readable_span()  # what OpenTelemetry hands the processors' on_end

    class Kept(ReadableSpan):  # not a plain snapshot: built anew, as before
        pass

    other = Kept(name="chat", context=snapshot.context, attributes=snapshot.attributes,
                 start_time=snapshot.start_time, end_time=snapshot.end_time)
    extra = {"gen_ai.usage.input_tokens": 3, "gen_ai.response.finish_reasons": ["stop"]}
    fast = _finished(snapshot, lambda: (extra, "chat gpt-4o"))
    slow = _finished(other, lambda: (extra, "chat gpt-4o"))
    assert fast is snapshot  # this OpenTelemetry's snapshot keeps the fields completed in place
    assert slow is not other
    assert (fast.name, dict(fast.attributes)) == (slow.name, dict(slow.attributes)) == (
        "chat gpt-4o", {"gen_ai.operation.name": "chat", **extra})
    assert dict(span.attributes) == {"gen_ai.operation.name": "chat"}  # the live span is untouched

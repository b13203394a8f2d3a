"""Queue wait, baggage propagation, resilience markers, error classes, sampling, export failure."""

from __future__ import annotations

import time
from typing import ClassVar

import pytest
from opentelemetry import context as otel_context
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from infersight import sdk


def one(spans):
    (span,) = spans.get_finished_spans()
    return span.attributes


def test_queued_at_argument_gives_queue_wait(spans):
    @sdk.traced_llm(model="gpt-4o-mini")
    def ask(prompt: str, queued_at: float):
        return None

    ask("hi", time.time() - 0.25)  # positional, still read
    a = one(spans)
    assert 0.24 <= a["infersight.queue.wait_s"] < 1.0
    assert a["infersight.queue.source"] == "argument"


def test_mark_started_measures_from_the_tenant_block(spans):
    @sdk.traced_llm(model="gpt-4o-mini")
    def ask():
        return None

    with sdk.tenant("acme"):
        time.sleep(0.1)  # waiting in the app's own queue
        wait = sdk.mark_started()
        ask()
    ask()  # outside: no queue wait leaks here
    first, second = spans.get_finished_spans()
    assert wait is not None and first.attributes["infersight.queue.wait_s"] == pytest.approx(wait)
    assert first.attributes["infersight.queue.wait_s"] >= 0.09
    assert "infersight.queue.wait_s" not in second.attributes


def test_provider_queue_time_is_split_out_of_ttft(spans):
    class Stream:  # shaped like openai.Stream: an iterator with the HTTP response's headers
        headers: ClassVar[dict[str, str]] = {"x-queue-time": "0.05"}

        def __init__(self):
            self._chunks = iter(["token"])

        def __iter__(self):
            return self

        def __next__(self):
            time.sleep(0.08)
            return next(self._chunks)

    @sdk.traced_llm(model="gpt-4o-mini", queue_wait_from=lambda r: float(r.headers["x-queue-time"]))
    def ask():
        return Stream()

    for _ in ask():
        pass
    a = one(spans)
    assert a["infersight.queue.source"] == "response"
    assert a["infersight.prefill_s"] == pytest.approx(a["gen_ai.response.time_to_first_chunk"] - 0.05)


def test_tenant_rides_on_baggage_to_a_downstream_service(spans):
    propagator = CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator()])
    headers: dict[str, str] = {}
    with sdk.tenant("acme", user_id="u-7", route="support", tags={"plan": "enterprise"}):
        propagator.inject(headers)
    assert "acme" in headers["baggage"]

    @sdk.traced_llm(model="gpt-4o-mini")
    def downstream():
        return None

    token = otel_context.attach(propagator.extract(headers))  # what a server middleware does
    try:
        downstream()
    finally:
        otel_context.detach(token)
    a = one(spans)
    assert (a["infersight.tenant.id"], a["infersight.user.id"], a["infersight.route"]) == ("acme", "u-7", "support")
    assert a["infersight.tag.plan"] == "enterprise"


def test_markers_land_on_the_current_span(spans):
    @sdk.traced_llm(model="gpt-4o-mini")
    def ask():
        sdk.mark_retry(2, reason="429")
        sdk.mark_fallback("small_model")
        sdk.mark_cache_hit(similarity=0.97)

    ask()
    a = one(spans)
    assert (a["infersight.retry.attempt"], a["infersight.retry.reason"]) == (2, "429")
    assert (a["infersight.degraded"], a["infersight.fallback"]) == (True, "small_model")
    assert (a["infersight.cache.hit"], a["infersight.cache.similarity"]) == (True, 0.97)


class _StatusError(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


class _Response:
    status_code = 503


class _HTTPStatusError(Exception):
    response = _Response()


class APITimeoutError(Exception):
    pass


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (TimeoutError(), "transient"),
        (ConnectionRefusedError(), "transient"),
        (_StatusError(429), "transient"),
        (_StatusError(529), "transient"),
        (_StatusError(500), "transient"),
        (_HTTPStatusError(), "transient"),
        (APITimeoutError(), "transient"),
        (_StatusError(400), "logic"),
        (_StatusError(404), "logic"),
        (ValueError("bad schema"), "logic"),
        (KeyError("choices"), "logic"),
    ],
)
def test_error_classification(exc, expected):
    assert sdk.classify_error(exc) == expected


def test_sample_rate_zero_drops_traces_but_the_app_runs():
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    sdk.init(service_name="sampled", sample_rate=0.0, export=False)
    try:
        exporter = InMemorySpanExporter()
        from infersight.sdk import _setup

        _setup._state.provider.add_span_processor(SimpleSpanProcessor(exporter))

        @sdk.traced_llm(model="gpt-4o-mini")
        def ask():
            return 7

        assert [ask() for _ in range(50)] == [7] * 50
        assert exporter.get_finished_spans() == ()
    finally:
        sdk.shutdown()


def test_collector_down_neither_breaks_nor_slows_the_app():
    import socket

    with socket.socket() as s:  # a port with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sdk.init(service_name="offline", endpoint=f"http://127.0.0.1:{port}",
             tracer_provider=TracerProvider())
    try:
        @sdk.traced_llm(model="gpt-4o-mini")
        def ask(i):
            return {"usage": {"prompt_tokens": i, "completion_tokens": 1}}

        started = time.perf_counter()
        first = [ask(i) for i in range(100)]  # before any batch is due: the calls' own cost
        per_call = (time.perf_counter() - started) / 100
        started = time.perf_counter()
        results = first + [ask(i) for i in range(100, 3000)]
        elapsed = time.perf_counter() - started
        assert len(results) == 3000
        # Export happens on the batch processor's thread. Against the calls' own cost measured
        # in this test (a loaded machine slows both alike), a blocking export (seconds per batch
        # of 512) would be hundreds of times over; 20x is noise.
        assert elapsed < 20 * per_call * 2900 + 0.5, (elapsed, per_call)
    finally:
        started = time.perf_counter()
        sdk.shutdown(timeout_s=1.0)
        assert time.perf_counter() - started < 2.0  # exit is not held hostage by retries


def test_foreign_spans_get_the_tenant_and_are_marked_when_nested_in_an_llm_span(make_sdk):
    spans = make_sdk()
    from infersight.sdk import _setup

    foreign = _setup._state.provider.get_tracer("com.anthropic.sdk.python")

    @sdk.traced_llm(provider="anthropic", model="claude-3-5-haiku-latest")
    def ask():
        with foreign.start_as_current_span("chat claude", attributes={"gen_ai.provider.name": "anthropic"}):
            pass
        return None

    with sdk.tenant("acme", route="support"):
        ask()
        with foreign.start_as_current_span("outside any llm span"):
            pass
    by_name = {s.name: s for s in spans.get_finished_spans()}
    nested, ours = by_name["chat claude"], by_name["chat claude-3-5-haiku-latest"]
    alone = by_name["outside any llm span"]
    assert nested.attributes["infersight.tenant.id"] == "acme" and nested.attributes["infersight.route"] == "support"
    assert nested.attributes["infersight.parent_llm_span"] == format(ours.context.span_id, "016x")
    assert "infersight.parent_llm_span" not in ours.attributes
    assert alone.attributes["infersight.tenant.id"] == "acme"
    assert "infersight.parent_llm_span" not in alone.attributes

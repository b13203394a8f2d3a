"""GenAI histograms with the convention's buckets, and watch_queue gauges."""

from __future__ import annotations

import queue

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from infersight import sdk
from infersight.sdk import semconv
from infersight.sdk._metrics import DURATION_BUCKETS_S, TTFT_BUCKETS_S

from .otlp_server import OtlpServer

HISTOGRAMS = {"gen_ai.client.operation.duration", "gen_ai.client.token.usage"}


def collect(reader):
    points = {}
    for rm in reader.get_metrics_data().resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                points[metric.name] = list(metric.data.data_points)
    return points


def test_histograms_use_genai_buckets(make_sdk):
    reader = InMemoryMetricReader()
    make_sdk(meter_provider=MeterProvider(metric_readers=[reader]))

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def stream():
        yield "a"
        yield "b"

    @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
    def ask():
        return {"usage": {"prompt_tokens": 30, "completion_tokens": 4}}

    list(stream())
    ask()
    points = collect(reader)
    (duration,) = points["gen_ai.client.operation.duration"]
    assert duration.count == 2
    assert tuple(duration.explicit_bounds) == DURATION_BUCKETS_S
    assert duration.attributes["gen_ai.request.model"] == "gpt-4o-mini"
    tokens = {p.attributes["gen_ai.token.type"]: p for p in points["gen_ai.client.token.usage"]}
    assert tokens["input"].sum >= 30 and tokens["output"].sum >= 4
    (ttft,) = points["gen_ai.client.operation.time_to_first_chunk"]
    assert ttft.count == 1 and tuple(ttft.explicit_bounds) == TTFT_BUCKETS_S


def test_watch_queue_reports_depth_and_oldest_age(make_sdk):
    reader = InMemoryMetricReader()
    make_sdk(meter_provider=MeterProvider(metric_readers=[reader]))
    jobs: queue.Queue[int] = queue.Queue()
    for i in range(7):
        jobs.put(i)
    watch = sdk.watch_queue("ingest-jobs", jobs.qsize, lambda: 12.5)
    broken = sdk.watch_queue("broken", lambda: 1 / 0)
    try:
        points = collect(reader)
        depth = {p.attributes["infersight.queue.name"]: p.value for p in points["infersight.queue.depth"]}
        assert depth == {"ingest-jobs": 7.0}  # the broken callback is skipped, not fatal
        (age,) = points["infersight.queue.oldest_age"]
        assert age.value == 12.5
    finally:
        watch.stop()
        broken.stop()


@pytest.mark.parametrize("genai_metrics", [None, True])
def test_own_metric_export_carries_histograms_only_when_asked(genai_metrics):
    # The SDK's own OTLP metrics go to the collector, which stores spans and not these series:
    # by default only the queue gauges are sent; genai_metrics=True sends the histograms too.
    server = OtlpServer(200)
    jobs: queue.Queue[int] = queue.Queue()
    try:
        sdk.init(service_name="metrics-app", endpoint=server.url, genai_metrics=genai_metrics)
        watch = sdk.watch_queue("jobs", jobs.qsize)

        @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
        def ask():
            return {"usage": {"prompt_tokens": 30, "completion_tokens": 4}}

        ask()
        sdk.shutdown(timeout_s=5)  # the meter provider exports what it holds on shutdown
        watch.stop()
        assert semconv.QUEUE_DEPTH_METRIC in server.metric_names
        assert (server.metric_names >= HISTOGRAMS) is bool(genai_metrics)
    finally:
        server.stop()

"""Alerting inside a running collector, end to end over real sockets: SDK spans and queue gauges
in, an Alertmanager-format page out, history on /api/v1/alerts; and `infersight alerts test`."""

from __future__ import annotations

import contextlib
import queue

from click.testing import CliRunner
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from infersight import sdk
from infersight.collector._cli import main
from infersight.collector._server import CollectorProcess
from tests import http
from tests.conftest import free_port, wait_for

from .receiver import Receiver


def test_error_spike_pages_through_the_running_collector(tmp_path):
    receiver = Receiver()
    process = CollectorProcess(tmp_path / "d", free_port(), extra_args=(
        "--no-auth", "--decode-workers", "0", "--evaluation-interval", "0.5",
        "--alert-webhook-url", receiver.url + "/hook", "--public-url", "https://obs.example.com",
    )).start()
    try:
        sdk.init(service_name="checkout", endpoint=process.url,
                 tracer_provider=TracerProvider(resource=Resource.create({"service.name": "checkout"})))

        @sdk.traced_llm(provider="openai", model="gpt-4o-mini")
        def ask():
            raise TimeoutError("provider timed out")

        for _ in range(150):
            with contextlib.suppress(TimeoutError):
                ask()
        sdk.force_flush(10_000)
        sdk.shutdown()

        page = wait_for(lambda: receiver.bodies("/hook"), timeout_s=60)
        assert page, "no page arrived"
        alert = page[0]["alerts"][0]
        assert alert["labels"]["alertname"] == "ErrorRateSpike"
        assert alert["labels"]["service"] == "checkout"
        assert alert["generatorURL"].startswith("https://obs.example.com/traces?service=checkout")
        assert "150 transient" in alert["annotations"]["description"]
        body = http.get(f"{process.url}/api/v1/alerts").json()
        assert [a["name"] for a in body["firing"]] == ["ErrorRateSpike"]
        assert body["history"][0]["event"] == "firing"
    finally:
        process.stop()
        receiver.stop()


def test_watch_queue_gauges_reach_queue_depth(collector):
    jobs: queue.Queue[int] = queue.Queue()
    for i in range(9):
        jobs.put(i)
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=collector.url + "/v1/metrics"), export_interval_millis=200
    )
    meters = MeterProvider(resource=Resource.create({"service.name": "worker"}), metric_readers=[reader])
    sdk.init(service_name="worker", tracer_provider=TracerProvider(), export=False, meter_provider=meters)
    watch = sdk.watch_queue("ingest-jobs", jobs.qsize, lambda: 42.0)
    try:
        rows = wait_for(lambda: http.get(f"{collector.url}/api/v1/queues").json()["queues"], timeout_s=60)
    finally:
        watch.stop()
        meters.shutdown()
        sdk.shutdown()
    assert rows and rows[0]["service"] == "worker" and rows[0]["queue"] == "ingest-jobs"
    assert (rows[0]["depth"], rows[0]["oldest_age_s"]) == (9.0, 42.0)


def test_alerts_test_command_reports_each_channel():
    receiver = Receiver()
    try:
        ok = CliRunner().invoke(main, ["alerts", "test", "--alert-webhook-url", receiver.url + "/hook",
                                       "--slack-webhook-url", receiver.url + "/slack"])
        assert ok.exit_code == 0, ok.output
        assert "webhook: delivered" in ok.output and "slack: delivered" in ok.output
        (hook,) = receiver.bodies("/hook")
        assert hook["alerts"][0]["labels"]["severity"] == "info"  # a test never pages
        receiver.status = 500
        bad = CliRunner().invoke(main, ["alerts", "test", "--alertmanager-url", receiver.url])
        assert bad.exit_code == 1 and "FAILED" in bad.output
    finally:
        receiver.stop()


def test_digest_is_served_as_json_and_as_a_page(collector):
    body = http.get(f"{collector.url}/api/v1/digest", params={"date": "2026-11-20"}).json()
    assert body["day"] == "2026-11-20" and body["totals"]["spans"] == 0
    page = http.get(f"{collector.url}/digest", params={"date": "2026-11-20"})
    assert page.status_code == 200 and f"Daily digest: {collector.project}, 2026-11-20" in page.text
    assert http.get(f"{collector.url}/api/v1/digest", params={"date": "yesterday"}).status_code == 400

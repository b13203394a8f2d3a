"""A clean shutdown ends each watched queue's series with a marked last point, and the process is
named as operators know it (host, pid, pod) beside OpenTelemetry's random instance id."""

from __future__ import annotations

import os
import socket
import time

import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from infersight import sdk
from infersight.collector.store import Store
from infersight.sdk import semconv
from tests.conftest import LiveCollector, wait_for

from .otlp_server import GaugePoint, OtlpServer

QUEUE_GAUGES = {semconv.QUEUE_DEPTH_METRIC, semconv.QUEUE_OLDEST_AGE_METRIC}


@pytest.fixture
def server():
    s = OtlpServer(200)
    yield s
    s.stop()


def queue_points(request: list[GaugePoint]) -> list[tuple[str, dict, float]]:
    return sorted(((p.metric, p.attributes, p.value) for p in request if p.metric in QUEUE_GAUGES), key=repr)


def test_shutdown_sends_each_queue_a_last_point_marked_ended(server):
    sdk.init(service_name="worker", endpoint=server.url, metrics_interval_s=0.2)
    watch = sdk.watch_queue("jobs", lambda: 3, lambda: 1.5)
    try:
        assert wait_for(lambda: any(queue_points(r) for r in server.gauge_requests)), "no live point arrived"
        sdk.shutdown(timeout_s=5)
    finally:
        watch.stop()

    live = [queue_points(r) for r in server.gauge_requests[:-1] if queue_points(r)]
    assert live and all(semconv.QUEUE_ENDED not in attrs for request in live for _, attrs, _ in request)
    assert queue_points(server.gauge_requests[-1]) == [
        (semconv.QUEUE_DEPTH_METRIC, {semconv.QUEUE_NAME: "jobs", semconv.QUEUE_ENDED: True}, 3.0),
        (semconv.QUEUE_OLDEST_AGE_METRIC, {semconv.QUEUE_NAME: "jobs", semconv.QUEUE_ENDED: True}, 1.5),
    ]
    ended = server.gauge_requests[-1][0].attributes[semconv.QUEUE_ENDED]
    assert ended is True  # a bool, not the text "true"


def test_a_stopped_watch_sends_its_last_point_marked_ended_then_none(server):
    # A queue the app retires while the process lives on (a worker pool scaled down, the demo's
    # end before the SDK's): its series ends like a clean shutdown's, not like a vanished reporter.
    sdk.init(service_name="worker", endpoint=server.url, metrics_interval_s=0.2)
    try:
        kept = sdk.watch_queue("kept", lambda: 1)
        watch = sdk.watch_queue("retired", lambda: 4, lambda: 2.0)
        assert wait_for(lambda: any(("retired" in str(queue_points(r))) for r in server.gauge_requests))
        watch.stop()
        assert wait_for(lambda: any(semconv.QUEUE_ENDED in attrs for r in server.gauge_requests
                                    for _, attrs, _ in queue_points(r)))
        marked = len(server.gauge_requests)
        assert wait_for(lambda: len(server.gauge_requests) >= marked + 2)  # two more collections
    finally:
        kept.stop()
        sdk.shutdown(timeout_s=5)
    retired = [(metric, attrs, value) for r in server.gauge_requests for metric, attrs, value in queue_points(r)
               if attrs[semconv.QUEUE_NAME] == "retired"]
    ended = [point for point in retired if point[1].get(semconv.QUEUE_ENDED) is True]
    last = {semconv.QUEUE_NAME: "retired", semconv.QUEUE_ENDED: True}
    assert sorted(ended, key=repr) == [(semconv.QUEUE_DEPTH_METRIC, last, 4.0),
                                       (semconv.QUEUE_OLDEST_AGE_METRIC, last, 2.0)]
    assert sorted(retired[-2:], key=repr) == sorted(ended, key=repr)  # nothing after the marked points
    still = [attrs for r in server.gauge_requests[marked:] for _, attrs, _ in queue_points(r)
             if attrs[semconv.QUEUE_NAME] == "kept"]
    assert still and all(semconv.QUEUE_ENDED not in attrs for attrs in still[:-1])  # the other queue reports on


def test_an_apps_own_meter_provider_gets_the_last_point_then_no_more(server):
    reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=server.url + "/v1/metrics"),
                                           export_interval_millis=3_600_000)
    meters = MeterProvider(metric_readers=[reader])
    sdk.init(service_name="worker", tracer_provider=TracerProvider(), export=False, meter_provider=meters)
    watch = sdk.watch_queue("jobs", lambda: 8)
    try:
        sdk.shutdown(timeout_s=5)
        assert queue_points(server.gauge_requests[-1]) == [
            (semconv.QUEUE_DEPTH_METRIC, {semconv.QUEUE_NAME: "jobs", semconv.QUEUE_ENDED: True}, 8.0)]
        sent = len(server.gauge_requests)
        meters.force_flush()  # the app's provider lives on; the ended series stays silent
        assert [queue_points(r) for r in server.gauge_requests[sent:]] in ([], [[]])
    finally:
        watch.stop()
        meters.shutdown()


def test_the_process_is_named_by_host_and_pid(server):
    sdk.init(service_name="worker", endpoint=server.url, metrics_interval_s=3600)
    watch = sdk.watch_queue("jobs", lambda: 1)
    try:
        sdk.shutdown(timeout_s=5)
    finally:
        watch.stop()
    resource = server.gauge_requests[-1][0].resource
    assert resource["host.name"] == socket.gethostname()
    assert resource["process.pid"] == os.getpid()
    assert resource["service.instance.id"]  # OpenTelemetry's own id stays


@pytest.mark.parametrize(("env", "pod"), [
    ({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "HOSTNAME": "worker-7f9c-x2"}, "worker-7f9c-x2"),
    ({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "HOSTNAME": "worker-7f9c-x2", "POD_NAME": "worker-0"}, "worker-0"),
    ({"HOSTNAME": "laptop"}, None),  # outside Kubernetes HOSTNAME names no pod
])
def test_the_pod_comes_from_the_environment_in_kubernetes(monkeypatch, env, pod):
    from infersight.sdk._resource import with_instance

    for name in ("KUBERNETES_SERVICE_HOST", "POD_NAME", "HOSTNAME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert with_instance(Resource.create({"service.name": "w"})).attributes.get("k8s.pod.name") == pod


def test_the_apps_own_resource_wins(monkeypatch):
    from infersight.sdk._resource import with_instance

    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "host.name=web-1,k8s.pod.name=web-1-abc")
    monkeypatch.setenv("POD_NAME", "other")
    attributes = with_instance(Resource.create({"service.name": "w"})).attributes
    assert (attributes["host.name"], attributes["k8s.pod.name"]) == ("web-1", "web-1-abc")
    assert attributes["process.pid"] == os.getpid()


def test_the_last_point_reaches_the_collectors_queue_depth(collector: LiveCollector, store: Store):
    sdk.init(service_name="worker", endpoint=collector.url, metrics_interval_s=3600)  # only the last export
    depth = {"now": 4.0}
    watch = sdk.watch_queue("jobs", lambda: depth["now"])
    try:
        depth["now"] = 0.0  # drained before a deploy stops the process
        stopped_ms = time.time_ns() // 1_000_000
        sdk.shutdown(timeout_s=5)
    finally:
        watch.stop()
    rows = wait_for(lambda: store.query(
        "SELECT queue, instance, depth, toUnixTimestamp64Milli(ts) AS ts_ms FROM queue_depth"
        " WHERE project = {p:String} AND service = 'worker'", {"p": collector.project}))
    assert rows, "the last point never reached queue_depth"
    (row,) = rows
    assert (row["queue"], row["depth"]) == ("jobs", 0.0)
    assert row["ts_ms"] >= stopped_ms
    assert row["instance"]

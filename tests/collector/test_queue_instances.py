"""Queue gauges keep the instance that reported them: replicas sharing a queue name stay apart."""

from __future__ import annotations

import time

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from infersight.collector.ingest._otlp_metrics import queue_rows
from infersight.collector.store import encode_rows, queues
from infersight.sdk import semconv


def replica(request: ExportMetricsServiceRequest, resource: dict[str, object], depth: float, at_ns: int) -> None:
    rm = request.resource_metrics.add()
    for key, value in resource.items():
        rm.resource.attributes.append(KeyValue(key=key, value=AnyValue(int_value=value) if isinstance(value, int)
                                               else AnyValue(string_value=str(value))))
    metric = rm.scope_metrics.add().metrics.add()
    metric.name = semconv.QUEUE_DEPTH_METRIC
    point = metric.gauge.data_points.add()
    point.time_unix_nano, point.as_double = at_ns, depth
    point.attributes.append(KeyValue(key=semconv.QUEUE_NAME, value=AnyValue(string_value="jobs")))


def test_each_replica_is_its_own_series():
    at = time.time_ns()
    request = ExportMetricsServiceRequest()
    replica(request, {"service.name": "worker", "service.instance.id": "w-0"}, 0.0, at)
    replica(request, {"service.name": "worker", "service.instance.id": "w-1"}, 40.0, at)
    replica(request, {"service.name": "worker", "k8s.pod.name": "worker-7f9"}, 3.0, at)
    replica(request, {"service.name": "worker", "host.name": "box", "process.pid": 4242}, 5.0, at)
    replica(request, {"service.name": "worker"}, 7.0, at)
    rows = queue_rows(request, "p")
    assert [(r["instance"], r["depth"]) for r in rows] == [
        ("w-0", 0.0), ("w-1", 40.0), ("worker-7f9", 3.0), ("box/4242", 5.0), ("", 7.0)]


def test_a_clean_shutdowns_last_point_is_stored_ended_with_the_pod_host_and_pid():
    at = time.time_ns()
    request = ExportMetricsServiceRequest()
    resource = {"service.name": "worker", "service.instance.id": "9f1c", "k8s.pod.name": "worker-7f9",
                "host.name": "node-3", "process.pid": 4121}
    replica(request, resource, 4.0, at)
    replica(request, resource, 2.0, at + 10**9)
    last = request.resource_metrics[-1].scope_metrics[0].metrics[0].gauge.data_points[0]
    last.attributes.append(KeyValue(key=semconv.QUEUE_ENDED, value=AnyValue(bool_value=True)))
    rows = queue_rows(request, "p")
    assert [(r["instance"], r["ended"]) for r in rows] == [("9f1c", False), ("9f1c", True)]
    assert rows[0]["instance_label"] == "pod worker-7f9, host node-3, pid 4121"


def test_the_queue_list_shows_each_replica(store):
    project = f"queues-{time.time_ns()}"
    at = time.time_ns()
    rows = queue_rows(_two_replicas(at), project)
    store.insert("queue_depth", encode_rows(rows))
    listed = queues(store, project, at - 60 * 10**9)
    assert [(q["queue"], q["instance"], q["depth"]) for q in listed] == [("jobs", "w-0", 0.0), ("jobs", "w-1", 40.0)]


def _two_replicas(at_ns: int) -> ExportMetricsServiceRequest:
    request = ExportMetricsServiceRequest()
    replica(request, {"service.name": "worker", "service.instance.id": "w-0"}, 0.0, at_ns)
    replica(request, {"service.name": "worker", "service.instance.id": "w-1"}, 40.0, at_ns)
    return request

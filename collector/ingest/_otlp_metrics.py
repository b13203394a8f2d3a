"""OTLP/HTTP metric requests: the queue gauges of the SDK's ``watch_queue`` into ``queue_depth`` rows.

Other metrics (the GenAI histograms) are accepted and not stored: spans carry the same numbers
with their tenant and route. Decoding shares the trace receiver's size limit and gzip handling.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

from infersight.detectors import row_time_text
from infersight.sdk import semconv

from .._settings import IngestWindow
from ..errors import BadRequest
from ._otlp import PROTOBUF

# Which process reported a sample, first present wins: replicas of one service report the same
# queue name, and merging them would hide one stalled replica behind the others.
_INSTANCE_KEYS = ("service.instance.id", "k8s.pod.name")
_LABEL_KEYS = (("k8s.pod.name", "pod"), ("host.name", "host"), ("process.pid", "pid"))
_QUEUE_GAUGES = (semconv.QUEUE_DEPTH_METRIC, semconv.QUEUE_OLDEST_AGE_METRIC)


def _instance(attributes: dict[str, str]) -> str:
    for key in _INSTANCE_KEYS:
        if attributes.get(key):
            return attributes[key]
    host, pid = attributes.get("host.name", ""), attributes.get("process.pid", "")
    return f"{host}/{pid}" if host and pid else host


def instance_label(attributes: dict[str, str]) -> str:
    """The reporting process as an operator finds it (pod, host, pid), for a page's text: the
    SDK's ``service.instance.id`` is a random UUID per process, which names nothing on call."""
    parts = [f"{name} {attributes[key]}" for key, name in _LABEL_KEYS if attributes.get(key)]
    return ", ".join(parts)


def parse_metrics(body: bytes, media: str) -> ExportMetricsServiceRequest:
    request = ExportMetricsServiceRequest()
    if not body.strip():
        return request
    try:
        if media == PROTOBUF:
            request.ParseFromString(body)
        else:
            json_format.Parse(body, request, ignore_unknown_fields=True)
    except (DecodeError, json_format.ParseError, ValueError, RecursionError) as exc:
        kind = "protobuf" if media == PROTOBUF else "OTLP/JSON"
        raise BadRequest(f"body is not a valid {kind} ExportMetricsServiceRequest: {exc}") from exc
    return request


def queue_rows(
    request: ExportMetricsServiceRequest,
    project: str,
    rejected: list[str] | None = None,
    *,
    window: IngestWindow | None = None,
) -> list[dict[str, Any]]:
    """One ``queue_depth`` row per (service, instance, queue, timestamp), depth and oldest age merged,
    with whether the process stopped cleanly (``ended``) and its pod, host and pid (``instance_label``).

    Points with no time, or a time outside ``window``, are left out (and why is appended to
    ``rejected``): stored, they would fail the insert and the exporter would resend them forever.
    """
    window = window or IngestWindow()
    earliest, latest = window.bounds_ns()
    merged: dict[tuple[str, str, str, int], dict[str, Any]] = {}
    for resource_metrics in request.resource_metrics:
        resource = {kv.key: _text(kv.value) for kv in resource_metrics.resource.attributes}
        service, instance, label = resource.get("service.name", ""), _instance(resource), instance_label(resource)
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.name not in _QUEUE_GAUGES or metric.WhichOneof("data") != "gauge":
                    continue
                for point in metric.gauge.data_points:
                    attributes = {kv.key: kv.value for kv in point.attributes}
                    queue = attributes[semconv.QUEUE_NAME].string_value if semconv.QUEUE_NAME in attributes else ""
                    if not earliest <= point.time_unix_nano <= latest:
                        if rejected is not None:
                            rejected.append(
                                f"{metric.name} point of queue {queue!r}: time {point.time_unix_nano} is unset or "
                                f"outside the ingest window ({window.days_back} days back, {window.days_ahead} ahead)"
                            )
                        continue
                    value = point.as_double if point.WhichOneof("value") == "as_double" else float(point.as_int)
                    key = (service, instance, queue, point.time_unix_nano)
                    row = merged.setdefault(key, {
                        "project": project, "service": service, "queue": queue, "instance": instance,
                        "ts": row_time_text(point.time_unix_nano),
                        "depth": 0.0, "oldest_age_s": None, "ended": False, "instance_label": label,
                    })
                    # the shutdown's last point of either gauge marks the series ended
                    ended = attributes.get(semconv.QUEUE_ENDED)
                    row["ended"] = row["ended"] or (ended is not None and ended.WhichOneof("value") == "bool_value"
                                                    and ended.bool_value)
                    row["depth" if metric.name == semconv.QUEUE_DEPTH_METRIC else "oldest_age_s"] = value
    return list(merged.values())


def _text(value: Any) -> str:
    """An attribute's value as text (process.pid is an int)."""
    kind = value.WhichOneof("value")
    return "" if kind is None else str(getattr(value, kind))

"""Local collectors over real sockets: one that stores OTLP spans, and the ways a collector fails."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(x) for x in v.array_value.values)
    return getattr(v, kind)


@dataclass(frozen=True)
class GaugePoint:
    """One gauge data point a metrics request carried, with its resource's attributes."""

    metric: str
    attributes: dict[str, Any]
    value: float
    resource: dict[str, Any]


class OtlpServer:
    """Answers every POST with ``status``; with 200 it keeps the spans: ``[(name, trace_id, parent, attrs)]``,
    the names of the metrics it was sent, and their gauge points, one list per metrics request:
    ``[GaugePoint]``.

    ``first`` lists the statuses of the first requests (then ``status``); each answer comes
    ``delay_s`` after the body was read (``first_delay_s`` for the first request); 503 carries
    ``Retry-After: retry_after``. ``request_times`` holds each request's arrival (``time.monotonic()``).
    """

    def __init__(self, status: int = 200, *, first: tuple[int, ...] = (), delay_s: float = 0.0,
                 first_delay_s: float | None = None, retry_after: str = "30") -> None:
        self.status = status
        self.spans: list[tuple[str, bytes, bytes, dict[str, Any]]] = []
        self.metric_names: set[str] = set()
        self.gauge_requests: list[list[GaugePoint]] = []
        self.requests = 0
        self.trace_requests = 0
        self.request_times: list[float] = []
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with lock:
                    outer.requests += 1
                    outer.request_times.append(time.monotonic())
                    if self.path == "/v1/traces":
                        outer.trace_requests += 1
                    n = outer.trace_requests
                status = first[n - 1] if self.path == "/v1/traces" and 0 < n <= len(first) else outer.status
                wait = first_delay_s if first_delay_s is not None and n == 1 else delay_s
                if wait and self.path == "/v1/traces":
                    time.sleep(wait)
                if status == 200 and self.path == "/v1/traces":
                    request = ExportTraceServiceRequest()
                    request.ParseFromString(body)
                    for rs in request.resource_spans:
                        for ss in rs.scope_spans:
                            for s in ss.spans:
                                attrs = {a.key: _value(a.value) for a in s.attributes}
                                outer.spans.append((s.name, s.trace_id, s.parent_span_id, attrs))
                if status == 200 and self.path == "/v1/metrics":
                    metrics = ExportMetricsServiceRequest()
                    metrics.ParseFromString(body)
                    points = []
                    for rm in metrics.resource_metrics:
                        resource = {a.key: _value(a.value) for a in rm.resource.attributes}
                        for sm in rm.scope_metrics:
                            outer.metric_names.update(m.name for m in sm.metrics)
                            points.extend(
                                GaugePoint(m.name, {a.key: _value(a.value) for a in p.attributes},
                                           p.as_double if p.WhichOneof("value") == "as_double" else p.as_int,
                                           resource)
                                for m in sm.metrics if m.WhichOneof("data") == "gauge" for p in m.gauge.data_points
                            )
                    with lock:
                        outer.gauge_requests.append(points)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                if status == 503:
                    self.send_header("Retry-After", retry_after)
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class HangingServer:
    """Accepts TCP connections and never answers."""

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._held: list[socket.socket] = []
        self._lock = threading.Lock()
        self._stopped = False
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:  # a connection accepted while stop() ran is closed here, not leaked
                if self._stopped:
                    conn.close()
                    return
                self._held.append(conn)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
        self._sock.close()
        for conn in self._held:
            conn.close()


def dead_url() -> str:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"

"""The SDK's export pipeline: a bounded queue, one daemon thread, deferred span work, bounded exit.

``on_end`` runs on the application's thread and costs a dict pop and a deque append. The export
thread then finishes the SDK's spans (usage, pricing, redaction and serialisation of content,
metrics: the work :func:`defer` hands over) and sends batches through the exporter. Nothing
here can hold the process: the thread is a daemon, the queue drops (counted) when full, and
:meth:`ExportProcessor.shutdown` returns within its timeout, counting what it could not send as
``spans_dropped``. OpenTelemetry's ``BatchSpanProcessor`` joins its thread without a bound at
exit, which with a hanging collector held apps for 5-23 s.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ._guard import EXPORT_FAILED, SPANS_DROPPED, count, logger, record_failure

THREAD_NAME = "infersight-export"

# What the export thread runs for one span: returns (attributes to add, new name or None).
Work = Callable[[], "tuple[dict[str, Any], str | None]"]

# Keyed by span id between the decorator's span.end() and this processor's on_end, which
# OpenTelemetry calls synchronously inside end() (with a snapshot of the span, hence not the
# object itself); the decorator removes a key nobody took.
_pending: dict[int, Work] = {}


def defer(span_id: int, work: Work) -> None:
    _pending[span_id] = work


def undefer(span_id: int) -> None:
    _pending.pop(span_id, None)


class ExportProcessor(SpanProcessor):
    """Batches finished spans, runs their deferred work and exports them on a daemon thread.

    ``on_end`` never blocks and never raises; ``force_flush`` and ``shutdown`` block at most
    their timeout. Thread-safe.
    """

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        max_queue: int = 8192,
        batch_size: int = 512,
        delay_s: float = 1.0,
        shutdown_timeout_s: float = 0.5,
    ) -> None:
        self._exporter = exporter
        self._max_queue = max_queue
        self._batch_size = batch_size
        self._delay_s = delay_s
        self.shutdown_timeout_s = shutdown_timeout_s
        self._queue: deque[tuple[ReadableSpan, Work | None]] = deque()
        self._cond = threading.Condition()
        self._inflight = 0
        self._flushing = False
        self._stopping = False
        self._abandoned = False
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        self._thread.start()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        work = _pending.pop(span.context.span_id, None) if span.context is not None else None
        if self._stopping or len(self._queue) >= self._max_queue:
            if count(SPANS_DROPPED):
                logger.warning("infersight: the export queue is full or closed (%d spans); spans are dropped and "
                               "counted in failure_count('spans_dropped')", self._max_queue)
            return
        self._queue.append((span, work))
        if len(self._queue) == self._batch_size:
            with self._cond:
                self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                if len(self._queue) < self._batch_size and not (self._stopping or self._flushing):
                    self._cond.wait(self._delay_s)
                if self._abandoned:
                    return
                batch = [self._queue.popleft() for _ in range(min(len(self._queue), self._batch_size))]
                if not batch:
                    self._flushing = False
                    self._cond.notify_all()
                    if self._stopping:
                        return
                    continue
                self._inflight = len(batch)
            self._export([_finished(span, work) for span, work in batch])
            with self._cond:
                self._inflight = 0
                self._cond.notify_all()

    def _export(self, spans: Sequence[ReadableSpan]) -> None:
        try:
            ok = self._exporter.export(spans) is SpanExportResult.SUCCESS
        except Exception as exc:  # noqa: BLE001 - an exporter bug must not end the export thread
            record_failure("span exporter", exc)
            ok = False
        if ok or self._abandoned:  # abandoned: shutdown already counted these
            return
        first = count(EXPORT_FAILED)
        count(SPANS_DROPPED, len(spans))
        if first:
            logger.warning("infersight: could not export %d spans (is the collector running at the endpoint "
                           "given to init()?); they are dropped, counted in failure_count('spans_dropped')",
                           len(spans))

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        deadline = time.monotonic() + timeout_millis / 1000
        with self._cond:
            self._flushing = True
            self._cond.notify_all()
            while self._queue or self._inflight:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._thread.is_alive():
                    return False
                self._cond.wait(remaining)
        return True

    def shutdown(self, timeout_s: float | None = None) -> None:
        """Send what is queued for at most ``timeout_s``; what is left then is counted as dropped."""
        with self._cond:
            if self._stopping:
                return
            self._stopping = True
            self._cond.notify_all()
        self._thread.join(self.shutdown_timeout_s if timeout_s is None else max(timeout_s, 0.0))
        with self._cond:
            lost = len(self._queue) + self._inflight if self._thread.is_alive() else 0
            self._abandoned = True
            self._queue.clear()
            self._cond.notify_all()
        if lost:
            count(SPANS_DROPPED, lost)
            logger.warning("infersight: %d spans not exported before exit (collector unreachable or slow); "
                           "counted in failure_count('spans_dropped')", lost)
        if lost or self._thread.is_alive():
            # The export thread is stuck in a request: closing its session could wait on it too.
            threading.Thread(target=self._stop_exporter, name=THREAD_NAME + "-stop", daemon=True).start()
        else:
            self._stop_exporter()

    def _stop_exporter(self) -> None:
        try:
            self._exporter.shutdown()  # interrupts the exporter's retry back-off
        except Exception as exc:  # noqa: BLE001 - shutdown is best-effort
            record_failure("exporter shutdown", exc)


def _finished(span: ReadableSpan, work: Work | None) -> ReadableSpan:
    """The span with its deferred attributes (and final name), built on the export thread."""
    if work is None:
        return span
    try:
        extra, name = work()
    except Exception as exc:  # noqa: BLE001 - a failure here loses attributes, never the span
        record_failure("deferred span attributes", exc)
        return span
    attributes = dict(span.attributes or {})
    attributes.update(extra)
    return ReadableSpan(
        name=name or span.name, context=span.context, parent=span.parent, resource=span.resource,
        attributes=attributes, events=span.events, links=span.links, kind=span.kind, status=span.status,
        start_time=span.start_time, end_time=span.end_time, instrumentation_scope=span.instrumentation_scope,
    )


class _QuietOnExportThread(logging.Filter):
    """The stock exporter logs every failed batch; on our thread the SDK logs once per reason instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.threadName != THREAD_NAME


_quiet = _QuietOnExportThread()


def quiet_stock_exporter_logs(logger_name: str) -> None:
    target = logging.getLogger(logger_name)
    if _quiet not in target.filters:
        target.addFilter(_quiet)

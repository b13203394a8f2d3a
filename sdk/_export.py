"""The SDK's export pipeline: a bounded queue, one daemon thread, deferred span work, bounded exit.

``on_end`` runs on the application's thread and costs a dict pop and a deque append. The export
thread then finishes the SDK's spans (usage, pricing, redaction and serialisation of content,
metrics: the work :func:`defer` hands over) and sends batches through the exporter. A batch the
exporter could not send (the collector away, or answering 5xx, 408 or 429; a batch refused with
another 4xx is dropped and counted) goes back to the front of the queue and is tried again after
a back-off (1 s, doubling to 5 s), so a collector restart or an outage loses nothing while the
queue has room (8,192 spans: 80 s at 100 spans/s). Nothing here can hold the process: the thread is a
daemon, the queue drops (counted) when full, and :meth:`ExportProcessor.shutdown` returns within
its timeout, counting what it could not send as ``spans_dropped``. OpenTelemetry's
``BatchSpanProcessor`` joins its thread without a bound at exit, which with a hanging collector
held apps for 5-23 s, and drops a batch once its exporter's retries (10 s) run out.
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
_MAX_BACKOFF_S = 5.0

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
        retryable: Callable[[], bool] | None = None,
    ) -> None:
        self._exporter = exporter
        self._retryable = retryable or (lambda: True)
        self._max_queue = max_queue
        self._batch_size = batch_size
        self._delay_s = delay_s
        self.shutdown_timeout_s = shutdown_timeout_s
        self._queue: deque[tuple[ReadableSpan, Work | None]] = deque()
        self._cond = threading.Condition()
        self._inflight = 0
        self._failures = 0  # exports failed in a row: the back-off before the next attempt
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
            spans = [_finished(span, work) for span, work in batch]
            sent = self._export(spans)
            if not sent and self._stopping:
                # The collector did not take a batch at exit: the rest would fare no better, and
                # trying them one by one (each through the stock exporter's retries) only delays exit.
                self._abandon()
                return
            retry = not sent and self._may_retry()
            with self._cond:
                self._inflight = 0
                if not self._abandoned:  # abandoned: shutdown counted these already
                    if retry:
                        self._put_back(spans)
                    elif not sent:
                        count(SPANS_DROPPED, len(spans))
                self._cond.notify_all()
                if retry and not self._stopping:
                    self._failures += 1
                    self._cond.wait(min(2.0 ** (self._failures - 1), _MAX_BACKOFF_S))
                elif sent:
                    self._failures = 0

    def _abandon(self) -> int:
        """Drop what is queued and in flight for good, counted once; returns how many spans that was."""
        with self._cond:
            lost = 0 if self._abandoned else self._inflight + len(self._queue)
            self._abandoned = True
            self._inflight = 0
            self._queue.clear()
            self._cond.notify_all()
        if lost:
            count(SPANS_DROPPED, lost)
            logger.warning("infersight: %d spans not exported before exit (collector unreachable or slow); "
                           "counted in failure_count('spans_dropped')", lost)
        return lost

    def _may_retry(self) -> bool:
        try:
            return bool(self._retryable())
        except Exception as exc:  # noqa: BLE001 - a hook's bug must not end the export thread
            record_failure("export retry check", exc)
            return True

    def _put_back(self, spans: Sequence[ReadableSpan]) -> None:
        """At the front, in order, as many as the queue has room for; the oldest beyond that are dropped."""
        room = max(self._max_queue - len(self._queue), 0)
        kept = list(spans)[len(spans) - room:] if room < len(spans) else list(spans)
        self._queue.extendleft((span, None) for span in reversed(kept))
        if len(kept) < len(spans):
            count(SPANS_DROPPED, len(spans) - len(kept))

    def _export(self, spans: Sequence[ReadableSpan]) -> bool:
        try:
            ok = self._exporter.export(spans) is SpanExportResult.SUCCESS
        except Exception as exc:  # noqa: BLE001 - an exporter bug must not end the export thread
            record_failure("span exporter", exc)
            ok = False
        if not ok and count(EXPORT_FAILED):
            logger.warning("infersight: could not export %d spans (is the collector running at the endpoint "
                           "given to init()?); unless it refused them, they are kept and retried while the "
                           "queue has room; what is dropped is counted in failure_count('spans_dropped')",
                           len(spans))
        return ok

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
        lost = self._abandon()
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

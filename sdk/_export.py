"""The SDK's export pipeline: a bounded queue, one daemon thread, deferred span work, bounded exit.

``on_end`` runs on the application's thread and costs a dict pop and a deque append. The export
thread then finishes the SDK's spans (usage, pricing, redaction and serialisation of content,
metrics: the work :func:`defer` hands over) and sends batches through the exporter. A batch the
exporter could not send (the collector away, or answering 5xx, 408 or 429; a batch refused with
another 4xx is dropped and counted) goes back to the front of the queue and is tried again after
a back-off (1 s, doubling to 5 s, or the collector's ``Retry-After`` when it says longer, up to
60 s), so a collector restart or an outage loses nothing while the queue has room (8,192 spans:
80 s at 100 spans/s). Nothing here can hold the process: the thread is a daemon, the queue drops
(counted) when full, and :meth:`ExportProcessor.shutdown` is bounded.

Shutdown waits while the export makes progress and no longer. The SDK's own work (finishing
spans, encoding) always counts as progress; what stops the wait is the collector: a batch it
refuses or fails (nothing more is tried), or a request it has not answered for
:data:`ANSWER_WAIT_S` (0.5 s: a local collector answers a 512-span batch in ~10 ms). Otherwise
the wait ends at its overall bound (``init(shutdown_timeout_s=...)``, 5 s). So a short script
against a healthy collector delivers every span, even on a loaded machine where finishing
them takes a while, and one against a dead, hanging or refusing collector exits within about
half a second of its last line. OpenTelemetry's ``BatchSpanProcessor`` joins its thread without
a bound at exit, which with a hanging collector held apps for 5-23 s.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ._guard import EXPORT_FAILED, SPANS_DROPPED, count, first_time, logger, record_failure
from ._otlp import OtlpSender
from ._outcome import FAILED, SENT, Outcome

THREAD_NAME = "infersight-export"
ANSWER_WAIT_S = 0.5
SHUTDOWN_BOUND_S = 5.0
_MAX_BACKOFF_S = 5.0
_MAX_RETRY_AFTER_S = 60.0

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

    ``on_end`` never blocks and never raises; ``force_flush`` blocks at most its timeout and
    ``shutdown`` at most its bound (see the module docstring). Thread-safe.

    With the SDK's own :class:`~._otlp.OtlpSender` it knows how each attempt ended (refused,
    timed out, the status and ``Retry-After``) and when a request went on the wire; with any
    other exporter a failed export is taken as retryable, with nothing more known.
    """

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        max_queue: int = 8192,
        batch_size: int = 512,
        delay_s: float = 1.0,
        shutdown_timeout_s: float = SHUTDOWN_BOUND_S,
        answer_wait_s: float = ANSWER_WAIT_S,
    ) -> None:
        self._exporter = exporter
        self._sender = exporter if isinstance(exporter, OtlpSender) else None
        self._max_queue = max_queue
        self._batch_size = batch_size
        self._delay_s = delay_s
        self.shutdown_timeout_s = shutdown_timeout_s
        self._answer_wait_s = answer_wait_s
        self._queue: deque[tuple[ReadableSpan, Work | None]] = deque()
        self._cond = threading.Condition()
        self._inflight = 0
        # When the request in flight went on the wire (monotonic), None between requests: only
        # this wait, not the SDK's own work, can make shutdown give up.
        self._waiting_since: float | None = None
        self._failures = 0  # exports failed in a row: the back-off before the next attempt
        self._flushing = False
        self._stopping = False
        self._abandoned = False
        if self._sender is not None:
            self._sender.on_send = self.sending
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

    def sending(self) -> None:
        """The batch is on the wire now: from here until the answer, the collector is waited on."""
        with self._cond:
            self._waiting_since = time.monotonic()
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
            outcome = self._export(spans)
            if not outcome.sent and self._stopping:
                # The collector did not take a batch at exit: the rest would fare no better, and
                # waiting out a back-off or a Retry-After only delays exit.
                self._abandon(outcome.describe())
                return
            retry = not outcome.sent and self._may_retry(outcome)
            with self._cond:
                self._inflight = 0
                if not self._abandoned:  # abandoned: shutdown counted these already
                    if retry:
                        self._put_back(spans)
                    elif not outcome.sent:
                        count(SPANS_DROPPED, len(spans))
                self._cond.notify_all()
                if retry and not self._stopping:
                    self._failures += 1
                    self._cond.wait(_backoff_s(self._failures, outcome.retry_after_s))
                elif outcome.sent:
                    self._failures = 0

    def _abandon(self, why: str) -> int:
        """Drop what is queued and in flight for good, counted and logged once; returns how many spans."""
        with self._cond:
            lost = 0 if self._abandoned else self._inflight + len(self._queue)
            self._abandoned = True
            self._inflight = 0
            self._queue.clear()
            self._cond.notify_all()
        if lost:
            count(SPANS_DROPPED, lost)
            logger.warning("infersight: %d spans not exported before exit: %s; counted in "
                           "failure_count('spans_dropped')", lost, why)
        return lost

    def _may_retry(self, outcome: Outcome) -> bool:
        try:
            return outcome.retryable()
        except Exception as exc:  # noqa: BLE001 - a bug here must not end the export thread
            record_failure("export retry check", exc)
            return True

    def _put_back(self, spans: Sequence[ReadableSpan]) -> None:
        """At the front, in order, as many as the queue has room for; the oldest beyond that are dropped."""
        room = max(self._max_queue - len(self._queue), 0)
        kept = list(spans)[len(spans) - room:] if room < len(spans) else list(spans)
        self._queue.extendleft((span, None) for span in reversed(kept))
        if len(kept) < len(spans):
            count(SPANS_DROPPED, len(spans) - len(kept))

    def _export(self, spans: Sequence[ReadableSpan]) -> Outcome:
        if self._sender is None:
            self.sending()  # the SDK's own sender says when, after encoding the batch
        try:
            ok = self._exporter.export(spans) is SpanExportResult.SUCCESS
            outcome = self._read_outcome(ok)
        except Exception as exc:  # noqa: BLE001 - an exporter bug must not end the export thread
            record_failure("span exporter", exc)
            outcome = Outcome(FAILED, detail=repr(exc)[:300])
        finally:
            with self._cond:
                self._waiting_since = None
        if not outcome.sent:
            count(EXPORT_FAILED)
            # At exit the loss is logged once, with this reason; 401/403/404 the sender logs
            # with what to change.
            quiet = self._stopping or outcome.status in (401, 403, 404)
            if not quiet and first_time("export:" + outcome.key()):
                logger.warning("infersight: could not export %d spans: %s. %s; failure_count('spans_dropped') "
                               "counts what is lost. Logged once per kind of failure.", len(spans),
                               outcome.describe(), "They are kept and sent again while the queue has room"
                               if outcome.retryable() else "They are dropped: sending them again cannot help")
        return outcome

    def _read_outcome(self, ok: bool) -> Outcome:
        if self._sender is None:
            return Outcome(SENT) if ok else Outcome(FAILED, detail="it reported a failure")
        outcome = self._sender.last
        if outcome.sent != ok:  # a subclass that disagrees with what it returned: trust the return
            return Outcome(SENT) if ok else Outcome(FAILED, outcome.target, detail="it reported a failure")
        return outcome

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
        """:meth:`stop`, as OpenTelemetry's provider calls it."""
        self.stop(timeout_s)

    def stop(self, timeout_s: float | None = None) -> bool:
        """Send what is queued while the export makes progress, for at most ``timeout_s``
        (default: the processor's bound); what is left then is counted as dropped and logged
        once with the reason. Returns True when everything queued was sent."""
        bound = self.shutdown_timeout_s if timeout_s is None else max(timeout_s, 0.0)
        started = time.monotonic()
        with self._cond:
            if self._stopping:
                return not (self._queue or self._inflight or self._abandoned)
            self._stopping = True
            self._cond.notify_all()
            why = self._wait_for_export(started, started + bound)
        lost = self._abandon(why) if why else 0
        if lost or self._thread.is_alive():
            # The export thread is stuck in a request: closing its session could wait on it too.
            threading.Thread(target=self._stop_exporter, name=THREAD_NAME + "-stop", daemon=True).start()
        else:
            self._stop_exporter()
        return not (why or self._abandoned)

    def _wait_for_export(self, started: float, deadline: float) -> str:
        """Called holding the lock: waits until the queue is sent (returns "") or why it gave up."""
        while (self._queue or self._inflight) and not self._abandoned:
            now = time.monotonic()
            if not self._thread.is_alive():
                return "the export thread had stopped"
            if now >= deadline:
                pending = len(self._queue) + self._inflight
                return (f"still sending, {pending} spans left when the {deadline - started:g} s shutdown bound ran "
                        "out (the collector was answering; init(shutdown_timeout_s=...) waits longer)")
            wake = deadline
            if self._waiting_since is not None:
                unanswered_at = max(self._waiting_since, started) + self._answer_wait_s
                if now >= unanswered_at:
                    return f"timed out: no answer from {self._target()} within {self._answer_wait_s:g} s at exit"
                wake = min(wake, unanswered_at)
            self._cond.wait(wake - now)
        return ""

    def _target(self) -> str:
        return self._sender.url if self._sender is not None else "the span exporter"

    def _stop_exporter(self) -> None:
        try:
            self._exporter.shutdown()
        except Exception as exc:  # noqa: BLE001 - shutdown is best-effort
            record_failure("exporter shutdown", exc)


def _backoff_s(failures: int, retry_after_s: float | None) -> float:
    """1 s doubling to 5 s; longer when the collector said when to come back (capped at 60 s)."""
    backoff = min(2.0 ** (failures - 1), _MAX_BACKOFF_S)
    if retry_after_s is not None:
        backoff = max(backoff, min(retry_after_s, _MAX_RETRY_AFTER_S))
    return backoff


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
    if type(span) is ReadableSpan and vars(span).keys() >= _SNAPSHOT_FIELDS:
        # The span handed to on_end is a snapshot OpenTelemetry made for the processors, and
        # every processor on a provider whose span work is deferred is the SDK's own: completing
        # the snapshot in place is safe, and cheaper than building another span (~3 µs of ~10).
        span._attributes = attributes
        if name:
            span._name = name
        return span
    return ReadableSpan(
        name=name or span.name, context=span.context, parent=span.parent, resource=span.resource,
        attributes=attributes, events=span.events, links=span.links, kind=span.kind, status=span.status,
        start_time=span.start_time, end_time=span.end_time, instrumentation_scope=span.instrumentation_scope,
    )


# What ReadableSpan keeps its attributes and name in (opentelemetry-sdk 1.x); without them a
# finished span is built anew. tests/sdk/test_export.py fails when they go.
_SNAPSHOT_FIELDS = frozenset({"_attributes", "_name"})

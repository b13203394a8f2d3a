"""OpenTelemetry metrics: GenAI client histograms and the queue gauges of :func:`watch_queue`.

Histograms use the bucket boundaries the GenAI semantic conventions advise, so they aggregate
with other instrumentations' series. They are recorded only for a meter provider the app gave
(or set globally), or when asked: the infersight collector stores the spans, which carry the
same numbers, and drops these series, while recording them was the largest part of the export
thread's work per span (three histogram records: ~35 µs). Queue gauges are observed on the
metric reader's thread, never on the application's.

A process that stops cleanly says so: at shutdown each watched queue reports one last point
marked ``infersight.queue.ended=true`` (:meth:`Instruments.end_queues`), so the collector can
tell a deploy's old series, which ends, from a reporter that vanished.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from opentelemetry.metrics import CallbackOptions, Meter, Observation

from . import semconv
from ._guard import record_failure

DURATION_BUCKETS_S = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
TTFT_BUCKETS_S = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)


class Instruments:
    """The histograms the decorators record into (when ``histograms``), and the queue gauges."""

    def __init__(self, meter: Meter, *, histograms: bool = True) -> None:
        # The queue series' phase: reporting, then one collection marked ended, then silent.
        self._queue_attributes: dict[str, Any] | None = {}
        meter.create_observable_gauge(
            semconv.QUEUE_DEPTH_METRIC, [self._observe_depth], unit="{item}", description="Items waiting"
        )
        meter.create_observable_gauge(
            semconv.QUEUE_OLDEST_AGE_METRIC, [self._observe_oldest_age], unit="s",
            description="Age of the oldest waiting item",
        )
        self.histograms = histograms
        if not histograms:
            return
        self.duration = meter.create_histogram(
            semconv.OPERATION_DURATION_METRIC, unit="s", description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS_S,
        )
        self.tokens = meter.create_histogram(
            semconv.TOKEN_USAGE_METRIC, unit="{token}", description="Tokens used per operation",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self.ttft = meter.create_histogram(
            semconv.TTFT_METRIC, unit="s", description="Time to the first streamed chunk",
            explicit_bucket_boundaries_advisory=TTFT_BUCKETS_S,
        )

    def end_queues(self) -> None:
        """Mark the queue gauges' next points as their last (``infersight.queue.ended=true``).

        The caller collects once more (the meter provider's shutdown or force flush), then calls
        :meth:`silence_queues`.
        """
        self._queue_attributes = {semconv.QUEUE_ENDED: True}

    def silence_queues(self) -> None:
        """Report no queue points any more: the series ended (an app's meter provider lives on),
        and the watches with them: a watch stopped after this owes no last point."""
        self._queue_attributes = None
        with _watched_lock:
            _watched.clear()

    def _observe_depth(self, options: CallbackOptions) -> Iterable[Observation]:
        extra = self._queue_attributes
        return () if extra is None else _observe_depth(extra)

    def _observe_oldest_age(self, options: CallbackOptions) -> Iterable[Observation]:
        extra = self._queue_attributes
        return () if extra is None else _observe_oldest_age(extra)

    def record(
        self,
        attributes: dict[str, Any],
        duration_s: float,
        input_tokens: int | None,
        output_tokens: int | None,
        ttft_s: float | None,
    ) -> None:
        self.duration.record(duration_s, attributes)
        if input_tokens is not None:
            self.tokens.record(input_tokens, {**attributes, semconv.TOKEN_TYPE: "input"})
        if output_tokens is not None:
            self.tokens.record(output_tokens, {**attributes, semconv.TOKEN_TYPE: "output"})
        if ttft_s is not None:
            self.ttft.record(ttft_s, attributes)


@dataclass(slots=True)
class _Watched:
    name: str
    depth_fn: Callable[[], float]
    oldest_age_fn: Callable[[], float | None] | None
    # Set by QueueWatch.stop: the gauges that still owe the series its last point, marked ended.
    ending: set[str] | None = None


_DEPTH, _AGE = "depth", "oldest_age"
_watched: dict[int, _Watched] = {}
_watched_lock = threading.Lock()
_ids = itertools.count(1)


class QueueWatch:
    """Handle returned by :func:`watch_queue`; :meth:`stop` ends the reporting."""

    def __init__(self, key: int) -> None:
        self._key = key

    def stop(self) -> None:
        """End the series: its next collection reports one last point marked
        ``infersight.queue.ended=true`` (a queue the app retires is not a reporter that vanished),
        then nothing."""
        with _watched_lock:
            watched = _watched.get(self._key)
            if watched is not None and watched.ending is None:
                watched.ending = {_DEPTH} if watched.oldest_age_fn is None else {_DEPTH, _AGE}


def watch_queue(
    name: str, depth_fn: Callable[[], float], oldest_age_fn: Callable[[], float | None] | None = None
) -> QueueWatch:
    """Report a queue's depth (and the age in seconds of its oldest item) as OTel gauges.

    ``depth_fn`` and ``oldest_age_fn`` are called on the metrics thread every export interval
    (after ``init``); they must be cheap and thread-safe, e.g. ``queue.qsize``. An exception in
    them is counted and the sample skipped. The collector's "queue does not drain" alert reads
    these series.
    """
    key = next(_ids)
    with _watched_lock:
        _watched[key] = _Watched(name, depth_fn, oldest_age_fn)
    return QueueWatch(key)


def watching_queues() -> bool:
    """Whether any queue is watched (cheap; for the shutdown's last collection)."""
    with _watched_lock:
        return bool(_watched)


def _snapshot(gauge: str) -> list[tuple[_Watched, bool]]:
    """The queues ``gauge`` reports now, each with whether this is its last point (and forgets
    a stopped queue once both gauges have reported it so)."""
    out = []
    with _watched_lock:
        for key, watched in list(_watched.items()):
            ending = watched.ending
            if ending is None:
                out.append((watched, False))
            elif gauge in ending:
                out.append((watched, True))
                ending.discard(gauge)
                if not ending:
                    del _watched[key]
    return out


def _observe_depth(extra: dict[str, Any]) -> Iterable[Observation]:
    for watched, last in _snapshot(_DEPTH):
        attributes = {semconv.QUEUE_NAME: watched.name, **extra, **({semconv.QUEUE_ENDED: True} if last else {})}
        try:
            yield Observation(float(watched.depth_fn()), attributes)
        except Exception as exc:  # noqa: BLE001 - a user depth_fn's failure is counted, never raised
            record_failure(f"watch_queue({watched.name!r}) depth_fn", exc)


def _observe_oldest_age(extra: dict[str, Any]) -> Iterable[Observation]:
    for watched, last in _snapshot(_AGE):
        if watched.oldest_age_fn is None:
            continue
        try:
            age = watched.oldest_age_fn()
        except Exception as exc:  # noqa: BLE001 - a user oldest_age_fn's failure is counted, never raised
            record_failure(f"watch_queue({watched.name!r}) oldest_age_fn", exc)
            continue
        if age is not None:
            attributes = {semconv.QUEUE_NAME: watched.name, **extra, **({semconv.QUEUE_ENDED: True} if last else {})}
            yield Observation(float(age), attributes)

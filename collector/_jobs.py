"""The collector's background work, as jobs under one scheduler.

    alerts   Evaluator.run_once, every --evaluation-interval: the collector's own spool
             sampled, the windowed detectors, the three paging rules, alert lifecycle and
             notifications, the daily digest
    judge    JudgeLoop.run_once, every --judge-interval: sample, judge, store the scores

Each job runs on a thread of its own, so a judge cycle that waits minutes on a slow model never
delays the pager. A run that raises is logged with its traceback and counted on ``/metrics``
(``infersight_job_failures_total{job=...}``); the job runs again at its next turn. The spool
writer is not a job: it is the ingest path, woken by every acknowledged request.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ._counters import Counters

logger = logging.getLogger("infersight.collector")


@dataclass(frozen=True, slots=True)
class _Job:
    name: str
    every_s: float
    first_after_s: float
    run: Callable[[], object]
    interrupt: Callable[[], None] | None
    setup: Callable[[], object] | None


class Clock:
    """Time as the scheduler reads and waits on it; tests give one whose waits take no time."""

    def now(self) -> float:
        return time.monotonic()

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        """Wait up to ``seconds`` or until ``stop`` is set; return whether it is set."""
        return stop.wait(seconds)


class Scheduler:
    """Runs named jobs periodically until :meth:`stop`. Thread-safe to :meth:`add` before
    :meth:`start`; :meth:`stop` blocks until every job's current run has ended (or the timeout)."""

    def __init__(self, counters: Counters, *, clock: Clock | None = None) -> None:
        self.counters = counters
        self.clock = clock or Clock()
        self._jobs: list[_Job] = []
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()

    def add(
        self,
        name: str,
        every_s: float,
        run: Callable[[], object],
        *,
        first_after_s: float | None = None,
        interrupt: Callable[[], None] | None = None,
        setup: Callable[[], object] | None = None,
    ) -> None:
        """Run ``run()`` every ``every_s`` seconds, the first time after ``first_after_s``
        (default: ``every_s``). ``interrupt`` is called at :meth:`stop` to cut a long run short.
        ``setup()`` runs once in the job's thread halfway through the wait for the first run: what
        the job reads once is read before its first turn is due, and not while the process starts
        (the collector's start, and a short-lived one's whole life, are left to ingest). If it
        raises, it is logged and counted like a failed run, and the runs go on."""
        if not every_s > 0:
            raise ValueError(f"The 'every_s' parameter of Scheduler.add must be positive; got {every_s!r}.")
        start = every_s if first_after_s is None else first_after_s
        self._jobs.append(_Job(name, every_s, start, run, interrupt, setup))

    def start(self) -> None:
        for job in self._jobs:
            thread = threading.Thread(target=self._loop, args=(job,), name=f"infersight-job-{job.name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        for job in self._jobs:
            if job.interrupt is not None:
                job.interrupt()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0.0))

    def _loop(self, job: _Job) -> None:
        clock = self.clock
        started, wait_s = clock.now(), job.first_after_s
        if job.setup is not None:
            if clock.wait(self._stop, job.first_after_s / 2):
                return
            self._run(job, job.setup)
            wait_s = max(job.first_after_s - (clock.now() - started), 0.0)
        while not clock.wait(self._stop, wait_s):
            started = clock.now()
            self._run(job, job.run)
            wait_s = max(job.every_s - (clock.now() - started), 0.0)

    def _run(self, job: _Job, step: Callable[[], object]) -> None:
        try:
            step()
        except Exception:  # one failed run must not end the job: logged and counted
            self.counters.add(f"job_failed:{job.name}")
            logger.exception("background job %r failed; it runs again in %.0f s", job.name, job.every_s)

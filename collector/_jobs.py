"""The collector's background work, as jobs under one scheduler.

    alerts   Evaluator.run_once, every --evaluation-interval: the collector's own spool
             sampled, the windowed detectors, the three paging rules, alert lifecycle and
             notifications, the daily digest
    judge    JudgeLoop.run_once, every --judge-interval: sample, judge, store the scores

Each job runs on a thread of its own, so a judge cycle that waits minutes on a slow model never
delays the pager. Both are exclusive: N collectors on one ClickHouse server would page N times, so
an exclusive job runs only in the collector that holds its lease in the store
(:class:`~.store.Lease`), renewed on a thread of its own every third of the TTL; when the holder
dies, another collector takes the lease within the TTL (plus one renewal interval) and runs the
job from then on. A run under way when its lease is lost (the store unreachable for a TTL) is
not cut short. A run that raises is logged with its traceback and counted on ``/metrics``
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
from .errors import StoreError
from .store import LEASE_TTL_S, Lease, Store, holder_name

logger = logging.getLogger("infersight.collector")


@dataclass(frozen=True, slots=True)
class _Job:
    name: str
    every_s: float
    first_after_s: float
    run: Callable[[], object]
    interrupt: Callable[[], None] | None
    setup: Callable[[], object] | None
    lease: Lease | None


class Clock:
    """Time as the scheduler reads and waits on it; tests give one whose waits take no time."""

    def now(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        """Unix time: what leases compare across processes."""
        return time.time()

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        """Wait up to ``seconds`` or until ``stop`` is set; return whether it is set."""
        return stop.wait(seconds)


class Scheduler:
    """Runs named jobs periodically until :meth:`stop`. Thread-safe to :meth:`add` before
    :meth:`start`; :meth:`stop` blocks until every job's current run has ended (or the timeout).

    Args:
        store: where the leases of exclusive jobs are kept (required for ``exclusive=True``).
        holder: this scheduler's name in the leases (default: host, pid and a random part).
        lease_ttl_s: how long a lease lasts unless renewed.
    """

    def __init__(
        self,
        counters: Counters,
        *,
        clock: Clock | None = None,
        store: Store | None = None,
        holder: str | None = None,
        lease_ttl_s: float = LEASE_TTL_S,
    ) -> None:
        self.counters = counters
        self.clock = clock or Clock()
        self.store = store
        self.holder = holder or holder_name()
        self.lease_ttl_s = lease_ttl_s
        self._jobs: list[_Job] = []
        self._threads: list[threading.Thread] = []
        self._lease_threads: list[threading.Thread] = []
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
        exclusive: bool = False,
    ) -> None:
        """Run ``run()`` every ``every_s`` seconds, the first time after ``first_after_s``
        (default: ``every_s``). ``interrupt`` is called at :meth:`stop` to cut a long run short.
        ``setup()`` runs once in the job's thread halfway through the wait for the first run: what
        the job reads once is read before its first turn is due, and not while the process starts
        (the collector's start, and a short-lived one's whole life, are left to ingest). If it
        raises, it is logged and counted like a failed run, and the runs go on.

        ``exclusive``: one run per deployment, not per collector: a run that is due waits until
        this scheduler holds the job's lease (checked every third of the TTL), so it comes
        within that of a takeover."""
        if not every_s > 0:
            raise ValueError(f"The 'every_s' parameter of Scheduler.add must be positive; got {every_s!r}.")
        lease = None
        if exclusive:
            if self.store is None:
                raise ValueError(f"The job {name!r} is exclusive, so the Scheduler needs a 'store' for its lease.")
            lease = Lease(self.store, name, self.holder, ttl_s=self.lease_ttl_s, wall=self.clock.time)
        start = every_s if first_after_s is None else first_after_s
        self._jobs.append(_Job(name, every_s, start, run, interrupt, setup, lease))

    def held(self) -> dict[str, bool]:
        """Each exclusive job's name and whether this process holds its lease now (for ``/metrics``)."""
        return {job.name: job.lease.held() for job in self._jobs if job.lease is not None}

    def start(self) -> None:
        for job in self._jobs:
            if job.lease is not None:
                keeper = threading.Thread(target=self._keep, args=(job.lease,), name=f"infersight-lease-{job.name}",
                                          daemon=True)
                keeper.start()
                self._lease_threads.append(keeper)
            thread = threading.Thread(target=self._loop, args=(job,), name=f"infersight-job-{job.name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout_s: float = 30.0, *, release: bool = True) -> None:
        """Stop every job; then give up the leases of the jobs that ended (``release=False``
        leaves them to expire, as a killed process does), so another collector need not wait out
        the TTL."""
        self._stop.set()
        for job in self._jobs:
            if job.interrupt is not None:
                job.interrupt()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads + self._lease_threads:
            thread.join(max(deadline - time.monotonic(), 0.0))
        for job, thread in zip(self._jobs, self._threads, strict=False):
            # A run that outlived the timeout keeps its lease until it expires: no second runner meanwhile.
            if release and job.lease is not None and not thread.is_alive():
                try:
                    job.lease.release()
                except StoreError:  # the store is gone: the lease expires by itself
                    logger.warning("cannot release the lease of job %r; it expires by itself", job.name)

    def _keep(self, lease: Lease) -> None:
        """Take or renew ``lease`` every third of its TTL until stopped."""
        failing = False
        while True:
            try:
                lease.renew()
                failing = False
            except Exception:  # the store is down: the lease runs out, and the job waits
                self.counters.add(f"lease_failed:{lease.name}")
                if not failing:
                    logger.exception("cannot renew the lease of job %r; retrying", lease.name)
                failing = True
            if self.clock.wait(self._stop, lease.ttl_s / 3):
                return

    def _loop(self, job: _Job) -> None:
        clock = self.clock
        started, wait_s = clock.now(), job.first_after_s
        if job.setup is not None:
            if clock.wait(self._stop, job.first_after_s / 2):
                return
            self._run(job, job.setup)
            wait_s = max(job.first_after_s - (clock.now() - started), 0.0)
        while not clock.wait(self._stop, wait_s):
            if job.lease is not None and not job.lease.held():
                # Due, and another collector runs it (look again at the next renewal), or the
                # lease was not tried yet (the first turn after the start: look again shortly).
                wait_s = job.lease.ttl_s / 3 if job.lease.renewals else 0.05
                continue
            started = clock.now()
            self._run(job, job.run)
            wait_s = max(job.every_s - (clock.now() - started), 0.0)

    def _run(self, job: _Job, step: Callable[[], object]) -> None:
        if step is job.run:
            self.counters.add(f"job_runs:{job.name}")
        try:
            step()
        except Exception:  # one failed run must not end the job: logged and counted
            self.counters.add(f"job_failed:{job.name}")
            logger.exception("background job %r failed; it runs again in %.0f s", job.name, job.every_s)

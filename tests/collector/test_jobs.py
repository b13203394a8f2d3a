"""The scheduler of the collector's background jobs: failures are counted, never fatal; stop is bounded."""

from __future__ import annotations

import threading

import pytest

from infersight.collector._counters import Counters
from infersight.collector._jobs import Clock, Scheduler
from infersight.collector.spool import SpoolDepth
from infersight.collector.web._metrics import render
from tests.conftest import wait_for


def test_a_failing_job_is_counted_runs_again_and_does_not_hold_back_the_others():
    counters = Counters()
    runs = {"flaky": 0, "steady": 0}

    def flaky() -> None:
        runs["flaky"] += 1
        raise RuntimeError("the judge is down")

    def steady() -> None:
        runs["steady"] += 1

    jobs = Scheduler(counters)
    jobs.add("judge", 0.02, flaky, first_after_s=0.0)
    jobs.add("alerts", 0.02, steady)
    jobs.start()
    try:
        assert wait_for(lambda: runs["flaky"] >= 3 and runs["steady"] >= 3, timeout_s=60)
    finally:
        jobs.stop()
    assert counters.get("job_failed:judge") == runs["flaky"] and counters.get("job_failed:alerts") == 0
    text = render(counters.snapshot(), SpoolDepth(0, 0, 0, 1, 0.0))
    assert f'infersight_job_failures_total{{job="judge"}} {runs["flaky"]}\n' in text


def test_stop_interrupts_a_long_run_and_returns():
    started, interrupted = threading.Event(), threading.Event()

    def long_run() -> None:
        started.set()
        interrupted.wait(600)

    jobs = Scheduler(Counters())
    jobs.add("judge", 60, long_run, first_after_s=0.0, interrupt=interrupted.set)
    jobs.start()
    assert started.wait(60)
    jobs.stop(timeout_s=120)  # without the interrupt the run would outlast this
    assert interrupted.is_set() and not any(thread.is_alive() for thread in jobs._threads)


def test_intervals_must_be_positive():
    with pytest.raises(ValueError, match=r"'every_s' parameter of Scheduler\.add must be positive"):
        Scheduler(Counters()).add("x", 0, lambda: None)


class FakeClock(Clock):
    """Waits take no real time: they move the clock on, and the loop stops after ``turns`` waits."""

    def __init__(self, turns: int) -> None:
        self.t = 0.0
        self.turns = turns
        self.done = threading.Event()

    def now(self) -> float:
        return self.t

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        self.t += seconds
        self.turns -= 1
        if self.turns < 0:
            self.done.set()
            return True
        return stop.is_set()


def test_setup_runs_within_the_wait_for_the_first_run_and_a_failed_one_does_not_stop_the_runs():
    clock = FakeClock(turns=3)
    at: dict[str, list[float]] = {"setup": [], "run": []}
    threads: set[str] = set()
    counters = Counters()

    def setup() -> None:
        at["setup"].append(clock.t)
        threads.add(threading.current_thread().name)
        clock.t += 0.2  # setup takes 0.2 s
        raise RuntimeError("the store is not up yet")

    def run() -> None:
        at["run"].append(clock.t)
        threads.add(threading.current_thread().name)

    jobs = Scheduler(counters, clock=clock)
    jobs.add("alerts", 0.6, run, setup=setup)
    jobs.start()
    assert clock.done.wait(60)  # the loop ran its turns (stop() now could come before the first)
    jobs.stop(timeout_s=60)
    # setup halfway to the first run, which is due 0.6 s after the start, setup's 0.2 s included
    # (not 0.6 s after setup ended: 1.1 s); the next run 0.6 s after that
    assert at == {"setup": [0.3], "run": [pytest.approx(0.6), pytest.approx(1.2)]}
    assert threads == {"infersight-job-alerts"} and counters.get("job_failed:alerts") == 1

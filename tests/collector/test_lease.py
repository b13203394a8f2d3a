"""One alert evaluator and one judge per deployment: leases in the store, on both backends.

Time in the leases is an injected clock, so each verdict is about claims and expiry times, never
about how fast this machine runs the threads."""

from __future__ import annotations

import re
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from infersight.collector._counters import Counters
from infersight.collector._jobs import Clock, Scheduler
from infersight.collector._server import CollectorProcess
from infersight.collector.store import Lease
from infersight.collector.store._lease import Claim, lease_holder
from tests.conftest import free_port, wait_for

TTL_S = 30.0
T0 = 1_800_000_000.0


@pytest.fixture(params=["chdb", "clickhouse"])
def backend(request, store, server_stores):
    return store if request.param == "chdb" else server_stores("leases")


class ManualClock(Clock):
    """Unix time moves only when the test says; waits are short real waits, so loops keep turning."""

    def __init__(self, t: float) -> None:
        self.t = t

    def time(self) -> float:
        return self.t

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        return stop.wait(min(seconds, 0.01))


def lease_pair(backend, clock: ManualClock) -> tuple[Lease, Lease]:
    name = f"job-{uuid.uuid4().hex[:8]}"
    return (Lease(backend, name, "a", ttl_s=TTL_S, wall=clock.time),
            Lease(backend, name, "b", ttl_s=TTL_S, wall=clock.time))


def test_the_first_claim_written_wins_whatever_the_claimants_clocks_say():
    # b's clock is behind, so its claim starts earlier; a's insert was written first and wins,
    # and b's claim, covered by a's, is refused for as long as a's lasts.
    claims = [Claim("a", 10_000, 40_000), Claim("b", 9_000, 39_000)]
    assert lease_holder(claims, 20_000) == Claim("a", 10_000, 40_000)
    assert lease_holder(claims, 40_000) is None  # expired: free
    # a renews; b's claim after a's expiry takes it; a's late renewal is then refused
    claims += [Claim("a", 20_000, 50_000), Claim("b", 50_000, 80_000), Claim("a", 49_000, 79_000)]
    assert lease_holder(claims, 60_000).holder == "b"
    # a release is a claim that ends when it starts
    assert lease_holder([*claims, Claim("b", 60_000, 60_000)], 60_000) is None


def test_one_holder_renewals_keep_it_and_the_other_takes_over_at_expiry(backend):
    clock = ManualClock(T0)
    a, b = lease_pair(backend, clock)
    assert a.renew() and a.held()
    assert not b.renew() and not b.held()
    clock.t += TTL_S / 3
    assert a.renew() and not b.renew()  # renewed: expires a TTL after this renewal
    clock.t += TTL_S - 0.001
    assert not b.renew() and a.held()
    clock.t += 0.001  # a stopped renewing a TTL ago
    assert not a.held()
    assert b.renew() and b.current().holder == "b"
    assert not a.renew() and not a.held()  # the old holder's claim is refused: it stands down


def test_a_released_lease_is_free_at_once(backend):
    clock = ManualClock(T0)
    a, b = lease_pair(backend, clock)
    assert a.renew()
    a.release()
    assert not a.held() and a.current() is None
    assert b.renew()


def scheduler(backend, clock: ManualClock, holder: str, runs: list[str], name: str) -> Scheduler:
    jobs = Scheduler(Counters(), clock=clock, store=backend, holder=holder, lease_ttl_s=TTL_S)
    jobs.add(name, 0.01, lambda: runs.append(holder), first_after_s=0.0, exclusive=True)
    return jobs


def renewals(jobs: Scheduler) -> int:
    (job,) = jobs._jobs
    assert job.lease is not None
    return job.lease.renewals


def test_two_schedulers_on_one_store_run_the_job_once_and_fail_over_within_the_ttl(backend):
    clock = ManualClock(T0)
    name = f"alerts-{uuid.uuid4().hex[:8]}"
    runs: list[str] = []
    a = scheduler(backend, clock, "a", runs, name)
    a.start()
    assert wait_for(lambda: runs)  # a holds the lease and runs
    b = scheduler(backend, clock, "b", runs, name)
    b.start()
    try:
        seen = renewals(b)
        assert wait_for(lambda: renewals(b) >= seen + 3)
        assert set(runs) == {"a"} and a.held() == {name: True} and b.held() == {name: False}
        a.stop(timeout_s=60, release=False)  # a dies: nobody renews its lease any more
        stopped_at = len(runs)
        clock.t += TTL_S - 0.001  # a's last claim, at T0, has not expired yet
        seen = renewals(b)
        assert wait_for(lambda: renewals(b) >= seen + 3)
        assert len(runs) == stopped_at and b.held() == {name: False}
        clock.t += 0.001  # a TTL after a's last claim
        assert wait_for(lambda: "b" in runs)
        assert set(runs[stopped_at:]) == {"b"} and b.held() == {name: True}
    finally:
        a.stop(timeout_s=60)
        b.stop(timeout_s=60)


def test_a_stopped_scheduler_hands_the_lease_over_without_waiting_for_the_ttl(backend):
    clock = ManualClock(T0)  # time stands still: only a release can free the lease
    name = f"judge-{uuid.uuid4().hex[:8]}"
    runs: list[str] = []
    a, b = scheduler(backend, clock, "a", runs, name), scheduler(backend, clock, "b", runs, name)
    a.start()
    assert wait_for(lambda: runs)
    b.start()
    try:
        a.stop(timeout_s=60)
        assert wait_for(lambda: "b" in runs)
    finally:
        b.stop(timeout_s=60)


def test_an_exclusive_job_needs_a_store():
    with pytest.raises(ValueError, match="needs a 'store'"):
        Scheduler(Counters()).add("alerts", 60, lambda: None, exclusive=True)


def metric(url: str, name: str, job: str) -> int:
    found = re.search(rf'^{name}{{job="{job}"}} (\d+)$', httpx.get(url + "/metrics").text, re.MULTILINE)
    return int(found.group(1)) if found else 0


def test_two_collectors_on_one_clickhouse_server_evaluate_alerts_once(tmp_path, clickhouse_http):
    url = f"http://default:@{clickhouse_http[len('http://'):]}/lease_{uuid.uuid4().hex[:6]}"
    # No decode workers: no span is sent, and each would be one more process to start and stop. A
    # 6 s lease: the other collector looks for it every 2 s (not 10), with 4 s of slack for a renewal.
    args = ("--no-auth", "--decode-workers", "0", "--clickhouse-url", url, "--evaluation-interval", "0.5",
            "--lease-ttl", "6")
    first, second = collectors = [CollectorProcess(tmp_path / name, free_port(), extra_args=args) for name in "ab"]
    try:
        with ThreadPoolExecutor(2) as starting:  # the two start-ups overlap (their waits on the store's DDL)
            list(starting.map(CollectorProcess.start, collectors))

        def held() -> list[int]:
            return [metric(c.url, "infersight_job_lease_held", "alerts") for c in collectors]

        assert wait_for(lambda: sum(held()) == 1 and any(
            metric(c.url, "infersight_job_runs_total", "alerts") >= 3 for c in collectors))
        holder, other = (first, second) if held()[0] else (second, first)
        before = metric(other.url, "infersight_job_runs_total", "alerts")
        time.sleep(2)  # four evaluation intervals: the other collector still does not evaluate
        assert metric(other.url, "infersight_job_runs_total", "alerts") == before == 0
        assert metric(holder.url, "infersight_job_runs_total", "alerts") >= 3
        holder.stop()  # a clean stop releases the lease: the other evaluates from then on
        assert wait_for(lambda: metric(other.url, "infersight_job_runs_total", "alerts") >= 1)
        assert metric(other.url, "infersight_job_lease_held", "alerts") == 1
    finally:
        first.stop()
        second.stop()

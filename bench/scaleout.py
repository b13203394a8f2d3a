"""Scale-out: N stateless collectors on one ClickHouse server endpoint.

For N = 1, 2, 3 (``--collectors``): a fresh database on one ClickHouse endpoint, one project key
made for the deployment (``infersight keys create --clickhouse-url``, so it lives in the store),
N ``infersight collector --clickhouse-url`` processes, each with a data directory of its own (its
spool), and two client threads per collector POSTing 512-span OTLP/protobuf requests to that
collector for ``--seconds``. Reported per collector and in total: spans acknowledged per second,
CPU per process (collectors, the server, this client process) over the load in cores, and
spans stored per second end to end (acknowledged spans over load plus drain, counted in the
store after the drain, which must hold every acknowledged span). It also checks that every
collector accepts the one key, and that each exclusive job (alert evaluator, judge loop) is held
by exactly one collector; with ``--failover`` it kills the holder of the alert lease at the
largest N and times until another collector holds it.

The server is ``tests/collector/clickhouse_http.py`` unless ``--clickhouse-url`` names a real
one: no ClickHouse server package can be installed here, so that endpoint runs chDB behind a
Python HTTP server, which executes one statement at a time. Every process shares the machine's
cores, so the figures show how load spreads and where it queues on one machine, not what N
machines would do.

    .venv/bin/python bench/scaleout.py [--collectors 1 2 3] [--seconds 15] [--content] [--failover]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ingest import HOST, INFERSIGHT, PROJECT, CollectorChild, _fresh_ids, build_body, free_port, wait_until

ROOT = Path(__file__).resolve().parents[1]
BATCH = 512
THREADS_PER_COLLECTOR = 2
BODY_POOL = 8
_ids = iter(range(10**9, 2 * 10**9))
_ids_lock = threading.Lock()


@dataclass
class Round:
    collectors: int
    load_s: float
    acked: list[int]  # spans acknowledged, per collector
    failed_requests: int
    cpu_cores: list[float]  # per collector (with its decode workers), CPU seconds over load_s
    server_cores: float
    client_cores: float
    drain_s: float | None  # after the load until the store held every acknowledged span
    stored: int
    lease_holders: dict[str, int]  # exclusive job -> collectors holding its lease
    key_accepted: int  # collectors that answered the deployment's key with 200
    failover_s: float | None = None

    @property
    def acked_per_s(self) -> float:
        return sum(self.acked) / self.load_s

    @property
    def stored_per_s(self) -> float | None:
        return None if self.drain_s is None else sum(self.acked) / (self.load_s + self.drain_s)


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` and its direct children (a collector's decode workers)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if stat.parent.name == str(pid) or fields[1] == str(pid):
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    usage = os.times()
    return usage.user + usage.system


class Server:
    """The ClickHouse HTTP endpoint: the test suite's chDB-backed one, in a child process."""

    def __init__(self, data_dir: Path) -> None:
        port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.collector.clickhouse_http", "--data-dir", str(data_dir), "--port", str(port)],
            cwd=ROOT,
        )
        self.url = f"http://{HOST}:{port}"
        if wait_until(self._ready, 60) is None:
            self.stop()
            raise TimeoutError("the ClickHouse endpoint did not start")

    def _ready(self) -> bool:
        try:
            return httpx.get(self.url + "/ping", timeout=1, trust_env=False).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(20)


def count_stored(http: httpx.Client, server_url: str, database: str) -> int:
    response = http.post(server_url + "/", params={"database": database},
                         content=f"SELECT count() FROM llm_spans WHERE project = '{PROJECT}'")
    response.raise_for_status()
    return int(response.text.strip())


def lease_holders(http: httpx.Client, urls: list[str]) -> dict[str, int]:
    held: dict[str, int] = {}
    for url in urls:
        for job, value in re.findall(r'^infersight_job_lease_held\{job="(\w+)"\} (\d+)$',
                                     http.get(url + "/metrics").text, re.MULTILINE):
            held[job] = held.get(job, 0) + int(value)
    return held


def drive(urls: list[str], key: str, seconds: float, content: bool) -> tuple[list[int], int, float]:
    """Two client threads per collector for ``seconds``; spans acknowledged per collector."""
    bodies = [build_body(BATCH, seed=900 + i, content=content) for i in range(BODY_POOL)]
    headers = {"content-type": "application/x-protobuf", "authorization": f"Bearer {key}"}
    acked = [0] * len(urls)
    failed = [0]
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def worker(index: int, collector: int) -> None:
        with httpx.Client(trust_env=False, timeout=60) as http:
            n = index
            while time.monotonic() < deadline:
                with _ids_lock:
                    request = next(_ids)
                body = _fresh_ids(bodies[n % BODY_POOL], request)
                n += 1
                response = http.post(f"{urls[collector]}/v1/traces", content=body, headers=headers)
                with lock:
                    if response.status_code == 200:
                        acked[collector] += BATCH
                    else:
                        failed[0] += 1

    threads = [threading.Thread(target=worker, args=(i, i % len(urls)))
               for i in range(THREADS_PER_COLLECTOR * len(urls))]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return acked, failed[0], time.monotonic() - started


def one_round(n: int, server: Server, tmp: Path, seconds: float, content: bool, failover: bool,
              drain_timeout_s: float) -> Round:
    database = f"scale_{n}_{uuid.uuid4().hex[:6]}"
    store_url = f"http://default:@{server.url[len('http://'):]}/{database}"
    http = httpx.Client(trust_env=False, timeout=60)
    made = subprocess.run([INFERSIGHT, "keys", "create", "--project", PROJECT, "--role", "admin",
                           "--clickhouse-url", store_url], capture_output=True, text=True, check=True)
    key = made.stdout.splitlines()[0].strip()
    children = [CollectorChild(tmp / f"{database}-{i}", free_port(), ("--clickhouse-url", store_url))
                for i in range(n)]
    urls = [c.url for c in children]
    try:
        auth = {"authorization": f"Bearer {key}"}
        wait_until(lambda: all(http.get(u + "/api/v1/summary", headers=auth).status_code == 200 for u in urls), 30)
        accepted = sum(http.get(u + "/api/v1/summary", headers=auth).status_code == 200 for u in urls)
        wait_until(lambda: all(v == 1 for v in lease_holders(http, urls).values()), 60)
        warm, _, _ = drive(urls, key, 2.0, content)  # warm up: first inserts, schema caches
        wait_until(lambda: count_stored(http, server.url, database) >= sum(warm), drain_timeout_s)
        base = count_stored(http, server.url, database)
        cpu_before = [cpu_seconds(c.pid) for c in children]
        server_before, client_before = cpu_seconds(server.process.pid), own_cpu_seconds()
        acked, failed, load_s = drive(urls, key, seconds, content)
        cpu = [(cpu_seconds(c.pid) - b) / load_s for c, b in zip(children, cpu_before, strict=True)]
        server_cores = (cpu_seconds(server.process.pid) - server_before) / load_s
        client_cores = (own_cpu_seconds() - client_before) / load_s
        drain_s = wait_until(lambda: count_stored(http, server.url, database) - base >= sum(acked), drain_timeout_s)
        stored = count_stored(http, server.url, database) - base
        holders = lease_holders(http, urls)
        result = Round(n, load_s, acked, failed, cpu, server_cores, client_cores, drain_s, stored, holders, accepted)
        if failover and n > 1:
            result.failover_s = kill_alert_holder(http, children)
        return result
    finally:
        for child in children:
            child.stop()
        http.close()


def kill_alert_holder(http: httpx.Client, children: list[CollectorChild]) -> float | None:
    """SIGKILL the collector holding the alert evaluator's lease (no release: it just dies);
    seconds until another collector holds it."""
    def holds(child: CollectorChild) -> bool:
        return re.search(r'^infersight_job_lease_held\{job="alerts"\} 1$', http.get(child.url + "/metrics").text,
                         re.MULTILINE) is not None

    holder = next(c for c in children if holds(c))
    holder.process.send_signal(signal.SIGKILL)
    holder.process.wait()
    killed = time.monotonic()
    others = [c for c in children if c is not holder]
    waited = wait_until(lambda: sum(holds(c) for c in others) == 1, 120)
    return None if waited is None else time.monotonic() - killed


def table(rounds: list[Round]) -> str:
    lines = [
        "| collectors | acked spans/s (total) | per collector | stored spans/s | drain s | stored = acked |"
        " collector CPU, cores each | server CPU, cores | client CPU, cores | lease holders | key accepted |",
        "|---:|---:|---|---:|---:|:---:|---|---:|---:|---|---:|",
    ]
    for r in rounds:
        per = ", ".join(f"{a / r.load_s:,.0f}" for a in r.acked)
        stored = "-" if r.stored_per_s is None else f"{r.stored_per_s:,.0f}"
        drain = "timeout" if r.drain_s is None else f"{r.drain_s:.1f}"
        holders = ", ".join(f"{job} {count}" for job, count in sorted(r.lease_holders.items()))
        lines.append(
            f"| {r.collectors} | {r.acked_per_s:,.0f} | {per} | {stored} | {drain} |"
            f" {'yes' if r.stored == sum(r.acked) else f'no ({r.stored:,} of {sum(r.acked):,})'} |"
            f" {', '.join(f'{c:.2f}' for c in r.cpu_cores)} | {r.server_cores:.2f} | {r.client_cores:.2f} |"
            f" {holders} | {r.key_accepted}/{r.collectors} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collectors", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--content", action="store_true", help="spans carry ~1 KB of prompt and ~0.4 KB of output")
    parser.add_argument("--failover", action="store_true", help="kill the alert lease holder at the largest N")
    parser.add_argument("--drain-timeout", type=float, default=300.0)
    args = parser.parse_args()
    rounds = []
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp) / "server")
        try:
            for n in args.collectors:
                print(f"{n} collector(s) ...", file=sys.stderr)
                rounds.append(one_round(n, server, Path(tmp), args.seconds, args.content,
                                        args.failover and n == max(args.collectors), args.drain_timeout))
        finally:
            server.stop()
    print(f"\n{BATCH}-span requests, {THREADS_PER_COLLECTOR} client threads per collector, {args.seconds:g} s"
          f" per round, {'with' if args.content else 'without'} content; {os.cpu_count()} CPUs shared by every"
          f" process; load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after\n")
    print(table(rounds))
    for r in rounds:
        if r.failover_s is not None or (args.failover and r.collectors == max(args.collectors) > 1):
            took = "not within 120 s" if r.failover_s is None else f"{r.failover_s:.1f} s"
            print(f"\nalert lease holder killed (SIGKILL) with {r.collectors} collectors: another held it after {took}")


if __name__ == "__main__":
    main()

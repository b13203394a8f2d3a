"""What one project's flood costs another project's requests: a canary's ack latency.

Starts ``infersight collector`` as a child process (defaults: one decode worker per core but
one) with two project keys. A canary project POSTs one single-span request every 100 ms over a
real socket, first alone, then while a flood project POSTs, from a process of its own (so the
flood's client threads do not hold the canary's GIL), as fast as the collector acknowledges:

- 100k-span requests (gzip, as an exporter with compression on sends them: ~6.5 MiB, ~52 MiB decoded),
- 3.8 MiB gzip requests (just under the 4 MiB large-body mark; ~58k spans, ~30 MiB decoded),
- 3.8 MiB plain requests (~7,000 spans),
- 0.5 MiB plain requests (~950 spans: the largest that the fast lane takes),
- many tiny requests (one span each, from 16 connections).

Each flood runs ``--seconds``; the canary starts one second in, so the flood's queue is full. Between
floods the spool drains. The table gives the canary's p50/p99/max ack latency per flood beside the
canary alone in the same run (the machine may be shared: compare rows, not runs), and the flood's
acknowledged spans per second.

    .venv/bin/python bench/fairness.py [--seconds 10] [--only tiny,3.8MiB-gzip]
"""

from __future__ import annotations

import argparse
import gzip
import multiprocessing
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from multiprocessing.synchronize import Event
from pathlib import Path

import httpx
from ingest import INFERSIGHT, Collector, build_body, wait_until

CANARY_INTERVAL_S = 0.1
WARMUP_S = 1.0  # the flood runs this long before the canary starts, so its queue is full


@dataclass(frozen=True)
class Flood:
    name: str
    spans: int  # per request
    gzip: bool
    senders: int  # concurrent connections


FLOODS = (
    Flood("100k-span", 100_000, True, 4),
    Flood("3.8MiB-gzip", 58_000, True, 4),
    Flood("3.8MiB-plain", 7_200, False, 4),
    Flood("0.5MiB-plain", 950, False, 4),  # just under the fast lane's 512 KiB: the longest requests there
    Flood("tiny", 1, False, 16),
)


@dataclass
class Row:
    flood: str
    body_kib: float
    canary_ms: list[float]
    canary_failed: int
    flood_requests: int
    flood_spans_per_s: float
    flood_failed: int

    def q(self, p: float) -> float:
        ordered = sorted(self.canary_ms)
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else float("nan")


def _flood_body(flood: Flood, seed: int) -> bytes:
    body = build_body(flood.spans, seed=seed)
    return gzip.compress(body, 6) if flood.gzip else body


def _flood(
    url: str, key: str, flood: Flood, stop: Event, ready: Event, out: multiprocessing.Queue[tuple[int, int]]
) -> None:
    """The flood project's senders, in a process of their own."""
    bodies = [_flood_body(flood, seed) for seed in range(2 if flood.spans > 1000 else 8)]
    headers = {"content-type": "application/x-protobuf", "authorization": f"Bearer {key}"}
    if flood.gzip:
        headers["content-encoding"] = "gzip"
    ok = failed = 0
    lock = threading.Lock()

    def send(index: int) -> None:
        nonlocal ok, failed
        with httpx.Client(trust_env=False, timeout=300) as client:
            i = index
            while not stop.is_set():
                try:
                    body = bodies[i % len(bodies)]
                    status = client.post(f"{url}/v1/traces", content=body, headers=headers).status_code
                except httpx.HTTPError:
                    status = 0
                i += 1
                with lock:
                    if status == 200:
                        ok += 1
                    else:
                        failed += 1

    ready.set()
    threads = [threading.Thread(target=send, args=(n,)) for n in range(flood.senders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put((ok, failed))


def _canary(c: Collector, key: str, seconds: float) -> tuple[list[float], int]:
    body = build_body(1, seed=7)
    headers = {"content-type": "application/x-protobuf", "authorization": f"Bearer {key}"}
    latencies: list[float] = []
    failed = 0
    with httpx.Client(trust_env=False, timeout=120) as client:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            started = time.perf_counter()
            response = client.post(f"{c.url}/v1/traces", content=body, headers=headers)
            elapsed = time.perf_counter() - started
            if response.status_code == 200:
                latencies.append(elapsed * 1000)
            else:
                failed += 1
            time.sleep(max(0.0, CANARY_INTERVAL_S - elapsed))
    return latencies, failed


def run_flood(c: Collector, canary_key: str, flood_key: str, flood: Flood | None, seconds: float) -> Row:
    if flood is None:
        latencies, failed = _canary(c, canary_key, seconds)
        return Row("none (canary alone)", 0.6, latencies, failed, 0, 0.0, 0)
    ctx = multiprocessing.get_context("spawn")
    stop, ready = ctx.Event(), ctx.Event()
    out: multiprocessing.Queue[tuple[int, int]] = ctx.Queue()
    process = ctx.Process(target=_flood, args=(c.url, flood_key, flood, stop, ready, out))
    received_before = c.metric("spans_received_total") or 0.0
    process.start()
    ready.wait(120)
    started = time.monotonic()
    time.sleep(WARMUP_S)
    latencies, failed = _canary(c, canary_key, seconds - WARMUP_S)
    stop.set()
    ok, flood_failed = out.get(timeout=600)  # the senders finish their requests in flight
    process.join()
    flood_s = time.monotonic() - started
    flood_spans = (c.metric("spans_received_total") or 0.0) - received_before - len(latencies)
    return Row(flood.name, len(_flood_body(flood, 0)) / 1024, latencies, failed, ok, flood_spans / flood_s,
               flood_failed)


def _project_key(data_dir: Path, project: str) -> str:
    done = subprocess.run(
        [INFERSIGHT, "keys", "create", "--project", project, "--data-dir", str(data_dir)],
        capture_output=True, text=True, check=True,
    )
    return done.stdout.splitlines()[0].strip()


def run(seconds: float, floods: tuple[Flood, ...]) -> list[Row]:
    data_dir = Path(tempfile.mkdtemp(prefix="infersight-fairness-"))
    collector: Collector | None = None
    try:
        flood_key = _project_key(data_dir, "flood")
        collector = Collector(data_dir)  # its own key is the canary's
        _canary(collector, collector.key, 1.0)  # warm-up: the first requests start the writer's work
        rows = [run_flood(collector, collector.key, flood_key, None, seconds)]
        for flood in floods:
            rows.append(run_flood(collector, collector.key, flood_key, flood, seconds))
            wait_until(lambda: collector is not None and collector.metric("spool_rows") == 0, 180)
        rows.append(run_flood(collector, collector.key, flood_key, None, seconds))
        return rows
    finally:
        if collector is not None:
            collector.close()
        shutil.rmtree(data_dir, ignore_errors=True)


def table(rows: list[Row]) -> str:
    lines = [
        "| flood from another project | flood body KiB | canary requests | canary p50 ms | canary p99 ms "
        "| canary max ms | canary failed | flood requests acked | flood spans/s | flood failed |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.flood} | {r.body_kib:,.0f} | {len(r.canary_ms)} | {r.q(0.5):,.0f} | {r.q(0.99):,.0f} "
            f"| {max(r.canary_ms, default=float('nan')):,.0f} | {r.canary_failed} | {r.flood_requests:,} "
            f"| {r.flood_spans_per_s:,.0f} | {r.flood_failed} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="each flood's length")
    parser.add_argument("--only", default="", help="comma-separated flood names: " + ", ".join(f.name for f in FLOODS))
    args = parser.parse_args()
    names = {n.strip() for n in args.only.split(",") if n.strip()}
    floods = tuple(f for f in FLOODS if not names or f.name in names)
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    rows = run(args.seconds, floods)
    print(f"{started}, {os.cpu_count()} CPUs, load average at end {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(table(rows))
    alone = statistics.median(rows[0].canary_ms + rows[-1].canary_ms)
    print(f"canary alone, median of both runs: {alone:.0f} ms")


if __name__ == "__main__":
    main()

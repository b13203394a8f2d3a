"""The collector's peak memory under compressible load, against the bound ARCHITECTURE.md states.

Starts ``infersight collector`` (embedded store, default settings: 64 MiB body limit) and
1. sends a backlog of compressible 60 MiB spans (one span a request, gzip, ~60 KiB on the wire;
   a 60 MiB prompt and a short answer, so the detectors read each whole row) faster than the
   writer stores them, and waits until every one is stored;
2. sends many small gzip requests at once, each inflating to ~60 MiB of spans (2,000 spans of
   30 KiB each), from many client threads, and waits until every one is stored.
Prints the server process's peak RSS (VmHWM) and the decode and detect workers' (sampled every
20 ms) against the stated bound (every entry here is ~61 MiB of rows, under the 64 MiB batch cap).

    .venv/bin/python bench/memory.py
"""

from __future__ import annotations

import argparse
import gzip
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest import Collector, kv, wait_until

MIB = 1 << 20
BODY_LIMIT = 64 * MIB  # the collector's default max_body_bytes
BATCH_RAW = 64 * MIB  # the spool writer's batch cap (raw bytes)
ROWS_PER_BODY_BYTE = 4  # decode_request's cap on a request's rows


def stated_bound_mib(idle_server_mib: float, in_flight_mib: float, largest_entry_mib: float) -> tuple[float, float]:
    """(server, each worker) peak RSS in MiB, as ARCHITECTURE.md states it: the server at its idle
    size plus the request bodies it holds plus 24 times the largest batch's raw bytes (the cap,
    or one entry above it, at most ROWS_PER_BODY_BYTE x BODY_LIMIT); a worker 150 MiB plus four
    times the body limit."""
    largest_batch = max(BATCH_RAW / MIB, min(largest_entry_mib, ROWS_PER_BODY_BYTE * BODY_LIMIT / MIB))
    return idle_server_mib + in_flight_mib + 24 * largest_batch, 150 + 4 * BODY_LIMIT / MIB


def _body(spans: int, attribute_bytes: int, seed: int, *, with_answer: bool = False) -> bytes:
    rng = random.Random(seed)
    now = time.time_ns()
    text = ("All work and no play makes a dull prompt. " * (attribute_bytes // 42 + 1))[:attribute_bytes]
    messages = '[{"role":"user","parts":[{"type":"text","content":"' + text + '"}]}]'
    # With an answer the detectors parse the whole row, prompt included.
    answer = [kv("gen_ai.output.messages", '[{"role":"assistant","parts":[{"type":"text","content":"Noted."}]}]')
              ] if with_answer else []
    request = ExportTraceServiceRequest(resource_spans=[ResourceSpans(
        resource=Resource(attributes=[kv("service.name", "memory-bench")]),
        scope_spans=[ScopeSpans(scope=InstrumentationScope(name="bench"), spans=[
            Span(trace_id=rng.randbytes(16), span_id=rng.randbytes(8), name="chat gpt-4o-mini", kind=3,
                 start_time_unix_nano=now - 1_000_000, end_time_unix_nano=now,
                 attributes=[kv("gen_ai.operation.name", "chat"), kv("gen_ai.request.model", "gpt-4o-mini"),
                             kv("gen_ai.input.messages", messages), *answer])
            for _ in range(spans)
        ])],
    )])
    return gzip.compress(request.SerializeToString(), compresslevel=6)


class Peaks:
    """Peak RSS per process of the collector, sampled; the server's from the kernel's VmHWM."""

    def __init__(self, collector: Collector) -> None:
        self.collector = collector
        self.workers_mib: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample)

    def __enter__(self) -> Peaks:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            for proc in self.collector._processes():
                if proc.name == str(self.collector.pid):
                    continue
                mib = _status_kib(proc, "VmRSS") / 1024
                self.workers_mib[proc.name] = max(self.workers_mib.get(proc.name, 0.0), mib)

    def server_mib(self) -> float:
        return _status_kib(Path(f"/proc/{self.collector.pid}"), "VmHWM") / 1024


def _status_kib(proc: Path, field: str) -> int:
    try:
        for line in (proc / "status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _send(c: Collector, bodies: list[bytes], threads: int) -> int:
    headers = {"content-type": "application/x-protobuf", "content-encoding": "gzip", **c.auth}
    queue = list(bodies)
    lock, failures = threading.Lock(), [0]

    def worker() -> None:
        with httpx.Client(trust_env=False, timeout=300) as client:
            while True:
                with lock:
                    if not queue:
                        return
                    body = queue.pop()
                if client.post(f"{c.url}/v1/traces", content=body, headers=headers).status_code != 200:
                    with lock:
                        failures[0] += 1

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return failures[0]


def main() -> None:
    parser = argparse.ArgumentParser(description="Collector peak RSS under compressible load.")
    parser.add_argument("--big", type=int, default=12, help="60 MiB spans in the backlog")
    parser.add_argument("--small", type=int, default=16, help="small gzip requests sent at once")
    args = parser.parse_args()
    big = [_body(1, 60 * MIB, seed, with_answer=True) for seed in range(args.big)]
    small = [_body(2000, 30 * 1024, 1000 + seed) for seed in range(args.small)]
    data_dir = Path(tempfile.mkdtemp(prefix="infersight-bench-memory-"))
    c = Collector(data_dir)
    try:
        time.sleep(2.0)  # workers warm
        idle = _status_kib(Path(f"/proc/{c.pid}"), "VmRSS") / 1024
        stored = 0
        with Peaks(c) as peaks:
            started = time.monotonic()
            failed = _send(c, big, threads=4)
            stored += args.big - failed
            assert wait_until(lambda: c.stored_spans() >= stored, 600) is not None, "backlog not stored"
            backlog_s = time.monotonic() - started
            after_backlog = peaks.server_mib()
            started = time.monotonic()
            failed_small = _send(c, small, threads=args.small)
            stored += 2000 * (args.small - failed_small)
            assert wait_until(lambda: c.stored_spans() >= stored, 600) is not None, "small requests not stored"
            small_s = time.monotonic() - started
        server = peaks.server_mib()
        in_flight = sum(len(b) for b in small) / MIB
        bound_server, bound_worker = stated_bound_mib(idle, max(in_flight, sum(len(b) for b in big) / MIB), 61)
        print(f"backlog: {args.big} spans of 60 MiB ({sum(len(b) for b in big) / 1024:.0f} KiB gzip), "
              f"{failed} refused, stored in {backlog_s:.0f} s; server peak {after_backlog:,.0f} MiB")
        print(f"small:   {args.small} requests at once, {2000 * args.small:,} spans of 30 KiB "
              f"({in_flight * 1024:.0f} KiB gzip, {args.small * 60} MiB inflated), {failed_small} refused, "
              f"stored in {small_s:.0f} s")
        print()
        print("| process | peak RSS MiB | stated bound MiB |")
        print("|---|---:|---:|")
        print(f"| server (idle {idle:,.0f} MiB) | {server:,.0f} | {bound_server:,.0f} |")
        for pid, mib in sorted(peaks.workers_mib.items(), key=lambda kv: -kv[1]):
            print(f"| worker {pid} | {mib:,.0f} | {bound_worker:,.0f} |")
        print(f"| all processes (sum of peaks) | {server + sum(peaks.workers_mib.values()):,.0f} | |")
    finally:
        c.close()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()

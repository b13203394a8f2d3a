"""How fast the collector restarts: SIGTERM to exit, start to ready (/healthz), and after a kill -9
with acknowledged spans still in the spool, start to spool drained. The stock OTel exporter retries
a refused connection for ~10 s, so a restart inside that window loses nothing.

    .venv/bin/python bench/restart.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest import CollectorChild, build_body, free_port

PROTOBUF = {"content-type": "application/x-protobuf"}


def _load(url: str, requests: int) -> None:
    body = build_body(512, seed=1)
    with httpx.Client(timeout=30) as client:
        for _ in range(requests):
            assert client.post(f"{url}/v1/traces", content=body, headers=PROTOBUF).status_code == 200


def _spool_rows(url: str) -> int:
    text = httpx.get(f"{url}/metrics").text
    return int(next(line.split()[1] for line in text.splitlines() if line.startswith("infersight_spool_rows ")))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    data_dir = Path(tempfile.mkdtemp(prefix="infersight-bench-restart-")) / "data"
    port = free_port()
    collector = CollectorChild(data_dir, port, ("--no-auth",))
    _load(collector.url, 200)  # ~100k spans already stored, as after a day of traffic
    ready, exits, drained = [], [], []
    for _ in range(args.rounds):
        started = time.perf_counter()
        collector.stop()
        exits.append(time.perf_counter() - started)
        started = time.perf_counter()
        collector = CollectorChild(data_dir, port, ("--no-auth",))
        ready.append(time.perf_counter() - started)
        # Acknowledged, then killed before the writer stored them all.
        _load(collector.url, 40)
        os.kill(collector.process.pid, signal.SIGKILL)
        collector.process.wait()
        started = time.perf_counter()
        collector = CollectorChild(data_dir, port, ("--no-auth",))
        while _spool_rows(collector.url):
            time.sleep(0.05)
        drained.append(time.perf_counter() - started)
    collector.stop()
    print(f"| {args.rounds} rounds, ~100k spans stored | median | worst |")
    print("|---|---:|---:|")
    for name, values in (("SIGTERM to exit", exits), ("start to ready (/healthz)", ready),
                         ("start after kill -9 to spool drained", drained)):
        print(f"| {name} | {statistics.median(values):.2f} s | {max(values):.2f} s |")


if __name__ == "__main__":
    main()

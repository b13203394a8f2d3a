"""kill -9 in the middle of ingest: every acknowledged span is stored, and stored once."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import httpx

from infersight.collector._server import CollectorProcess
from tests import http
from tests.collector.otlp_bodies import genai_spans_json
from tests.conftest import free_port, wait_for


def send_until_refused(url: str, acked: list[str], stop: threading.Event) -> None:
    """Many small requests, one at a time, until ``stop``; records the span ids of every 200.

    A request that fails (a slow answer on a loaded machine, the kill) is not acknowledged and
    the sender goes on with the next, as an exporter would: one slow first answer must not end
    the sender before the kill."""
    with httpx.Client(timeout=30) as client:
        while not stop.is_set():
            body, span_ids = genai_spans_json(3)
            try:
                response = client.post(f"{url}/v1/traces", content=body, headers={"content-type": "application/json"})
            except httpx.HTTPError:
                stop.wait(0.05)  # killed mid-request, or refused: not acknowledged
                continue
            if response.status_code == 200:
                acked.extend(span_ids)


def decode_workers(server_pid: int) -> list[int]:
    """Pids of the collector's decode workers (its children running multiprocessing's spawn)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = stat.read_text().rsplit(")", 1)[1].split()[1]
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if parent == str(server_pid) and b"spawn_main" in command:
            pids.append(int(stat.parent.name))
    return pids


def store_counts(data_dir) -> dict[str, dict[str, int]]:
    """Span id -> rows in otel_traces and llm_spans, read by a separate process (chDB: one store
    per process, and this test's own process may already hold one)."""
    script = (
        "import json, sys\n"
        "from infersight.collector import ChdbStore\n"
        "s = ChdbStore(sys.argv[1])\n"
        "q = lambda sql: {r['id']: int(r['n']) for r in s.query(sql)}\n"
        "print(json.dumps({'raw': q('SELECT SpanId AS id, count() AS n FROM otel_traces GROUP BY id'),"
        " 'typed': q('SELECT span_id AS id, count() AS n FROM llm_spans GROUP BY id')}))\n"
        "s.close()\n"
    )
    out = subprocess.run([sys.executable, "-c", script, str(data_dir)], capture_output=True, check=True, timeout=60)
    return json.loads(out.stdout)


def test_kill_9_while_clients_send_loses_and_doubles_nothing_acknowledged(tmp_path):
    data_dir = tmp_path / "data"
    first = CollectorProcess(data_dir, free_port(), extra_args=("--no-auth",)).start()
    acked: list[list[str]] = [[] for _ in range(4)]
    stop = threading.Event()
    senders = [threading.Thread(target=send_until_refused, args=(first.url, a, stop)) for a in acked]
    try:
        for sender in senders:
            sender.start()
        wait_for(lambda: sum(map(len, acked)) >= 1500, timeout_s=120)
        workers = decode_workers(first.process.pid)
        assert workers, "the collector runs no decode worker"
        first.process.kill()  # SIGKILL: no shutdown, no drain, no close
        first.process.wait()
        # Its decode workers leave with it rather than live on as orphans.
        assert wait_for(lambda: not any(os.path.exists(f"/proc/{pid}") for pid in workers), timeout_s=60)
    finally:
        stop.set()
        for sender in senders:
            sender.join()
        first.stop()
    acknowledged = [span_id for a in acked for span_id in a]
    assert len(acknowledged) >= 1500

    with sqlite3.connect(data_dir / "spool.db") as spool:
        left = spool.execute("SELECT count(*) FROM entries").fetchone()[0]
    print(f"{len(acknowledged)} spans acknowledged, {left} requests still in the spool at the kill")

    second = CollectorProcess(data_dir, free_port(), extra_args=("--no-auth",)).start()
    try:
        assert wait_for(lambda: "infersight_spool_entries 0\n" in http.get(f"{second.url}/metrics").text)
    finally:
        second.stop()

    counts = store_counts(data_dir)
    for table in ("raw", "typed"):
        doubled = {span_id: n for span_id, n in counts[table].items() if n != 1}
        assert not doubled, f"{table}: {len(doubled)} spans stored more than once"
        missing = set(acknowledged) - set(counts[table])
        assert not missing, f"{table}: {len(missing)} acknowledged spans lost"

"""What verifying every insert costs: chDB's streaming insert alone (what the writer did before, and
silently lost rows with) against the store's verified insert (the same streaming insert plus two
reads of system.errors) and against an insert as a query (which raises by itself, but parses
slower). Same 20,000-span batches, alternating rounds in one process, median µs per span.

    .venv/bin/python bench/insert_verify.py [--rounds 7] [--spans 20000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import lz4.frame
from ingest import PROJECT, build_body

from infersight.collector.ingest import _otlp, decode_request
from infersight.collector.store import ChdbStore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--spans", type=int, default=20_000)
    args = parser.parse_args()
    decoded = decode_request(PROJECT, build_body(args.spans, seed=3), None, _otlp.PROTOBUF, 1 << 30)
    assert decoded.entry is not None
    body = lz4.frame.decompress(decoded.entry.rows_z)  # the JSONEachRow rows the writer inserts
    store = ChdbStore(Path(tempfile.mkdtemp(prefix="infersight-bench-verify-")))
    session = store._session  # the unverified path is chDB's own API, as the writer used it

    def unverified() -> None:
        token = uuid.uuid4().hex
        statement = (f"INSERT INTO otel_traces SETTINGS insert_deduplication_token = '{token}',"
                     " deduplicate_blocks_in_dependent_materialized_views = 1")
        with session.send_insert(statement, "JSONEachRow") as inserter:
            inserter.append(body)
            inserter.finish()

    paths = {
        "streaming insert, unverified (before)": unverified,
        "streaming insert, verified (now)": lambda: store.insert("otel_traces", body, dedup_token=uuid.uuid4().hex),
        "insert as a query": lambda: store.insert("otel_traces", body),
    }
    samples: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(args.rounds):
        for name, insert in paths.items():
            started = time.perf_counter()
            insert()
            samples[name].append((time.perf_counter() - started) / args.spans * 1e6)
    store.close()
    base = statistics.median(samples["streaming insert, unverified (before)"])
    print(f"| path ({args.spans:,}-span batches, {args.rounds} alternating rounds) | µs per span, median | vs before |")
    print("|---|---:|---:|")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.1f} | {median / base:.2f}x |")


if __name__ == "__main__":
    main()

"""The embedded store's own ceiling: what chDB alone spends to store a span, merges included.

The collector's end-to-end rate with content is bounded by the sum of its stages; this measures
the last one by itself, so the other stages' share of a target is known. The rows are the
collector's own (``bench/ingest.py``'s OTLP bodies decoded by ``decode_request``, content and
inline detections in them), inserted as the spool writer inserts them (batches of 20,000 spans,
the most it merges requests into) into a fresh store with the product's schema and views, back
to back, then left until the store's background merges have finished. Each variant runs in a
process of its own (chDB opens one store per process) and reports that process's CPU time, the
store's native threads included:

- ``insert``: CPU during the inserts (parsing, the materialised views, writing parts);
- ``merges``: CPU from the last insert until no merge runs and the part count is stable;
- ``rewrite``: CPU of one ``OPTIMIZE ... FINAL`` of every table afterwards: what one level of
  merging costs a span (a sustained load merges each row again at every level, a few times);
- ``rate``: spans over the wall time of insert and merges, on however many cores the store used.

Variants: with content and without; with content and without the bloom-filter index on
every attribute value (``idx_span_attr_value``, which the OpenTelemetry exporter's schema
keeps and which hashes each prompt and answer into every part it merges); with content and the
attributes (prompts and answers among them) compressed with LZ4 instead of ZSTD(1), the
exporter's codec: what the cheaper codec saves a span against what it costs on disk (``disk
bytes``: the table's compressed bytes a span once merged).

    .venv/bin/python bench/store_ceiling.py [--batches 10] [--batch 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ingest  # bench/ingest.py builds the OTLP bodies

VARIANTS = {
    "content": (True, ()),
    "content, no value index": (True, ("ALTER TABLE otel_traces DROP INDEX idx_span_attr_value",)),
    "content, LZ4 attributes": (True, ("ALTER TABLE otel_traces MODIFY COLUMN SpanAttributes"
                                       " Map(LowCardinality(String), String) CODEC(LZ4)",)),
    "no content": (False, ()),
}


def _rows(batch: int, batches: int, content: bool, out: Path) -> None:
    """``batches`` JSONEachRow batches of ``batch`` decoded spans, each with ids of its own."""
    from infersight.collector.ingest import decode_request
    from infersight.collector.spool import Spool

    body = ingest.build_body(batch, seed=7, content=content)
    with tempfile.TemporaryDirectory(prefix="infersight-ceiling-spool-") as tmp, out.open("wb") as f:
        spool = Spool(Path(tmp) / "spool.db", max_bytes=1 << 34)
        for k in range(batches):
            decoded = decode_request(ingest.PROJECT, ingest._fresh_ids(body, 1_000 + k), None,
                                     "application/x-protobuf", 1 << 31)
            assert decoded.entry is not None
            spool.append(decoded.entry)
            taken = spool.next_batch(max_rows=batch, max_bytes=1 << 34)  # the rows as the writer takes them
            assert taken is not None
            f.write(len(taken.rows).to_bytes(8, "big") + taken.rows)
            spool.done(taken)
        spool.close()


def _measure(rows_file: Path, statements: tuple[str, ...]) -> dict[str, float]:
    from infersight.collector.store import ChdbStore

    batches = []
    with rows_file.open("rb") as f:
        while header := f.read(8):
            batches.append(f.read(int.from_bytes(header, "big")))
    spans = sum(b.count(b"\n") for b in batches)
    with tempfile.TemporaryDirectory(prefix="infersight-ceiling-") as data_dir:
        store = ChdbStore(Path(data_dir) / "store")
        for statement in statements:
            store.query(statement)
        wall0, cpu0 = time.perf_counter(), ingest._own_cpu_seconds()
        for k, rows in enumerate(batches):
            store.insert("otel_traces", rows, dedup_token=f"{k:08x}")
        wall1, cpu1 = time.perf_counter(), ingest._own_cpu_seconds()
        parts, stable_since = -1, time.perf_counter()
        while time.perf_counter() - stable_since < 3.0:  # no merge and the same parts for 3 s
            merging = store.query("SELECT count() AS n FROM system.merges")[0]["n"]
            now = store.query("SELECT count() AS n FROM system.parts WHERE active")[0]["n"]
            if merging or now != parts:
                parts, stable_since = now, time.perf_counter()
            time.sleep(0.2)
        wall2, cpu2 = time.perf_counter() - 3.0, ingest._own_cpu_seconds()
        tables = [r["name"] for r in store.query(
            "SELECT name FROM system.tables WHERE database = currentDatabase() AND engine LIKE '%MergeTree'")]
        for table in tables:  # one rewrite of every part: what each further level of merging costs again
            store.query(f"OPTIMIZE TABLE {table} FINAL")
        cpu3 = ingest._own_cpu_seconds()
        stored = store.query("SELECT count() AS n FROM otel_traces")[0]["n"]
        disk = store.query("SELECT sum(data_compressed_bytes) AS n FROM system.parts"
                           " WHERE active AND database = currentDatabase() AND table = 'otel_traces'")[0]["n"]
        store.close()
    assert stored == spans, f"stored {stored} of {spans} spans"
    return {"spans": spans, "insert_us": (cpu1 - cpu0) / spans * 1e6, "merges_us": (cpu2 - cpu1) / spans * 1e6,
            "rewrite_us": (cpu3 - cpu2) / spans * 1e6,
            "insert_s": wall1 - wall0, "rate": spans / (wall2 - wall0), "parts": parts,
            "rows_bytes": sum(map(len, batches)) / spans, "disk_bytes": int(disk) / spans}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--batch", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2, help="each variant this many times, in turns")
    parser.add_argument("--measure", nargs=2, metavar=("ROWS_FILE", "VARIANT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        rows_file, variant = args.measure
        print(json.dumps(_measure(Path(rows_file), VARIANTS[variant][1])))
        return
    results: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="infersight-ceiling-rows-") as tmp:
        files = {}
        for content in (True, False):
            files[content] = Path(tmp) / f"rows-{content}"
            _rows(args.batch, args.batches, content, files[content])
        for _ in range(args.rounds):
            for variant, (content, _statements) in VARIANTS.items():
                out = subprocess.run([sys.executable, __file__, "--measure", str(files[content]), variant],
                                     capture_output=True, text=True, env=dict(os.environ))
                if out.returncode:
                    sys.exit(f"{variant}: {out.stderr[-2000:]}")
                results[variant].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"{args.batches} batches of {args.batch:,} spans, {args.rounds} rounds in turns, "
          f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs\n")
    print("| variant | row bytes | disk bytes | insert CPU µs/span | merges CPU µs/span | one rewrite CPU µs/span"
          " | insert + 3 rewrites µs/span | spans/s (wall) | parts left |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for variant, runs in results.items():
        def span(key: str, runs: list[dict[str, float]] = runs) -> str:
            values = sorted(r[key] for r in runs)
            return f"{values[0]:,.0f}" if len(values) == 1 else f"{values[0]:,.0f}-{values[-1]:,.0f}"
        totals = sorted(r["insert_us"] + r["merges_us"] + 3 * r["rewrite_us"] for r in runs)
        print(f"| {variant} | {span('rows_bytes')} | {span('disk_bytes')} | {span('insert_us')} | "
              f"{span('merges_us')} | {span('rewrite_us')} | {totals[0]:,.0f}-{totals[-1]:,.0f} | "
              f"{span('rate')} | {span('parts')} |")


if __name__ == "__main__":
    main()

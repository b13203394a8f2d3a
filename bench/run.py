"""Run the SDK, stream, peer and ingest benchmarks, print their tables and write them to a file.

    make bench                                   # full run (~2-3 min), written to bench/results/latest.md
    .venv/bin/python bench/run.py --quick        # shorter run, same file
    .venv/bin/python bench/run.py --output X.md  # written to X.md

The file holds the sections "SDK overhead per call" and "Collector ingest" with the command,
machine, date and commit of the run. It never rewrites BENCHMARKS.md: the sections there also hold
side-by-side comparisons and readings made with other commands, which a rewrite would drop; what a
run changes is copied there by hand, with its facts.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import ingest
import peers
import sdk_overhead
import stream_overhead

ROOT = Path(__file__).resolve().parent.parent


def _sh(*command: str) -> str:
    try:
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def machine() -> list[tuple[str, str]]:
    dirty = _sh("git", "status", "--porcelain", "--", "sdk", "collector")
    return [
        ("date", _sh("date", "-u")),
        ("CPUs (nproc)", _sh("nproc")),
        ("CPU model", _cpu_model()),
        ("load average at start (1, 5, 15 min)", ", ".join(f"{x:.2f}" for x in os.getloadavg())),
        ("Python", platform.python_version()),
        ("chdb", importlib.metadata.version("chdb")),
        ("opentelemetry-sdk", importlib.metadata.version("opentelemetry-sdk")),
        ("git", _sh("git", "rev-parse", "--short", "HEAD")
         + (" with uncommitted changes in sdk/ or collector/" if dirty else "")),
    ]


def sdk_sentence(r: sdk_overhead.OverheadResult) -> str:
    med = {v.key: v.median for v in r.sync}
    paired = {p.label.split(":")[0]: p.median for p in r.paired}
    like = (
        f" Without content capture (e), which sets exactly the hand-written span's attributes, the ratio is "
        f"{paired['(e) / (b)']:.2f}x: usage extraction, pricing and the wrapper "
        f"{'add' if med['e'] >= med['b'] else 'cost'} {abs(med['e'] - med['b']):.1f} µs "
        f"{'over' if med['e'] >= med['b'] else 'less than'} the hand-written span, "
        f"and capturing the (empty) completion as `gen_ai.output.messages` adds {med['c'] - med['e']:.1f} µs more."
        if "e" in med else ""
    )
    return (
        f"A hand-written OpenTelemetry span costs {paired['(b) - (a)']:.1f} µs per call here and `@traced_llm` "
        f"with its defaults {paired['(c) - (a)']:.1f} µs, {paired['(c) / (b)']:.2f}x the hand-written span "
        f"(median of per-round ratios).{like} Before `init()` the decorator costs {paired['(d) - (a)']:.1f} µs; "
        f"the async wrapper costs {paired['async (c) - (a)']:.1f} µs. Absolute µs are specific to this slow, "
        "shared machine; the ratios are what carries over."
    )


def profile_sentence(p: sdk_overhead.Profile) -> str:
    ours = sum(s for o, s in p.groups if o.startswith("infersight"))
    otel = sum(s for o, s in p.groups if o.startswith("OpenTelemetry"))
    return (
        f"Under cProfile, with the SDK's defaults, {ours:.0%} of the decorator's self time is infersight's own "
        f"code and {otel:.0%} is OpenTelemetry (span creation and per-attribute validation), the rest builtins "
        "and the stdlib called from both. cProfile inflates code made of many small calls, so this ranks "
        "costs rather than measuring them."
    )


def ingest_sentence(results: list[ingest.IngestResult]) -> str:
    verified = all(r.spans_stored == r.spans_acked for r in results)
    parts = []

    def span(xs: list[float]) -> str:
        return f"{xs[0]:,.0f}" if len(xs) == 1 else f"{xs[0]:,.0f}-{xs[-1]:,.0f}"

    for content in sorted({r.content for r in results}):
        shape = [r for r in results if r.content == content]
        acked = sorted(r.acked_per_s for r in shape)
        stored = sorted(r.stored_per_s or 0 for r in shape)
        parts.append(
            f"{'with' if content else 'without'} content, {span(acked)} spans/s acknowledged and "
            f"{span(stored)} stored end to end over {len(shape)} load{'s' if len(shape) > 1 else ''}"
        )
    return (
        f"The collector took, {'; '.join(parts)}, against a target of {ingest.TARGET_SPANS_PER_S:,} spans/s, "
        f"on {os.cpu_count()} CPUs shared with the client threads and with whatever else the machine runs. "
        + ("After each drain, `/api/v1/summary` counted exactly the acknowledged spans."
           if verified else "**The stored count differs from the acknowledged count** (see the table).")
        + " Ack latency is per request as the client sees it, queueing behind the other threads included;"
        " 'ack -> stored' is the oldest spool entry's age, sampled four times a second: an entry leaves the"
        " spool only once its insert has committed, so this bounds the time from acknowledgement to queryable."
    )


def stages_sentence(costs: list[ingest.StageCost]) -> str:
    decode, spool, _lookup, insert, _detect = ingest.STAGES
    plain = [c for c in costs if not c.content]
    small, large = plain[0], plain[-1]
    per_span = sum(large.us_per_span.values())
    with_content = [c for c in costs if c.content]
    content_note = ""
    if with_content:
        extra = with_content[0].us_per_span[decode] - small.us_per_span[decode]
        content_note = (
            f" Spans with content cost {extra:.0f} µs more each to decode and check in the workers "
            "(the detectors read every output)."
        )
    return (
        f"Per span, decoding, checking and compressing a request costs {small.us_per_span[decode]:.0f} µs in a "
        f"decode worker process, the durable spool append {small.us_per_span[spool]:.0f} µs in the server, "
        f"and the chDB insert {small.us_per_span[insert]:.0f} µs in {small.batch}-row inserts but "
        f"{large.us_per_span[insert]:.0f} µs in {large.batch:,}-row ones, which is why the writer merges "
        f"requests. Without background merges, HTTP and the client, that is {per_span:.0f} µs per span."
        + content_note
    )


def ingest_section(loads: list[ingest.IngestResult], stages: list[ingest.StageCost] | str,
                   run_note: str = "") -> str:
    if isinstance(stages, str):
        stage_text = f"The stage breakdown was {stages}"
    else:
        stage_text = (
            "The pipeline's steps timed one by one in the benchmark's process with the collector's own "
            f"functions, median µs per span over {stages[0].repeat} repetitions per size.\n\n"
            f"{ingest.format_stages(stages)}\n\n{stages_sentence(stages)}"
        )
    return f"""## Collector ingest

`infersight collector` as a child process with a fresh data directory and its defaults (one
decode worker process per core but one, inline detectors on); pre-encoded OTLP
`ExportTraceServiceRequest` bodies of 512 GenAI spans (12 attributes each: operation, provider,
request/response model, input/output tokens, finish reasons, tenant, user, route, cost, cost
source; with content, also input and output messages) POSTed to `/v1/traces` with a project key
made by `infersight keys create`. The collector
answers 200 once spans are durable in its spool and stores them from there, so the table shows both
the acknowledged rate and the end-to-end stored rate (acknowledged spans over load time plus the time
the spool took to drain); afterwards `/api/v1/summary?since=1h` must count exactly the acknowledged
spans. CPU columns are CPU time over wall time (100% = one core); the collector's include its
decode workers.

{run_note}{ingest.format_table(loads)}

{ingest_sentence(loads)}

### Where the collector's CPU goes

CPU time by thread during each load (100% = one core), and per acknowledged span. Most of it is
spent in chDB's native threads, which a Python profiler cannot see, so this profile is by thread:
the decode workers, the server process's Python threads, chDB's insert pipeline (the
`otel_traces` insert and its materialized views) and its background merges.

{ingest.format_cpu(loads)}

### Where an ingest request's time goes

{stage_text}
"""


def render(command: str, quick: bool, info: list[tuple[str, str]], overhead: sdk_overhead.OverheadResult,
           prof: sdk_overhead.Profile, streams: list[stream_overhead.StreamResult], peer_rows: list[dict],
           loads: list[ingest.IngestResult], stages: list[ingest.StageCost] | str) -> str:
    rows = "\n".join(f"| {k} | {v} |" for k, v in info)
    return f"""## SDK overhead per call

Written by `bench/run.py`{" (quick run: fewer rounds, shorter load)" if quick else ""}, with this
section's and the ingest section's numbers, from:

```sh
{command}
```

| machine | |
|---|---|
{rows}

A trivial function returning an OpenAI-style dict, called (a) plain, (b) inside a hand-written
`tracer.start_as_current_span` setting the same attributes as the decorator, (c) through
`@traced_llm(provider="openai", model="gpt-4o-mini")` after `init()`, (d) through the decorator
before `init()` (OpenTelemetry's no-op proxy tracer), and, where `init()` has the option, (e) through
the decorator after `init(capture_content=False)`. By default the decorator also records the
completion as `gen_ai.output.messages`, which (b) does not, so (e) is the like-for-like comparison.
(b), (c) and (e) use an SDK `TracerProvider` with a `BatchSpanProcessor` whose exporter discards
spans: export runs on the processor's thread as in production, minus the network. Variants alternate
within each round; the paired rows compare two variants of the same round, which cancels most of
the machine's drift.

{sdk_overhead.format_tables(overhead)}

{sdk_sentence(overhead)}

### Where the decorator's time goes

{sdk_overhead.format_profile(prof)}

{profile_sentence(prof)}

### Per-chunk cost of a streamed answer

The same generator of N chunks consumed bare and through `@traced_llm` (content capture off), in
alternating rounds; the difference divided by N is what observing one chunk costs (a clock read,
the chunk's text and usage lookup, one appended gap, running each step in the span's context).
The target is under 2 µs per chunk.

{stream_overhead.format_table(streams)}

### Beside the peers

Langfuse and Traceloop each configure OpenTelemetry globally, so every tool runs in a process of
its own, where the same bare function is timed under the tool's decorator and inside a hand-written
span (5 attributes) in alternating rounds; the ratio to that span is what compares across
processes. All export into a batch processor with a discarding exporter. Defaults everywhere: the
infersight decorator also extracts usage, prices the call and captures the (empty) completion.

{peers.format_table(peer_rows)}

{ingest_section(loads, stages)}"""


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the infersight benchmarks.")
    parser.add_argument("--quick", action="store_true", help="shorter run (~40 s)")
    parser.add_argument("--peers-python", default=None,
                        help="Interpreter with langfuse and traceloop-sdk for bench/peers.py (default: this one)")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results" / "latest.md",
                        help="Markdown file to write (default: bench/results/latest.md, not tracked)")
    parser.add_argument("--only", choices=("ingest",), default=None, help="run only the ingest benchmark")
    args = parser.parse_args()
    output: Path = args.output
    output.parent.mkdir(parents=True, exist_ok=True)
    # Under make, MAKELEVEL is set; otherwise record the command actually typed.
    command = (
        "make bench" if os.environ.get("MAKELEVEL") else " ".join([".venv/bin/python", "bench/run.py", *sys.argv[1:]])
    )

    started = time.monotonic()
    info = machine()
    if args.only == "ingest":
        return _ingest_only(args.quick, output, command, info, started)
    print("SDK overhead ...", flush=True)
    overhead = sdk_overhead.run(args.quick)
    print(sdk_overhead.format_tables(overhead), "\n", flush=True)
    prof = sdk_overhead.profile(5_000 if args.quick else 20_000)
    print(sdk_overhead.format_profile(prof), "\n", flush=True)
    streams = stream_overhead.run(args.quick)
    print(stream_overhead.format_table(streams), "\n", flush=True)
    peer_rows = peers.run(args.quick, args.peers_python)
    print(peers.format_table(peer_rows), "\n", flush=True)
    loads, stages = _run_ingest(args.quick)
    output.write_text(render(command, args.quick, info, overhead, prof, streams, peer_rows, loads, stages))
    print(f"wrote {output}")
    print(f"total {time.monotonic() - started:.0f} s")


def _run_ingest(quick: bool) -> tuple[list[ingest.IngestResult], list[ingest.StageCost] | str]:
    print("Collector ingest ...", flush=True)
    loads = ingest.run(quick, rounds=1 if quick else 3)
    print(ingest.format_table(loads), "\n", flush=True)
    print(ingest.format_cpu(loads), "\n", flush=True)
    try:  # last: it opens chDB in this process; and it uses collector internals that may move
        stages: list[ingest.StageCost] | str = ingest.stage_costs(repeat=3 if quick else 10)
    except Exception as exc:  # noqa: BLE001 - best-effort stage: it uses collector internals that may move
        stages = f"unavailable in this run: {type(exc).__name__}: {exc}"
    print(stages if isinstance(stages, str) else ingest.format_stages(stages), "\n", flush=True)
    return loads, stages


def _ingest_only(quick: bool, output: Path, command: str, info: list[tuple[str, str]], started: float) -> None:
    loads, stages = _run_ingest(quick)
    facts = dict(info)
    note = (f"Run on its own (`{command}`) on {facts['date']}, git {facts['git']}, "
            f"{facts['CPUs (nproc)']} CPUs, load average at start {facts['load average at start (1, 5, 15 min)']}.\n\n")
    output.write_text(ingest_section(loads, stages, note))
    print(f"wrote {output}")
    print(f"total {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    sys.exit(main())

"""Cost per call of ``@traced_llm``, side by side with a plain call and a hand-written OTel span.

The machine is small and shared, so absolute µs drift from minute to minute. Every variant is
therefore measured in the same rounds, in alternating order, and the headline numbers are
*paired* per round (ratio or delta of two variants timed seconds apart), then the median.

    .venv/bin/python bench/sdk_overhead.py [--quick] [--profile]
    .venv/bin/python bench/sdk_overhead.py --quick --against ../other-checkout [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import pstats
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind, Tracer

from infersight import sdk

MESSAGES = [
    {"role": "system", "content": "You are Acme's support assistant. Answer in two sentences."},
    {"role": "user", "content": "Where is the invoice for order 1234? Mail it to jane.doe@example.com please."},
]
RESPONSE: dict[str, Any] = {
    "model": "gpt-4o-mini-2024-07-18",
    "usage": {"prompt_tokens": 100, "completion_tokens": 20},
    "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "The invoice for order 1234 is on its way to your address on file."}}],
}


def use_long_content() -> None:
    """A ~1 KB prompt (system and user message, one address in it) and a ~0.4 KB answer, the sizes
    of the collector's content benchmark, in place of the short ones."""
    global MESSAGES, RESPONSE
    sentence = "The customer asked about the delivery window for the replacement part and the refund policy. "
    prompt = (sentence * 11)[:1000] + " Reach me at jane.doe@example.com."
    answer = ("The part ships on Monday and the refund follows once it is back with us. " * 6)[:400]
    MESSAGES = [{"role": "system", "content": "You are Acme's support assistant. " * 6},
                {"role": "user", "content": prompt}]
    RESPONSE = {**RESPONSE, "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": answer}}]}


def call_llm(messages: list[dict[str, str]] = MESSAGES) -> dict[str, Any]:
    return RESPONSE


async def acall_llm(messages: list[dict[str, str]] = MESSAGES) -> dict[str, Any]:
    return RESPONSE


class DiscardExporter(SpanExporter):
    """Drops spans but counts them, so we can tell whether the queue kept up."""

    def __init__(self) -> None:
        self.exported = 0
        self.last: ReadableSpan | None = None
        self.open = threading.Event()  # cleared: export() waits, so finished spans stay queued
        self.open.set()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.open.wait()
        self.exported += len(spans)
        if spans:
            self.last = spans[-1]
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


LONG_CONTENT = False  # --long-content, passed on to the processes of --against and (e)
GENAI_METRICS = False  # --genai-metrics: as with a meter provider of the app's own


def bench_init(exporter: SpanExporter) -> dict[str, Any]:
    """``init()`` with its defaults, minus the network: spans are recorded and exported on the SDK's
    threads as in production, into a discarding exporter, and metrics into an in-memory reader. As
    with the meter provider ``init`` creates, the GenAI histograms are not recorded unless
    ``GENAI_METRICS`` (then as when the app hands ``init`` a meter provider of its own)."""
    return {"service_name": "bench", "span_exporter": exporter, "genai_metrics": GENAI_METRICS,
            "meter_provider": MeterProvider(metric_readers=[InMemoryMetricReader()])}


def identical_span(exporter: DiscardExporter, decorated: Callable[..., Any]) -> tuple[str, dict[str, Any]]:
    """Name and attributes of one span the decorator exported: the baseline sets exactly these."""
    decorated(messages=MESSAGES)
    sdk.force_flush()
    assert exporter.last is not None
    return exporter.last.name, dict(exporter.last.attributes or {})


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def norm(d: dict[str, Any]) -> dict[str, Any]:  # OpenTelemetry stores sequences as tuples
        return {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}

    return norm(a) == norm(b)


def raw_otel(tracer: Tracer, name: str, attributes: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    """The cheapest correct hand-written span with the decorator's exact attributes, set at start."""

    def call() -> dict[str, Any]:
        with tracer.start_as_current_span(name, kind=SpanKind.CLIENT, attributes=attributes):
            return call_llm(messages=MESSAGES)

    return call


def _flushed() -> None:
    # Inside the wall time: the export thread's work for this round's spans (the deferred
    # attributes included) is paid before the clock stops, and the queue never overflows.
    sdk.force_flush()


Timing = tuple[float, float, float]  # per call, µs: wall, caller-thread CPU, process CPU


def _timed_sync(fn: Callable[[], Any], flush: Callable[[], object] = _flushed) -> Callable[[int], Timing]:
    def run(n: int) -> Timing:
        proc, cpu, start = time.process_time_ns(), time.thread_time_ns(), time.perf_counter_ns()
        for _ in range(n):
            fn()
        cpu_ns = time.thread_time_ns() - cpu
        flush()
        return ((time.perf_counter_ns() - start) / n / 1000, cpu_ns / n / 1000,
                (time.process_time_ns() - proc) / n / 1000)

    return run


def _timed_async(loop: asyncio.AbstractEventLoop, fn: Callable[[], Awaitable[Any]]) -> Callable[[int], Timing]:
    async def body(n: int) -> Timing:
        proc, cpu, start = time.process_time_ns(), time.thread_time_ns(), time.perf_counter_ns()
        for _ in range(n):
            await fn()
        cpu_ns = time.thread_time_ns() - cpu
        _flushed()
        return ((time.perf_counter_ns() - start) / n / 1000, cpu_ns / n / 1000,
                (time.process_time_ns() - proc) / n / 1000)

    # One coroutine awaits all n calls, so event-loop scheduling is not part of the number.
    return lambda n: loop.run_until_complete(body(n))


@dataclass
class Variant:
    key: str
    label: str
    run: Callable[[int], Timing]  # n calls -> (wall, caller-thread CPU, process CPU) µs per call
    records: bool  # whether each call ends a recording span (counted to detect queue drops)
    calls: int = 0
    per_round: list[float] = field(default_factory=list)  # wall
    cpu_per_round: list[float] = field(default_factory=list)
    proc_per_round: list[float] = field(default_factory=list)  # both threads: what the app's machine pays

    def measure(self, n: int) -> None:
        self.calls += n
        wall, cpu, proc = self.run(n)
        self.per_round.append(wall)
        self.cpu_per_round.append(cpu)
        self.proc_per_round.append(proc)

    @property
    def median(self) -> float:
        return statistics.median(self.per_round)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu_per_round)

    @property
    def proc_median(self) -> float:
        return statistics.median(self.proc_per_round)


@dataclass
class Paired:
    label: str
    values: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.values)


@dataclass
class OverheadResult:
    rounds: int
    calls_per_round: int
    sync: list[Variant]
    async_: list[Variant]
    paired: list[Paired]
    spans_created: int
    spans_exported: int
    attribute_count: int
    attribute_diff: str  # '' when (b) and (c) export the same names and values
    held: dict[str, float]  # variant key -> GC-tracked objects held per queued span


def held_per_span(exporter: DiscardExporter, call: Callable[[], Any], n: int = 1_000) -> float:
    """GC-tracked objects a finished span holds while it waits in the export queue.

    While the export thread lags behind a tight loop, every one of them is more work for each of
    the app's garbage collections, which run on the app's thread."""
    exporter.open.clear()
    call()
    sdk.force_flush(timeout_millis=100)  # the export thread takes that span and waits in export()
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(n):
        call()
    gc.collect()
    held = (len(gc.get_objects()) - before) / n
    exporter.open.set()
    sdk.force_flush()
    return held


def _rounds(variants: list[Variant], rounds: int, calls: int) -> None:
    for v in variants:  # warm-up: the price lookup cache, code paths, the allocator
        v.measure(max(calls // 10, 500))
        v.per_round.clear()
        v.cpu_per_round.clear()
        v.proc_per_round.clear()
    for i in range(rounds):
        for v in variants if i % 2 == 0 else variants[::-1]:
            gc.collect()  # same heap state at every start; gc stays enabled while timing
            v.measure(calls)


def _ratio(label: str, num: list[float], den: list[float]) -> Paired:
    return Paired(label, [n / d for n, d in zip(num, den, strict=True)])


def _delta(label: str, num: list[float], den: list[float]) -> Paired:
    return Paired(label, [n - d for n, d in zip(num, den, strict=True)])


def run(quick: bool = False) -> OverheadResult:
    """Before ``init``: (a) and (d). Then ``init`` with its defaults (content capture on) exporting into
    a discarding exporter: (a), (b), (c) and async, interleaved in the same rounds."""
    rounds, calls = (6, 2_000) if quick else (20, 5_000)
    # Decorated once, as at import time in an app; the decorator looks its tracer up per call.
    decorated = sdk.traced_llm(provider="openai", model="gpt-4o-mini")(call_llm)
    adecorated = sdk.traced_llm(provider="openai", model="gpt-4o-mini")(acall_llm)
    plain = Variant("a", "(a) plain call", _timed_sync(call_llm), records=False)
    before = Variant("d", "(d) @traced_llm before init()", _timed_sync(lambda: decorated(messages=MESSAGES)), False)
    _rounds([plain, before], rounds, calls)
    d_paired = _delta("(d) - (a): decorator before init(), µs", before.per_round, plain.per_round)

    exporter = DiscardExporter()
    sdk.init(**bench_init(exporter))
    name, attributes = identical_span(exporter, decorated)
    raw = raw_otel(trace.get_tracer("bench.raw"), name, attributes)
    raw()
    sdk.force_flush()
    assert exporter.last is not None
    raw_attrs = dict(exporter.last.attributes or {})
    diff = "" if _same(raw_attrs, attributes) else f"(b) {sorted(raw_attrs)} vs (c) {sorted(attributes)}"

    loop = asyncio.new_event_loop()
    sync = [
        Variant("a", "(a) plain call", _timed_sync(call_llm), records=False),
        Variant("b", f"(b) start_as_current_span(name, attributes=attrs), the same {len(attributes)} attributes",
                _timed_sync(raw), records=True),
        Variant("c", "(c) @traced_llm after init()", _timed_sync(lambda: decorated(messages=MESSAGES)), records=True),
    ]
    async_ = [
        Variant("a", "async (a) plain call", _timed_async(loop, acall_llm), records=False),
        Variant("c", "async (c) @traced_llm after init()",
                _timed_async(loop, lambda: adecorated(messages=MESSAGES)), records=True),
    ]
    every = sync + async_
    held = {"b": held_per_span(exporter, raw), "c": held_per_span(exporter, lambda: decorated(messages=MESSAGES))}
    _rounds(every, rounds, calls)
    loop.close()
    created = 2 + 2 * 1_001 + sum(v.calls for v in every if v.records)  # the attribute check, held_per_span
    sdk.shutdown(timeout_s=30)  # flushes what the queue still holds
    s = {v.key: v for v in sync}
    a = {v.key: v for v in async_}
    paired = [
        _ratio("(c) / (b): decorator vs identical span, caller-thread CPU, ratio",
               s["c"].cpu_per_round, s["b"].cpu_per_round),
        _ratio("(c) / (b): decorator vs identical span, process CPU (caller and export thread), ratio",
               s["c"].proc_per_round, s["b"].proc_per_round),
        _ratio("(c) / (b): decorator vs identical span, wall time (export thread included), ratio",
               s["c"].per_round, s["b"].per_round),
        _delta("(c) - (a): decorator cost per call, caller-thread CPU µs", s["c"].cpu_per_round, s["a"].cpu_per_round),
        _delta("(b) - (a): identical span cost per call, caller-thread CPU µs",
               s["b"].cpu_per_round, s["a"].cpu_per_round),
        _delta("(c) - (a): decorator cost per call, process CPU µs", s["c"].proc_per_round, s["a"].proc_per_round),
        _delta("(b) - (a): identical span cost per call, process CPU µs",
               s["b"].proc_per_round, s["a"].proc_per_round),
        _delta("(c) - (a): decorator cost per call, wall µs", s["c"].per_round, s["a"].per_round),
        _delta("(b) - (a): identical span cost per call, wall µs", s["b"].per_round, s["a"].per_round),
        d_paired,
        _delta("async (c) - (a): decorator cost per call, wall µs", a["c"].per_round, a["a"].per_round),
    ]
    return OverheadResult(rounds, calls, [before, *sync], async_, paired, created, exporter.exported,
                          len(attributes), diff, held)


@dataclass
class OwnProviderResult:
    rounds: int
    calls_per_round: int
    variants: list[Variant]
    paired: list[Paired]
    attribute_diff: str


def run_own_provider(quick: bool = False) -> OwnProviderResult:
    """The app's own tracer provider (OpenTelemetry's BatchSpanProcessor into a discarding
    exporter) and no ``init()``: the decorator finishes its spans on the caller's thread, since
    the app's processors must see finished attributes. Needs a fresh process (the global
    provider is set once)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    rounds, calls = (6, 2_000) if quick else (20, 5_000)
    exporter = DiscardExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=65_536))
    trace.set_tracer_provider(provider)
    flush = provider.force_flush
    decorated = sdk.traced_llm(provider="openai", model="gpt-4o-mini")(call_llm)
    decorated(messages=MESSAGES)
    flush()
    assert exporter.last is not None
    name, attributes = exporter.last.name, dict(exporter.last.attributes or {})
    raw = raw_otel(provider.get_tracer("bench.raw"), name, attributes)
    raw()
    flush()
    raw_attrs = dict(exporter.last.attributes or {})
    diff = "" if _same(raw_attrs, attributes) else f"(b) {sorted(raw_attrs)} vs (e) {sorted(attributes)}"
    variants = [
        Variant("a", "(a) plain call", _timed_sync(call_llm, flush), records=False),
        Variant("b", f"(b) start_as_current_span(name, attributes=attrs), the same {len(attributes)} attributes",
                _timed_sync(raw, flush), records=True),
        Variant("e", "(e) @traced_llm, the app's own tracer provider, no init()",
                _timed_sync(lambda: decorated(messages=MESSAGES), flush), records=True),
    ]
    _rounds(variants, rounds, calls)
    provider.shutdown()
    v = {x.key: x for x in variants}
    paired = [
        _ratio("(e) / (b): caller-thread CPU, ratio", v["e"].cpu_per_round, v["b"].cpu_per_round),
        _ratio("(e) / (b): process CPU (caller and export thread), ratio",
               v["e"].proc_per_round, v["b"].proc_per_round),
        _ratio("(e) / (b): wall time (export thread included), ratio", v["e"].per_round, v["b"].per_round),
        _delta("(e) - (a): decorator cost per call, caller-thread CPU µs", v["e"].cpu_per_round, v["a"].cpu_per_round),
        _delta("(b) - (a): identical span cost per call, caller-thread CPU µs",
               v["b"].cpu_per_round, v["a"].cpu_per_round),
    ]
    return OwnProviderResult(rounds, calls, variants, paired, diff)


def format_own_provider(r: OwnProviderResult) -> str:
    b = next(v for v in r.variants if v.key == "b")
    lines = [
        f"The app's own tracer provider, no init(): {r.rounds} rounds x {r.calls_per_round:,} calls per variant.",
        "",
        "| variant | caller CPU median µs/call | process CPU median µs/call | wall median µs/call |"
        " caller CPU vs (b) | process CPU vs (b) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for v in r.variants:
        lines.append(f"| {v.label} | {v.cpu_median:.2f} | {v.proc_median:.2f} | {v.median:.2f} | "
                     + (f"{v.cpu_median / b.cpu_median:.2f}x | {v.proc_median / b.proc_median:.2f}x |"
                        if v.records else "| |"))
    lines += ["", "| paired per round | median | min | max |", "|---|---:|---:|---:|"]
    lines += [f"| {p.label} | {p.median:.2f} | {min(p.values):.2f} | {max(p.values):.2f} |" for p in r.paired]
    lines += ["", "Attributes of (b) and (e): " + (f"differ: {r.attribute_diff}." if r.attribute_diff
                                                    else "identical names and values (checked on one span each).")]
    return "\n".join(lines)


@dataclass
class Profile:
    calls: int
    groups: list[tuple[str, float]]  # (whose code, share of self time)
    top: list[tuple[str, float, float]]  # (function, share of self time, calls per decorated call)


def _owner(filename: str) -> str:
    if "opentelemetry/attributes" in filename:
        return "OpenTelemetry attribute validation (BoundedAttributes)"
    if "opentelemetry/sdk" in filename:
        return "OpenTelemetry SDK span lifecycle (span, sampler, batch processor)"
    if "opentelemetry" in filename:
        return "OpenTelemetry API (context, baggage, tracer lookup)"
    if "/sdk/_" in filename or "infersight/sdk" in filename:
        return "infersight.sdk (wrapper, usage extraction, cost, attribution)"
    if filename == "~":
        return "builtins (isinstance, dict, time, locks, ...)"
    return "other stdlib (contextvars, threading, os.environ, ...)"


def _short_path(filename: str) -> str:
    for marker in ("site-packages/", "/work/main/"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename.rsplit("/", 1)[-1]


def profile(calls: int = 20_000, top: int = 10) -> Profile:
    """Where (c) spends its time, by self time.

    cProfile adds a fixed cost to every Python function call, so code made of many small
    functions looks heavier than it is; read the shares as a ranking, not exact fractions.
    """
    sdk.init(**bench_init(DiscardExporter()))
    decorated = sdk.traced_llm(provider="openai", model="gpt-4o-mini")(call_llm)
    decorated(messages=MESSAGES)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        decorated(messages=MESSAGES)
    profiler.disable()
    sdk.shutdown(timeout_s=30)
    # pstats keeps {(file, line, name): (primitive calls, calls, tottime, cumtime, callers)}.
    raw: dict[tuple[str, int, str], tuple[Any, ...]] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in raw.values())
    groups: dict[str, float] = {}
    for (filename, _, _), v in raw.items():
        groups[_owner(filename)] = groups.get(_owner(filename), 0.0) + v[2] / total
    rows = sorted(raw.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    top_rows = [
        (f"{name} ({_short_path(filename)}:{line})" if line else name, v[2] / total, v[1] / calls)
        for (filename, line, name), v in rows
    ]
    return Profile(calls, sorted(groups.items(), key=lambda kv: -kv[1]), top_rows)


def format_tables(r: OverheadResult) -> str:
    b = next(v for v in r.sync if v.key == "b")
    lines = [
        f"{r.rounds} rounds x {r.calls_per_round:,} calls per variant, interleaved; µs per call. 'caller CPU' is"
        " the calling thread's CPU time (`time.thread_time_ns`): what the app's request pays; 'process CPU'"
        " (`time.process_time_ns`, up to the end of the round's force_flush) adds the export thread's: what the"
        " app's machine pays; 'wall' ends after"
        " a force_flush of the round's spans, so it also holds the export thread's work (deferred attributes"
        " included), which in this tight loop competes with the caller for the GIL.",
        "",
        "| variant | wall median µs/call | min | max | caller CPU median µs/call | process CPU median µs/call |"
        " wall vs (b) | caller CPU vs (b) | process CPU vs (b) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for v in r.sync + r.async_:
        lines.append(
            f"| {v.label} | {v.median:.2f} | {min(v.per_round):.2f} | {max(v.per_round):.2f} | {v.cpu_median:.2f} | "
            f"{v.proc_median:.2f} | "
            + (f"{v.median / b.median:.2f}x | {v.cpu_median / b.cpu_median:.2f}x | "
               f"{v.proc_median / b.proc_median:.2f}x |" if v.records else "| | |")
        )
    lines += ["", "| paired per round | median | min | max |", "|---|---:|---:|---:|"]
    for p in r.paired:
        lines.append(f"| {p.label} | {p.median:.2f} | {min(p.values):.2f} | {max(p.values):.2f} |")
    dropped = r.spans_created - r.spans_exported
    lines += [
        "",
        f"Recording spans created: {r.spans_created:,}; reached the exporter: {r.spans_exported:,}"
        f" ({dropped:,} dropped).",
        f"Attributes of (b) and (c): {r.attribute_count}, "
        + (f"differ: {r.attribute_diff}." if r.attribute_diff
           else "identical names and values (checked on one span each)."),
        f"GC-tracked objects a finished span holds while queued for export: (b) {r.held['b']:.1f}, "
        f"(c) {r.held['c']:.1f}.",
    ]
    return "\n".join(lines)


def format_profile(p: Profile) -> str:
    lines = [f"cProfile of {p.calls:,} calls of (c).", "", "| code | share of self time |", "|---|---:|"]
    lines += [f"| {owner} | {share:.0%} |" for owner, share in p.groups]
    lines += ["", "| function | share of self time | calls per decorated call |", "|---|---:|---:|"]
    lines += [f"| `{name}` | {share:.1%} | {per:.3g} |" for name, share, per in p.top]
    return "\n".join(lines)


def _summary(phase: str, quick: bool) -> dict[str, float]:
    """The headline ratios of one phase, for ``--against``."""
    if phase == "own":
        own = run_own_provider(quick)
        return {p.label: p.median for p in own.paired}
    return {p.label: p.median for p in run(quick).paired if "ratio" in p.label}


def _in_process(python: str, phase: str, quick: bool) -> str:
    command = [python, __file__, "--phase", phase] + (["--quick"] if quick else []) + (
        ["--long-content"] if LONG_CONTENT else [])
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip()[-500:]}")
    return done.stdout


def against(other: str, repeats: int, quick: bool) -> str:
    """This checkout and ``other`` (a checkout with its own ``.venv``), each phase in a fresh
    process, alternating, ``repeats`` times; the same bench code times both SDKs."""
    here = str(Path(__file__).resolve().parent.parent)
    checkouts = {"this checkout": here, f"{other}": str(Path(other).resolve())}
    got: dict[str, dict[str, list[float]]] = {name: {} for name in checkouts}
    for i in range(repeats):
        for name in (list(checkouts) if i % 2 == 0 else list(checkouts)[::-1]):
            python = str(Path(checkouts[name]) / ".venv" / "bin" / "python")
            for phase in ("init", "own"):
                out = json.loads(_in_process(python, phase + "-json", quick).splitlines()[-1])
                for label, value in out.items():
                    got[name].setdefault(label, []).append(value)
    names = list(checkouts)
    lines = [f"{repeats} runs of each phase per checkout, alternating, each in a fresh process; medians of"
             " each run's paired medians (min-max over runs).", "",
             "| ratio | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for label in got[names[0]]:
        cells = [f"{statistics.median(got[n][label]):.2f} ({min(got[n][label]):.2f}-{max(got[n][label]):.2f})"
                 for n in names]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="Per-call cost of the infersight SDK decorator.")
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    parser.add_argument("--profile", action="store_true", help="also print a cProfile breakdown of (c)")
    parser.add_argument("--genai-metrics", action="store_true",
                        help="record the GenAI histograms too (as with an app's own meter provider)")
    parser.add_argument("--against", metavar="CHECKOUT",
                        help="compare with another checkout (its .venv's SDK), alternating fresh processes")
    parser.add_argument("--repeats", type=int, default=3, help="runs per checkout with --against")
    parser.add_argument("--long-content", action="store_true",
                        help="a ~1 KB prompt and a ~0.4 KB answer instead of the short chat call")
    parser.add_argument("--phase", choices=("init", "own", "init-json", "own-json"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    global GENAI_METRICS, LONG_CONTENT
    GENAI_METRICS = args.genai_metrics
    LONG_CONTENT = args.long_content
    if LONG_CONTENT:
        use_long_content()
    if args.against:
        print(against(args.against, args.repeats, args.quick))
        return
    if args.phase in ("init-json", "own-json"):
        print(json.dumps(_summary(args.phase.removesuffix("-json"), args.quick)))
        return
    if args.phase == "own":
        print(format_own_provider(run_own_provider(args.quick)))
        return
    print(format_tables(run(args.quick)))
    print()
    # The app's own provider is set globally, once: it gets a process of its own.
    print(_in_process(sys.executable, "own", args.quick).rstrip())
    if args.profile:
        print()
        print(format_profile(profile()))


if __name__ == "__main__":
    main()

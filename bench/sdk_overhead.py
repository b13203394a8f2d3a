"""Cost per call of ``@traced_llm``, side by side with a plain call and a hand-written OTel span.

The machine is small and shared, so absolute µs drift from minute to minute. Every variant is
therefore measured in the same rounds, in alternating order, and the headline numbers are
*paired* per round (ratio or delta of two variants timed seconds apart), then the median.

    .venv/bin/python bench/sdk_overhead.py [--quick] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import inspect
import pstats
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind, Tracer

from infersight import sdk

RESPONSE: dict[str, Any] = {
    "model": "gpt-4o-mini",
    "usage": {"prompt_tokens": 100, "completion_tokens": 20},
    "choices": [{"finish_reason": "stop"}],
}


def call_llm() -> dict[str, Any]:
    return RESPONSE


async def acall_llm() -> dict[str, Any]:
    return RESPONSE


class DiscardExporter(SpanExporter):
    """Drops spans but counts them, so we can tell whether the batch queue kept up."""

    def __init__(self) -> None:
        self.exported = 0
        self.last: ReadableSpan | None = None

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.exported += len(spans)
        if spans:
            self.last = spans[-1]
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def _discarding_provider() -> tuple[TracerProvider, DiscardExporter]:
    # Export runs on the BatchSpanProcessor's thread, as in production; only its cost is removed.
    exporter = DiscardExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider, exporter


def raw_otel(tracer: Tracer) -> Callable[[], dict[str, Any]]:
    """What a developer would write by hand: the same 9 attributes the decorator sets."""

    def call() -> dict[str, Any]:
        with tracer.start_as_current_span(
            "chat gpt-4o-mini",
            kind=SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o-mini",
            },
        ) as span:
            result = call_llm()
            usage = result["usage"]
            span.set_attribute("gen_ai.response.model", result["model"])
            span.set_attribute("gen_ai.response.finish_reasons", [c["finish_reason"] for c in result["choices"]])
            span.set_attribute("gen_ai.usage.input_tokens", usage["prompt_tokens"])
            span.set_attribute("gen_ai.usage.output_tokens", usage["completion_tokens"])
            # gpt-4o-mini list price, hard-coded as a hand-instrumenting developer would.
            cost = (usage["prompt_tokens"] * 0.15 + usage["completion_tokens"] * 0.60) / 1e6
            span.set_attribute("infersight.cost.usd", cost)
            span.set_attribute("infersight.cost.source", "manual")
        return result

    return call


def _timed_sync(fn: Callable[[], Any]) -> Callable[[int], float]:
    def run(n: int) -> float:
        start = time.perf_counter_ns()
        for _ in range(n):
            fn()
        return (time.perf_counter_ns() - start) / n / 1000

    return run


def _timed_async(loop: asyncio.AbstractEventLoop, fn: Callable[[], Awaitable[Any]]) -> Callable[[int], float]:
    async def body(n: int) -> float:
        start = time.perf_counter_ns()
        for _ in range(n):
            await fn()
        return (time.perf_counter_ns() - start) / n / 1000

    # One coroutine awaits all n calls, so event-loop scheduling is not part of the number.
    return lambda n: loop.run_until_complete(body(n))


@dataclass
class Variant:
    key: str
    label: str
    run: Callable[[int], float]  # n calls -> µs per call
    sdk_mode: str | None  # a key of _SdkSwitch.MODES; None: the SDK never initialised (proxy tracer)
    records: bool  # whether each call ends a recording span (counted to detect queue drops)
    calls: int = 0
    per_round: list[float] = field(default_factory=list)

    def measure(self, n: int) -> float:
        self.calls += n
        return self.run(n)

    @property
    def median(self) -> float:
        return statistics.median(self.per_round)


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
    attribute_diff: str  # '' when (b) and the like-for-like decorator variant set the same names


# init() keyword arguments per SDK configuration measured; "no_content" only where init() has it.
_MODES: dict[str, dict[str, Any]] = {"default": {}}
if "capture_content" in inspect.signature(sdk.init).parameters:
    _MODES["no_content"] = {"capture_content": False}


class _SdkSwitch:
    """Moves the SDK between configurations (or 'never initialised') with its public functions."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self.mode: str | None = None

    def set(self, mode: str | None) -> None:
        if mode == self.mode:
            return
        if self.mode is not None:
            sdk.shutdown()
        if mode is not None:
            sdk.init(service_name="bench", tracer_provider=self.provider, export=False, **_MODES[mode])
        self.mode = mode


def _attribute_difference(
    switch: _SdkSwitch, exporter: DiscardExporter, b: Callable[[], Any], c: Callable[[], Any], mode: str
) -> str:
    """'' when (b) and (c) produce spans with the same attribute names, else what differs.

    The ratio against the hand-written span only means something if both carry the same data;
    the SDK is still growing, so a difference is reported next to the numbers, not fatal.
    """
    keys: list[set[str]] = []
    for fn in (b, c):
        switch.set(mode)
        fn()
        switch.provider.force_flush()
        assert exporter.last is not None
        keys.append(set(exporter.last.attributes or {}))
    only_b, only_c = sorted(keys[0] - keys[1]), sorted(keys[1] - keys[0])
    if not only_b and not only_c:
        return ""
    return f"only in (b): {only_b or 'none'}; only in (c): {only_c or 'none'}"


def run(quick: bool = False) -> OverheadResult:
    rounds, calls = (6, 2_000) if quick else (20, 5_000)
    provider, exporter = _discarding_provider()
    switch = _SdkSwitch(provider)

    # Decorated once, as at import time in an app; the decorator looks its tracer up per call.
    decorated = sdk.traced_llm(provider="openai", model="gpt-4o-mini")(call_llm)
    adecorated = sdk.traced_llm(provider="openai", model="gpt-4o-mini")(acall_llm)
    raw = raw_otel(provider.get_tracer("bench.raw"))
    content_mode = "no_content" if "no_content" in _MODES else "default"
    attribute_diff = _attribute_difference(switch, exporter, raw, decorated, content_mode)

    loop = asyncio.new_event_loop()
    sync = [
        Variant("a", "(a) plain call", _timed_sync(call_llm), "default", records=False),
        Variant("b", "(b) raw OTel span, same 9 attributes", _timed_sync(raw), "default", records=True),
        Variant("c", "(c) @traced_llm after init()", _timed_sync(decorated), "default", records=True),
        Variant("d", "(d) @traced_llm before init()", _timed_sync(decorated), None, records=False),
    ]
    if "no_content" in _MODES:
        # The default records gen_ai.output.messages, which (b) does not: (e) is the like-for-like one.
        label = "(e) @traced_llm after init(capture_content=False)"
        sync.append(Variant("e", label, _timed_sync(decorated), "no_content", records=True))
    async_ = [
        Variant("a", "async (a) plain call", _timed_async(loop, acall_llm), "default", records=False),
        Variant("c", "async (c) @traced_llm after init()", _timed_async(loop, adecorated), "default", records=True),
    ]
    every = sync + async_
    for v in every:  # warm-up: the price lookup cache, code paths, the allocator
        switch.set(v.sdk_mode)
        v.measure(max(calls // 10, 500))

    for i in range(rounds):
        for v in every if i % 2 == 0 else every[::-1]:
            switch.set(v.sdk_mode)
            gc.collect()  # same heap state at every start; gc stays enabled while timing
            v.per_round.append(v.measure(calls))
    switch.set(None)
    loop.close()
    created = 2 + sum(v.calls for v in every if v.records)  # 2: the attribute check
    provider.shutdown()  # flushes what the batch processor still holds

    s = {v.key: v.per_round for v in sync}
    a = {v.key: v.per_round for v in async_}
    paired = [
        Paired("(c) / (b): decorator vs hand-written span, ratio",
               [c / b for b, c in zip(s["b"], s["c"], strict=True)]),
        Paired("(c) - (a): decorator cost per call, µs", [c - x for x, c in zip(s["a"], s["c"], strict=True)]),
        Paired("(b) - (a): hand-written span cost per call, µs", [b - x for x, b in zip(s["a"], s["b"], strict=True)]),
        Paired("(d) - (a): decorator before init(), µs", [d - x for x, d in zip(s["a"], s["d"], strict=True)]),
        *([Paired("(e) / (b): decorator without content capture vs hand-written span, ratio",
                  [e / b for b, e in zip(s["b"], s["e"], strict=True)])] if "e" in s else []),
        Paired("async (c) - (a): decorator cost per call, µs", [c - x for x, c in zip(a["a"], a["c"], strict=True)]),
    ]
    return OverheadResult(rounds, calls, sync, async_, paired, created, exporter.exported, attribute_diff)


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
    provider, _ = _discarding_provider()
    sdk.init(service_name="bench", tracer_provider=provider, export=False)
    decorated = sdk.traced_llm(provider="openai", model="gpt-4o-mini")(call_llm)
    decorated()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        decorated()
    profiler.disable()
    sdk.shutdown()
    provider.shutdown()
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
    b = next(v for v in r.sync if v.key == "b").median
    lines = [
        f"{r.rounds} rounds x {r.calls_per_round:,} calls per variant, interleaved; µs per call.",
        "",
        "| variant | median µs/call | min | max | median vs (b) |",
        "|---|---:|---:|---:|---:|",
    ]
    for v in r.sync + r.async_:
        lines.append(
            f"| {v.label} | {v.median:.2f} | {min(v.per_round):.2f} | {max(v.per_round):.2f} | "
            f"{v.median / b:.2f}x |"
        )
    lines += ["", "| paired per round | median | min | max |", "|---|---:|---:|---:|"]
    for p in r.paired:
        lines.append(f"| {p.label} | {p.median:.2f} | {min(p.values):.2f} | {max(p.values):.2f} |")
    dropped = r.spans_created - r.spans_exported
    lines += [
        "",
        f"Recording spans created: {r.spans_created:,}; reached the exporter: {r.spans_exported:,}"
        f" ({dropped:,} dropped by the BatchSpanProcessor's 2048-span queue).",
        f"Attribute names of (b) and {'(e)' if 'no_content' in _MODES else '(c)'}: "
        + (f"differ, {r.attribute_diff}." if r.attribute_diff else "identical (checked on one span each)."),
    ]
    return "\n".join(lines)


def format_profile(p: Profile) -> str:
    lines = [f"cProfile of {p.calls:,} calls of (c).", "", "| code | share of self time |", "|---|---:|"]
    lines += [f"| {owner} | {share:.0%} |" for owner, share in p.groups]
    lines += ["", "| function | share of self time | calls per decorated call |", "|---|---:|---:|"]
    lines += [f"| `{name}` | {share:.1%} | {per:.3g} |" for name, share, per in p.top]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="Per-call cost of the infersight SDK decorator.")
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    parser.add_argument("--profile", action="store_true", help="also print a cProfile breakdown of (c)")
    args = parser.parse_args()
    print(format_tables(run(args.quick)))
    if args.profile:
        print()
        print(format_profile(profile()))


if __name__ == "__main__":
    main()

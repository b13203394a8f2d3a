"""``@traced_llm`` beside Langfuse ``@observe(as_type="generation")`` and Traceloop ``@task``.

Each tool configures OpenTelemetry globally, so each runs in a process of its own; in every
process the same trivial function is timed bare, inside a hand-written OTel span, and under the
tool's decorator, in alternating rounds. The ratio to the hand-written span in the same process
is what compares across tools. Every tool exports through a batch processor into an exporter
that discards spans, so no network is measured.

    python bench/peers.py [--quick]          (needs the `bench` extra: langfuse, traceloop-sdk)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind
from sdk_overhead import MESSAGES, RESPONSE, DiscardExporter, bench_init, call_llm

VARIANTS = ("infersight", "langfuse", "traceloop")


def _decorated(variant: str) -> Callable[..., Any]:
    if variant == "infersight":
        from infersight import sdk

        sdk.init(**bench_init(DiscardExporter()))
        return sdk.traced_llm(provider="openai", model="gpt-4o-mini")(call_llm)
    if variant == "langfuse":
        from langfuse import Langfuse, observe

        Langfuse(public_key="pk-lf-bench", secret_key="sk-lf-bench", host="http://127.0.0.1:9",
                 span_exporter=DiscardExporter())
        return observe(as_type="generation")(call_llm)
    from traceloop.sdk import Traceloop
    from traceloop.sdk.decorators import task

    Traceloop.init(app_name="bench", exporter=DiscardExporter(), telemetry_enabled=False, instruments=set())
    return task(name="call_llm")(call_llm)


def _messages_json(messages: list[dict[str, Any]]) -> str:
    return json.dumps([{"role": m["role"], "parts": [{"type": "text", "content": m["content"]}]} for m in messages],
                      ensure_ascii=False, separators=(",", ":"))


# The attributes @traced_llm exports for this call (bench/sdk_overhead.py checks them name for name).
IDENTICAL = {
    "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini",
    "gen_ai.response.model": RESPONSE["model"], "gen_ai.response.finish_reasons": ["stop"],
    "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 20, "infersight.cost.usd": 2.7e-05,
    "infersight.cost.source": "genai-prices:openai/gpt-4o-mini",
    "gen_ai.input.messages": _messages_json([{**m, "content": m["content"].replace("jane.doe@example.com", "[EMAIL]")}
                                             for m in MESSAGES]),
    "gen_ai.output.messages": _messages_json([{"role": "assistant",
                                               "content": RESPONSE["choices"][0]["message"]["content"]}]),
}


def _raw() -> Callable[[], Any]:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(DiscardExporter()))
    tracer = provider.get_tracer("bench.raw")
    name = f"chat {RESPONSE['model']}"

    def call() -> Any:
        with tracer.start_as_current_span(name, kind=SpanKind.CLIENT, attributes=IDENTICAL):
            return call_llm(messages=MESSAGES)

    return call


def _time(fn: Callable[[], Any], n: int) -> float:
    # The calling thread's CPU time: what each tool costs the app's request, robust to a shared machine.
    start = time.thread_time()
    for _ in range(n):
        fn()
    return (time.thread_time() - start) / n * 1e6


def worker(variant: str, rounds: int, calls: int) -> dict[str, Any]:
    try:
        decorated = _decorated(variant)
    except ImportError as exc:
        return {"variant": variant, "error": f"not installed ({exc.name})"}
    fns = {"plain": call_llm, "raw": _raw(), "decorated": lambda: decorated(messages=MESSAGES)}
    for fn in fns.values():
        _time(fn, calls // 5)
    samples: dict[str, list[float]] = {k: [] for k in fns}
    ratios: list[float] = []
    for i in range(rounds):
        order = list(fns) if i % 2 == 0 else list(fns)[::-1]
        got = {k: _time(fns[k], calls) for k in order}
        for k, v in got.items():
            samples[k].append(v)
        ratios.append(got["decorated"] / got["raw"])
    return {"variant": variant, **{f"{k}_us": statistics.median(v) for k, v in samples.items()},
            "ratio_to_raw": statistics.median(ratios)}


def run(quick: bool = False, python: str | None = None) -> list[dict[str, Any]]:
    """Time every tool, each in a process of ``python`` (default: this interpreter)."""
    rounds, calls = (4, 1000) if quick else (10, 3000)
    out = []
    for variant in VARIANTS:
        command = [python or sys.executable, __file__, "--worker", variant,
                   "--rounds", str(rounds), "--calls", str(calls)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        out.append(json.loads(lines[-1]) if lines else {"variant": variant, "error": done.stderr.strip()[-200:]})
    return out


def format_table(results: list[dict[str, Any]]) -> str:
    lines = ["| decorator | caller CPU µs per call | identical-attribute span, same process | ratio to it | bare |",
             "|---|---:|---:|---:|---:|"]
    names = {"infersight": "infersight `@traced_llm`", "langfuse": "Langfuse `@observe(as_type=\"generation\")`",
             "traceloop": "Traceloop `@task`"}
    for r in results:
        if "error" in r:
            lines.append(f"| {names[r['variant']]} | {r['error']} | | | |")
            continue
        lines.append(f"| {names[r['variant']]} | {r['decorated_us']:.1f} | {r['raw_us']:.1f} | "
                     f"{r['ratio_to_raw']:.2f}x | {r['plain_us']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker", choices=VARIANTS)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.rounds, args.calls)))
        return
    print(format_table(run(args.quick)))


if __name__ == "__main__":
    main()

"""Per-chunk cost of observing a stream: the same generator consumed bare and through @traced_llm.

Each stream yields N chunks shaped like ``openai`` ChatCompletionChunk objects (attribute access)
or plain strings. The per-call cost of the span is amortised over N chunks, so the difference per
chunk is the observation cost: a clock read, the chunk's text lookup, a gap appended.

    .venv/bin/python bench/stream_overhead.py [--quick]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import SimpleNamespace

from sdk_overhead import DiscardExporter

from infersight import sdk


def _openai_chunks(n: int) -> list[SimpleNamespace]:
    return [
        SimpleNamespace(model="gpt-4o-mini", usage=None,
                        choices=[SimpleNamespace(delta=SimpleNamespace(content=f" tok{i}"), finish_reason=None)])
        for i in range(n)
    ]


@dataclass
class StreamResult:
    shape: str
    chunks: int
    rounds: int
    per_chunk_us: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.per_chunk_us)


def _consume(make: Callable[[], Iterator[object]]) -> float:
    # The consuming thread's CPU time: the machine is shared, and time spent descheduled is
    # not the SDK's. Nothing of a stream's per-chunk work is deferred to another thread.
    start = time.thread_time()
    for _ in make():
        pass
    return time.thread_time() - start


def run(quick: bool = False) -> list[StreamResult]:
    rounds, n = (6, 2_000) if quick else (20, 5_000)
    sdk.init(service_name="bench", span_exporter=DiscardExporter(), export=False, capture_content=False)
    results = []
    try:
        shapes = (("openai chunk objects", _openai_chunks(n)), ("plain strings", [f" t{i}" for i in range(n)]))
        for shape, chunks in shapes:

            def bare() -> Iterator[object]:
                yield from chunks  # noqa: B023 - bare is only called within this iteration

            traced = sdk.traced_llm(provider="openai", model="gpt-4o-mini")(bare)
            per_chunk = []
            _consume(bare), _consume(traced)  # warm-up
            for i in range(rounds):
                gc.collect()
                pair = (bare, traced) if i % 2 == 0 else (traced, bare)
                times = {f: _consume(f) for f in pair}
                per_chunk.append((times[traced] - times[bare]) / n * 1e6)
            results.append(StreamResult(shape, n, rounds, per_chunk))
    finally:
        sdk.shutdown()
    return results


def format_table(results: list[StreamResult]) -> str:
    lines = ["| chunk shape | chunks per stream | rounds | median µs per chunk | min | max |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r.shape} | {r.chunks:,} | {r.rounds} | {r.median:.2f} | "
                     f"{min(r.per_chunk_us):.2f} | {max(r.per_chunk_us):.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="Per-chunk cost of stream observation.")
    parser.add_argument("--quick", action="store_true")
    print(format_table(run(parser.parse_args().quick)))


if __name__ == "__main__":
    main()

"""Detector benchmarks: inline cost per span, drift evaluation time, false alarms, precision/recall.

    .venv/bin/python bench/detectors.py            # full run (a few minutes), markdown on stdout
    .venv/bin/python bench/detectors.py --quick    # smaller corpora and fewer seeds
    .venv/bin/python bench/detectors.py --inline --against 181e013   # inline only, beside a commit

Prints markdown tables for BENCHMARKS.md:

1. Inline detectors per span on 1 KB and 16 KB outputs: repetition + JSON together (the
   target: under 100 µs per KB), on prose (JSON not expected: the JSON detector returns
   at once), on JSON with ``expect_json`` and on a looping answer; and all four inline detectors
   (``run_inline``) for comparison.
2. Drift evaluation time for 10,000 vs 10,000 requests: numeric (fit = calibration, detect),
   text (capped at ``max_samples`` = 1,000 texts a side by design; a quiet hour costs one
   cross-validation, a drifting one adds the permutations and the explanation), and one
   :class:`WindowedRunner` hour end to end on the embedded store (SQL, sampling, both drift
   detectors on one route).
3. The false-alarm rate without change, over many seeds (the calibration's promise: at most
   ``alpha`` = 1% per evaluation).
4. Precision and recall on the generated corpora of ``tests/detectors/corpora.py``; the
   repetition detector on generated greedy/beam loops and nucleus/human text
   (``loop_corpus.py``); the refusal detector per language on the hand-written hard set
   (``refusal_cases.py``).
5. With ``--against REF``: each inline detector beside its version at git commit REF, timed in
   alternating rounds in one process, as a ratio (the machine is shared: only ratios compare).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT))  # the generated corpora live with the tests

from infersight import sdk
from infersight.detectors import (
    BUILTIN_DETECTORS,
    ContextStuffingDetector,
    JsonDetector,
    NumericDriftDetector,
    RepetitionDetector,
    SpanText,
    TextDriftDetector,
    WindowedRunner,
    run_inline,
)
from tests.detectors.corpora import (
    _SENTENCES,
    TEXT_BASE,
    inline_scores,
    markdown,
    numeric_window,
    refusal_scores,
    repetition_scores,
    report,
    text_corpus,
)
from tests.detectors.loop_corpus import prose as varied_prose
from tests.detectors.refusal_cases import CASES, HELD_OUT


def _median_us(fn: Callable[[], object], *, min_time_s: float = 0.2, repeats: int = 7) -> float:
    """Median over ``repeats`` rounds of the mean time per call, in µs."""
    fn()
    n, start = 1, time.perf_counter()
    while time.perf_counter() - start < min_time_s / repeats:
        fn()
        n += 1
    rounds = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        rounds.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(rounds)


def _sized(unit: Callable[[int], str], size: int) -> str:
    text, i = "", 0
    while len(text.encode()) < size:
        text += unit(i)
        i += 1
    return text.encode()[:size].decode("utf-8", "ignore")


def _outputs(size: int) -> dict[str, SpanText]:
    prose = _sized(lambda i: _SENTENCES[(i * 7) % len(_SENTENCES)] + (" " if i % 5 else "\n\n"), size)
    # Valid JSON of exactly ``size`` bytes: as many ~80-byte records as fit, the last string padded.
    items = [{"id": i, "name": f"item {i}", "tags": ["a", "b"], "price": i * 1.5, "ok": i % 2 == 0}
             for i in range(size // 90)]
    records = json.dumps({"items": items, "pad": ""})
    records = records[:-2] + "x" * max(0, size - len(records)) + '"}'
    loop = _sized(lambda i: "Let me check the logs again to see what happened. ", size)
    return {
        "prose": SpanText(output_text=prose),
        "JSON (expect_json)": SpanText(output_text=records, expect_json=True),
        "looping prose": SpanText(output_text=loop, finish_reason="length"),
    }


def _baseline_detectors(ref: str, into: Path) -> Any:
    """The ``detectors`` package as it was at git commit ``ref``, importable beside today's."""
    package = into / "baseline_infersight" / "detectors"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("")
    names = subprocess.run(["git", "ls-tree", "--name-only", ref, "detectors/"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    for name in names:
        blob = subprocess.run(["git", "show", f"{ref}:{name}"], cwd=ROOT, check=True, capture_output=True).stdout
        (package / Path(name).name).write_bytes(blob)
    sys.path.insert(0, str(into))
    return importlib.import_module("baseline_infersight.detectors")


def against_table(ref: str, into: Path) -> str:
    old = _baseline_detectors(ref, into)
    lines = [f"| detector | output | size | {ref} µs/span | now µs/span | ratio |", "|---|---|---:|---:|---:|---:|"]
    names = ("repetition", "json", "refusal", "truncation")
    pairs: dict[str, tuple[Callable[[Any], object], Callable[[Any], object]]] = {
        name: (type(before)().detect, type(after)().detect)
        for name, before, after in zip(names, old.BUILTIN_DETECTORS, BUILTIN_DETECTORS, strict=True)
    }
    pairs["all four"] = (old.run_inline, run_inline)
    for size in (1024, 16 * 1024):
        outputs = dict(_outputs(size))
        outputs["varied prose"] = SpanText(output_text=varied_prose(random.Random(3), 2000)[:size])
        for output, span in outputs.items():
            old_span = old.SpanText(output_text=span.output_text, finish_reason=span.finish_reason,
                                    expect_json=span.expect_json)
            for name, (before, after) in pairs.items():
                b, a = _side_by_side(lambda f=before, s=old_span: f(s), lambda f=after, s=span: f(s))
                lines.append(f"| {name} | {output} | {size // 1024} KB | {b:,.1f} | {a:,.1f} | {a / b:.2f} |")
    return "\n".join(lines)


def _side_by_side(before: Callable[[], object], after: Callable[[], object]) -> tuple[float, float]:
    """Median µs per call of each over 7 alternating rounds: load changes hit both alike."""
    rounds: tuple[list[float], list[float]] = ([], [])
    for _ in range(7):
        rounds[0].append(_median_us(before, min_time_s=0.02, repeats=1))
        rounds[1].append(_median_us(after, min_time_s=0.02, repeats=1))
    return statistics.median(rounds[0]), statistics.median(rounds[1])


def inline_table() -> str:
    repetition, json_detector = RepetitionDetector(), JsonDetector()
    lines = ["| output | size | repetition + JSON µs/span | µs per KB | all four inline µs/span |",
             "|---|---:|---:|---:|---:|"]
    for size in (1024, 16 * 1024):
        for name, span in _outputs(size).items():
            both = _median_us(lambda span=span: (repetition.detect(span), json_detector.detect(span)))
            everything = _median_us(lambda span=span: run_inline(span))
            lines.append(
                f"| {name} | {size // 1024} KB | {both:,.1f} | {both / (size / 1024):,.1f} | {everything:,.1f} |"
            )
    return "\n".join(lines)


def distinct_texts_table(texts: int = 2000) -> str:
    """The four inline detectors on ``texts`` different answers, each analysed once, as the
    collector sees them: the tables above time one text again and again, so its warm caches and
    its one shape make the typical case; here some answers take the detectors' longer paths.
    Per call, µs: median, mean, 90th and 99th percentile."""
    lines = ["| output | size | texts | median | mean | p90 | p99 | one text again and again (median) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for size, count in ((1024, texts), (16 * 1024, texts // 10)):
        rng = random.Random(11)
        spans = [SpanText(output_text=varied_prose(rng, size + 1000)[:size]) for _ in range(count)]
        took = []
        for span in spans:
            t0 = time.perf_counter()
            run_inline(span)
            took.append((time.perf_counter() - t0) * 1e6)
        took.sort()
        again = _median_us(lambda span=spans[0]: run_inline(span))
        lines.append(f"| varied prose | {size // 1024} KB | {count:,} | {took[len(took) // 2]:,.1f} | "
                     f"{statistics.fmean(took):,.1f} | {took[int(0.9 * len(took))]:,.1f} | "
                     f"{took[int(0.99 * len(took))]:,.1f} | {again:,.1f} |")
    return "\n".join(lines)


def _timed(fn: Callable[[], object]) -> tuple[float, object]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def drift_table(store_dir: Path) -> str:
    rng = np.random.default_rng(0)
    lines = ["| evaluation | requests (reference vs current) | fit s | detect s | total s | verdict |",
             "|---|---|---:|---:|---:|---|"]
    reference = numeric_window(rng, 10_000)
    for name, current in (("numeric, no change", numeric_window(rng, 10_000)),
                          ("numeric, answers 40% longer", numeric_window(rng, 10_000, output_scale=1.4))):
        fit_s, numeric = _timed(lambda: NumericDriftDetector().fit(reference))
        detect_s, result = _timed(lambda numeric=numeric, current=current: numeric.detect(current))
        lines.append(f"| {name} | 10,000 vs 10,000 | {fit_s:.3f} | {detect_s:.3f} | {fit_s + detect_s:.3f} | "
                     f"{_verdict(result)} |")
    texts = text_corpus(rng, 10_000, TEXT_BASE)
    for name, current in (("text, no change", text_corpus(rng, 10_000, TEXT_BASE)),
                          ("text, new topic at 30%", text_corpus(rng, 10_000, {"account": 0.35, "shipping": 0.35,
                                                                                "billing": 0.3}))):
        fit_s, text = _timed(lambda: TextDriftDetector().fit(texts))
        detect_s, result = _timed(lambda text=text, current=current: text.detect(current, channel="prompts"))
        lines.append(f"| {name} (1,000 a side used) | 10,000 vs 10,000 | {fit_s:.3f} | {detect_s:.3f} | "
                     f"{fit_s + detect_s:.3f} | {_verdict(result)} |")
    seconds, rows = _runner_hour(store_dir)
    lines.append(f"| WindowedRunner drift hour on chDB: SQL + numeric + text (prompts, outputs), one route "
                 f"| 10,000 vs 10,000 | | | {seconds:.3f} | {rows} |")
    return "\n".join(lines)


def _verdict(result: object) -> str:
    drifted = getattr(result, "drifted", None)
    if drifted and hasattr(result, "moved"):
        return "drift: " + ", ".join(f.feature for f in result.moved)
    if drifted:
        return f"drift: AUC {result.auc:.2f}"
    return "no drift" if drifted is False else "no verdict"


def _runner_hour(store_dir: Path) -> tuple[float, str]:
    """Store 10k reference requests (a week) and 10k current ones (an hour), then time one run."""
    from infersight.collector import ChdbStore, encode_rows

    store = ChdbStore(store_dir, database="bench")
    try:
        hour = datetime(2026, 11, 2, 11, tzinfo=timezone.utc)
        rng = np.random.default_rng(1)
        start = int((hour - timedelta(days=7)).timestamp())
        rows = []
        for offset, times, mix, scale in (
            (0, sorted(start + rng.integers(0, 7 * 86_400, 10_000)), TEXT_BASE, 1.0),
            (10_000, sorted(int(hour.timestamp()) + rng.integers(0, 3_600, 10_000)),
             {"account": 0.35, "shipping": 0.35, "billing": 0.3}, 1.4),
        ):
            numbers = numeric_window(rng, len(times), output_scale=scale)
            prompts, answers = text_corpus(rng, len(times), mix), text_corpus(rng, len(times), TEXT_BASE)
            for k, ts in enumerate(times):
                span_id = hashlib.sha256(str(offset + k).encode()).hexdigest()[:16]
                attributes = {
                    "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
                    "gen_ai.usage.input_tokens": str(int(numbers["input_tokens"][k])),
                    "gen_ai.usage.output_tokens": str(int(numbers["output_tokens"][k])),
                    "infersight.cost.usd": repr(float(numbers["cost_usd"][k])), "infersight.route": "support.answer",
                    "gen_ai.input.messages": json.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": prompts[k]}]}]
                    ),
                    "gen_ai.output.messages": json.dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": answers[k]}]}]
                    ),
                }
                if not math.isnan(numbers["ttft_s"][k]):
                    attributes["gen_ai.response.time_to_first_chunk"] = repr(float(numbers["ttft_s"][k]))
                rows.append({"Timestamp": f"{int(ts):010d}.000000000", "TraceId": span_id * 2, "SpanId": span_id,
                             "SpanName": "chat gpt-4o-mini", "ServiceName": "bench",
                             "ResourceAttributes": {"infersight.project": "bench"}, "SpanAttributes": attributes,
                             "Duration": int(numbers["duration_s"][k] * 1e9), "StatusCode": "Unset"})
        for i in range(0, len(rows), 5000):
            store.insert("otel_traces", encode_rows(rows[i:i + 5000]))
        seconds, run = _timed(lambda: WindowedRunner(store, stuffing=ContextStuffingDetector(price=sdk.cost_usd)).run(
            "bench", hour + timedelta(hours=1, minutes=1, seconds=5)))
        return seconds, ", ".join(sorted({r["label"] for r in run.rows})) or "nothing"
    finally:
        store.close()


def false_alarm_table(numeric_seeds: int, text_seeds: int) -> str:
    lines = ["| detector | evaluations without change | false alarms | rate | bound (alpha) |",
             "|---|---:|---:|---:|---:|"]
    alarms = 0
    for seed in range(numeric_seeds):
        rng = np.random.default_rng(50_000 + seed)
        detector = NumericDriftDetector(random_state=seed).fit(numeric_window(rng, 2000))
        alarms += bool(detector.detect(numeric_window(rng, 800)).drifted)
    lines.append(f"| drift.numeric, 2,000 vs 800 requests | {numeric_seeds} | {alarms} | "
                 f"{alarms / numeric_seeds:.2%} | 1% |")
    alarms = 0
    for seed in range(numeric_seeds):
        rng = np.random.default_rng(60_000 + seed)
        detector = NumericDriftDetector(random_state=seed, min_distance=0.0).fit(numeric_window(rng, 2000))
        alarms += bool(detector.detect(numeric_window(rng, 800)).drifted)
    lines.append(f"| drift.numeric, calibration alone (min_distance=0) | {numeric_seeds} | {alarms} | "
                 f"{alarms / numeric_seeds:.2%} | 1% |")
    alarms = 0
    for seed in range(text_seeds):
        rng = np.random.default_rng(70_000 + seed)
        detector = TextDriftDetector(random_state=seed).fit(text_corpus(rng, 1000, TEXT_BASE))
        alarms += bool(detector.detect(text_corpus(rng, 500, TEXT_BASE)).drifted)
    lines.append(f"| drift.text, 1,000 vs 500 texts | {text_seeds} | {alarms} | {alarms / text_seeds:.2%} | 1% |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller corpora and fewer seeds")
    parser.add_argument("--inline", action="store_true", help="the inline detectors only")
    parser.add_argument("--against", metavar="REF", help="time the inline detectors beside those of git commit REF")
    args = parser.parse_args()
    sections = [("Inline detectors per span (median of 7 rounds)", inline_table),
                ("Inline detectors on distinct answers, each once", distinct_texts_table)]
    with tempfile.TemporaryDirectory() as tmp:
        if args.against:
            sections.append((f"Inline detectors beside {args.against} (median of 7 alternating rounds)",
                             lambda: against_table(args.against, Path(tmp))))
        if not args.inline:
            sections.append(("Drift evaluation time", lambda: drift_table(Path(tmp))))
            sections.append(("False alarms without change",
                             lambda: false_alarm_table(50 if args.quick else 300, 20 if args.quick else 100)))
            sections.append(("Precision and recall on generated corpora", lambda: markdown(report(quick=args.quick))))
        else:
            sections.append(("Precision and recall on generated corpora", lambda: markdown(inline_scores())))
        sections.append(("Repetition on generated continuations", lambda: markdown(repetition_scores())))
        sections.append(("Refusals per language",
                         lambda: markdown(refusal_scores(CASES, "hard set") + refusal_scores(HELD_OUT, "held out"))))
        for title, build in sections:
            t0 = time.perf_counter()
            table = build()
            print(f"### {title}\n\n{table}\n\n_({time.perf_counter() - t0:.1f} s to measure)_\n", flush=True)


if __name__ == "__main__":
    main()

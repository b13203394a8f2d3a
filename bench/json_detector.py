"""The JSON detector's cost per KB on hostile answers: it runs on every span with JSON expected,
so it must stay linear on any text.

    .venv/bin/python bench/json_detector.py                      # 16 KB and 64 KB, markdown table
    .venv/bin/python bench/json_detector.py --sizes 256 --repeats 1

The answers are the ones of ``tests/detectors/test_json_adversarial.py`` (which asserts the
linearity); each is classified by the public ``JsonDetector`` as a span that asked for JSON.
Best of ``--repeats`` runs, µs per KB of answer.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT))  # the hostile answers live with the tests

from infersight.detectors import JsonDetector, SpanText  # noqa: E402
from tests.detectors.test_json_adversarial import ADVERSARIAL  # noqa: E402

KB = 1024


def us_per_kb(detector: JsonDetector, text: str, repeats: int) -> float:
    span = SpanText(text, expect_json=True)
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        detector.detect(span)
        best = min(best, time.perf_counter() - start)
    return best * 1e6 / (len(text) / KB)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="16,64", help="answer sizes in KB, comma-separated")
    parser.add_argument("--repeats", type=int, default=3, help="runs per answer; the best is kept")
    args = parser.parse_args(argv)
    sizes = [int(size) * KB for size in args.sizes.split(",")]
    detector = JsonDetector()
    print(f"JSON detector on hostile answers, µs per KB (best of {args.repeats})\n")
    print("| answer | size | µs per KB |")
    print("|---|---:|---:|")
    for case, make in ADVERSARIAL.items():
        for size in sizes:
            print(f"| {case} | {size // KB} KB | {us_per_kb(detector, make(size), args.repeats):,.1f} |", flush=True)


if __name__ == "__main__":
    main()

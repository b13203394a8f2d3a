"""The JSON detector's cost per KB on hostile answers, before and after the linear rewrite.

    .venv/bin/python bench/json_detector.py                      # 16 KB and 64 KB, markdown table
    .venv/bin/python bench/json_detector.py --sizes 256 --timeout 120

"Before" is ``detectors/_json.py`` as of ``--before`` (default: the last commit with the
rescanning scanner), read with ``git show``. Each "before" measurement runs in a subprocess, so
a quadratic case that takes longer than ``--timeout`` seconds shows as such instead of holding
up the table. The answers are the ones of ``tests/detectors/test_json_adversarial.py``.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT))  # the hostile answers live with the tests

from infersight.detectors import _json  # noqa: E402
from tests.detectors.test_json_adversarial import ADVERSARIAL  # noqa: E402

BEFORE = "098bf7d"
KB = 1024


def load_before(rev: str) -> types.ModuleType:
    """The JSON detector module as of ``rev``, imported next to the current one."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:detectors/_json.py"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    module = types.ModuleType("infersight.detectors._json_before")
    module.__package__ = "infersight.detectors"
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{rev}:detectors/_json.py", "exec"), module.__dict__)
    return module


def us_per_kb(classify: object, text: str, repeats: int = 3) -> float:
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        classify(text, "", None)  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best * 1e6 / (len(text) / KB)


def before_in_subprocess(rev: str, case: str, size: int, timeout: float) -> str:
    command = [sys.executable, __file__, "--measure-before", case, "--before", rev, "--sizes", str(size // KB)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return f"> {timeout * 1e6 / (size / KB):,.0f}"
    return f"{float(done.stdout):,.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="16,64", help="answer sizes in KB, comma-separated")
    parser.add_argument("--before", default=BEFORE, help="git revision of the old detector")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per 'before' case")
    parser.add_argument("--measure-before", metavar="CASE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(size) * KB for size in args.sizes.split(",")]

    if args.measure_before:  # the subprocess side of before_in_subprocess
        before = load_before(args.before)
        # one run: the old detector is slow enough that noise does not matter
        print(us_per_kb(before._classify, ADVERSARIAL[args.measure_before](sizes[0]), repeats=1))
        return

    print(f"JSON detector on hostile answers, µs per KB (after: best of 3), before = {args.before}\n")
    print("| answer | size | before | after |")
    print("|---|---:|---:|---:|")
    for case, make in ADVERSARIAL.items():
        for size in sizes:
            after = us_per_kb(_json._classify, make(size))
            before = before_in_subprocess(args.before, case, size, args.timeout)
            print(f"| {case} | {size // KB} KB | {before} | {after:,.1f} |", flush=True)


if __name__ == "__main__":
    main()

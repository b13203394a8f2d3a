"""The repetition detector now against itself at an earlier commit, side by side in one process.

    .venv/bin/python bench/repetition_vs.py [--ref COMMIT]

Loads ``detectors/_repetition.py`` as it was at ``--ref`` (via ``git show``) next to the current
one, checks that both find the same thing on each output, and times them in alternating rounds so
both see the same machine: a ratio, because this machine's speed drifts by a third within an hour.
Prints a markdown table.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import detectors as bench_detectors  # bench/detectors.py: the same outputs as its inline table
from infersight.detectors._repetition import RepetitionDetector

ROOT = Path(__file__).resolve().parent.parent


def _detector_at(ref: str) -> RepetitionDetector:
    source = subprocess.run(["git", "show", f"{ref}:detectors/_repetition.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    # Relative imports of the package's other modules become absolute ones.
    source = source.replace("from ._", "from infersight.detectors._")
    path = Path(tempfile.mkdtemp()) / "repetition_at_ref.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("repetition_at_ref", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module.RepetitionDetector()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="0f50f63", help="the earlier commit (default: before the fast tokeniser)")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    before, after = _detector_at(args.ref), RepetitionDetector()
    print(f"| output | size | at {args.ref} µs | now µs | now / then |")
    print("|---|---:|---:|---:|---:|")
    for size in (1024, 16 * 1024):
        for name, span in bench_detectors._outputs(size).items():
            assert [d.label for d in after.detect(span)] == [d.label for d in before.detect(span)], name
            times: dict[int, list[float]] = {0: [], 1: []}
            for _ in range(args.rounds):
                for which, detector in enumerate((before, after)):
                    t0 = time.perf_counter()
                    for _ in range(20):
                        detector.detect(span)
                    times[which].append((time.perf_counter() - t0) / 20 * 1e6)
            then, now = statistics.median(times[0]), statistics.median(times[1])
            print(f"| {name} | {size // 1024} KB | {then:,.1f} | {now:,.1f} | {now / then:.2f} |")


if __name__ == "__main__":
    main()

"""How often the queue rule pages for one incident, and when it resolves, on simulated replicas.

    .venv/bin/python -m bench.pager.queue_pages            # 40 draws per incident
    .venv/bin/python -m bench.pager.queue_pages --draws 10 # a quick look

Each draw is one replica's queue as ``traffic.py`` makes it (batches every 10 minutes and a
trickle, 4 consumers; the load of a random weekday minute), three hours of normal life, an
incident (40 and 120 minutes by default), then two hours in which the backlog drains. The
incidents:

- stalled replica: every consumer stops at once (a deadlock);
- dead consumer: the consumers die one by one over its first 10 minutes, then none works.

The rule is asked every minute with the last 30 minutes of samples, as the evaluator reads them,
and an alert resolves once its verdict has been clear for ``EvaluatorConfig.clear_for``. Per
incident: the share paged, pages per paged incident (the target is one), minutes to the first
page, minutes from the end (consumers back) to the resolve, and minutes of the incident after its
first page that were shown resolved.
"""

from __future__ import annotations

import argparse
import statistics
from datetime import datetime, timedelta, timezone

import numpy as np

from infersight.collector.alerts import EvaluatorConfig, QueueRule
from infersight.collector.alerts._queue import DepthSample

from . import traffic as pt
from .scoring import spread, tally

T0 = datetime(2026, 10, 5, tzinfo=timezone.utc)  # a Monday
BEFORE, LENGTH, AFTER = 180, 40, 120
READ = 30  # minutes of samples the evaluator reads (``_reads.queue_series``)


def capacity(kind: str, minutes: int, length: int = LENGTH) -> np.ndarray:
    """The consumers' capacity per minute of a draw."""
    out = np.ones(minutes)
    out[BEFORE:BEFORE + length] = 0.0
    if kind == "dead consumer":
        out[BEFORE:BEFORE + 10] = np.linspace(0.75, 0.0, 10)
    return out


def episode(rng: np.random.Generator, kind: str, rule: QueueRule, clear_for: int, scale: float = 0.25,
            length: int = LENGTH) -> tuple[int, int | None, int | None, int]:
    """Pages, minutes from the onset to the first, minutes from the end to the last resolve
    (``None``: not paged, or still firing at the end of the draw), and the incident's minutes
    after its first page shown resolved."""
    minutes = BEFORE + length + AFTER
    start = int(rng.integers(0, 5)) * pt.MINUTES_PER_DAY + int(rng.integers(6 * 60, 20 * 60))
    load = np.zeros(start + minutes)
    load[start:] = pt.queue_load(start + minutes)[start:]
    caps = np.ones(start + minutes)
    caps[start:] = capacity(kind, minutes, length)
    samples = [DepthSample(T0 + timedelta(minutes=m - start), depth, age)
               for m, depth, age in pt.replica(rng, load, caps, scale, start, start + minutes)]

    def state(m: int) -> str:
        now = T0 + timedelta(minutes=m, seconds=30)
        verdicts = rule.evaluate("p", "worker", "jobs", samples[m - READ + 1:m + 1], now, instance="w")
        return next(v.state for v in verdicts if v.alert.name == "QueueNotDraining")

    return tally(((m, state(m)) for m in range(READ, minutes)), BEFORE, BEFORE + length, clear_for)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pager.queue_pages", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--draws", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--minutes", type=int, nargs="+", default=[LENGTH, 120], help="incident lengths")
    parser.add_argument("--scale", type=float, default=0.25, help="the volume of traffic.py's --scale")
    args = parser.parse_args(argv)
    config = EvaluatorConfig()
    clear_for = int(config.clear_for.total_seconds() // 60)
    print("| incident | paged | pages per paged incident | minutes to first page (median) |"
          " minutes from end to resolve | minutes shown resolved while on (mean, max) |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind in ("stalled replica", "dead consumer"):
        for length in args.minutes:
            rng = np.random.default_rng([args.seed, len(kind), length])
            runs = [episode(rng, kind, config.queue_rule, clear_for, args.scale, length) for _ in range(args.draws)]
            paged = [r for r in runs if r[0]]
            firsts = [r[1] for r in paged if r[1] is not None]
            resolves = [r[2] for r in paged if r[2] is not None]
            pages = [r[0] for r in paged]
            dark = [r[3] for r in paged]
            print(f"| {kind}, {length} min | {len(paged)}/{args.draws} | "
                  f"{spread(pages)} (mean {statistics.fmean(pages) if pages else 0:.2f}) | "
                  f"{statistics.median(firsts) if firsts else '–'} | {spread(resolves)} "
                  f"({len(paged) - len(resolves)} still firing) | "
                  f"{statistics.fmean(dark) if dark else 0:.1f}, {max(dark) if dark else 0} |")


if __name__ == "__main__":
    main()

"""How often the error-rate rule pages for one creep, and when it resolves, on simulated services.

    .venv/bin/python -m bench.pager.creep_pages            # 40 draws per case
    .venv/bin/python -m bench.pager.creep_pages --draws 10 # a quick look
    .venv/bin/python -m bench.pager.creep_pages --before   # a creep's cleared minutes may page again
    .venv/bin/python -m bench.pager.creep_pages --ratios   # creeps to 2% and 5% of the calls for 3 h
    .venv/bin/python -m bench.pager.creep_pages --outages  # outages of 20% for 30 min and 30% for 12 min

Each draw is one service's traffic in 10-second buckets, made as ``outage_windows.py`` makes it
(Poisson requests, failed attempts retried), with the usual error ratio (0.4%) for two hours, a
creep to 4x it for 1 or 3 hours, then an hour of the usual ratio. The rule is asked every minute
through ``ServiceMemory``, as the evaluator asks it, and an alert resolves once its verdict has
been clear for the evaluator's ``clear_for`` (as ``Evaluator`` does). Per case: the share of
creeps paged, pages per paged creep (the target is one), minutes to the first page, and
minutes from the end to the resolve (negative: the alert resolved while the creep went on), and
the minutes after the first page that the creep went on while shown resolved.
``--before`` keeps only an outage's minutes from paging again, as the rule did before 12ee945.
"""

from __future__ import annotations

import argparse
import statistics
from datetime import timedelta
from typing import Any

import numpy as np

from infersight.collector.alerts import CLEAR, EvaluatorConfig, ServiceMemory, Verdict

from .outage_windows import T0, USUAL, hour_before, simulate
from .scoring import spread, tally

ONSET = 120  # minutes of usual traffic before the creep
AFTER = 60  # minutes replayed after its end


class _OutagesOnly(ServiceMemory):
    """The memory before a creep's cleared minutes were kept from paging again."""

    def verdict(self, *args: Any, **kwargs: Any) -> Verdict | None:
        paged_until = self.paged_until
        verdict = super().verdict(*args, **kwargs)
        if verdict is not None and verdict.state == CLEAR:
            self.paged_until = paged_until
        return verdict


def episode(rng: np.random.Generator, per_minute: float, minutes: int, memory: ServiceMemory,
            ratio: float = 4 * USUAL) -> tuple[int, int | None, int | None, int]:
    """Pages, minutes from the onset to the first, minutes from the end to the last resolve
    (``None``: not paged, or still firing an hour after the end), and the minutes of the creep
    after its first page that were shown resolved."""
    end = ONSET + minutes
    calls, errors, failed = simulate(rng, per_minute, lambda m: ratio if ONSET <= m < end else USUAL,
                                     end + AFTER)
    config = EvaluatorConfig()
    clear_for = int(config.clear_for.total_seconds() // 60)

    def state(m: int) -> str | None:
        verdict = memory.verdict(config.error_rule, "p", "svc", hour_before(m, calls, errors, failed), USUAL,
                                 T0 + timedelta(minutes=m))
        return verdict.state if verdict is not None else None

    return tally(((m, state(m)) for m in range(60, end + AFTER + 1)), ONSET, end, clear_for)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pager.creep_pages", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--draws", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--before", action="store_true", help="an outage's minutes alone never page again")
    parser.add_argument("--ratios", action="store_true",
                        help="creeps to an absolute error ratio (2%% and 5%%) over 3 h, instead of 4x over 1 and 3 h")
    parser.add_argument("--outages", action="store_true",
                        help="outages (20%% for 30 min, 30%% for 12 min) at 4-30 calls a minute, instead of creeps")
    args = parser.parse_args(argv)
    print("| calls a minute | incident | paged | pages per paged incident | minutes to first page (median) |"
          " minutes from end to resolve | resolved before the end | minutes shown resolved while on (mean, max) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    cases = ([(r, 180, ratio) for r in (10, 30, 60) for ratio in (0.02, 0.05)] if args.ratios
             else [(r, m, ratio) for r in (4, 8, 16, 30) for m, ratio in ((30, 0.2), (12, 0.3))] if args.outages
             else [(r, m, 4 * USUAL) for r in (10, 30, 60) for m in (60, 180)])
    for rate, minutes, ratio in cases:
        rng = np.random.default_rng([args.seed, rate, minutes, int(ratio * 1000)])
        runs = [episode(rng, rate, minutes, _OutagesOnly() if args.before else ServiceMemory(), ratio)
                for _ in range(args.draws)]
        paged = [r for r in runs if r[0]]
        firsts = [r[1] for r in paged if r[1] is not None]
        resolves = [r[2] for r in paged if r[2] is not None]
        pages = [r[0] for r in paged]
        dark = [r[3] for r in paged]
        what = (f"{ratio:.0%}, {minutes // 60} h" if args.ratios else f"{ratio:.0%}, {minutes} min" if args.outages
                else f"{minutes // 60} h")
        print(f"| {rate} | {what} | {len(paged)}/{args.draws} | "
              f"{spread(pages)} (mean {statistics.fmean(pages) if pages else 0:.2f}) | "
              f"{statistics.median(firsts) if firsts else '–'} | {spread(resolves)} | "
              f"{sum(r < 0 for r in resolves)} | "
              f"{statistics.fmean(dark) if dark else 0:.1f}, {max(dark) if dark else 0} |")


if __name__ == "__main__":
    main()

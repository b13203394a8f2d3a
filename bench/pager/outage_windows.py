"""How the error-rate rule's outage test tells provider bursts from outages, on simulated windows.

    .venv/bin/python -m bench.pager.outage_windows         # 2,000 draws per case, three rules (~12 min)
    .venv/bin/python -m bench.pager.outage_windows --draws 300 --rules "" gap_alpha=0.05   # a quick look

Each draw is one service's last hour in 10-second buckets, made like the pager harness's traffic
(``traffic.py``): requests arrive as a Poisson stream, every LLM attempt fails with the
minute's error probability, and a failed attempt is retried (at most twice, 1-3 s later, 80% of
the time). The cases, at several request rates:

- **outage**: 20% or 30% of attempts fail from an onset on; the table gives the share of draws
  paged within 5 minutes of the onset (the target), within 8, and the median minute of
  the first page;
- **one burst**, **two bursts** 2-5 minutes apart (start to start, so some overlap) and **two
  bursts with 1-3 minutes between** (end to start), each 0.5-2.5 minutes with 30-90% failing, as
  the harness's provider bursts: the share of draws that paged in the 15 minutes after the first
  burst's start (each such page is a false page).

``ErrorRateRule.evaluate`` is called at the end of every minute exactly as the evaluator calls
it, with the usual ratio the service has (0.4%).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import numpy as np

from infersight.collector.alerts import BREACH, BUCKET_S, BUCKETS, ErrorRateRule, ServiceWindow

USUAL = 0.004
T0 = datetime(2026, 10, 7, 12, 0, 30, tzinfo=timezone.utc)
ONSET = 70  # minute of the onset: the hour before it is normal traffic
SPAN = 15  # minutes judged after the onset


def simulate(rng: np.random.Generator, per_minute: float, failing: Callable[[float], float],
            minutes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Calls, errors and failed requests per bucket over ``minutes``; ``failing(m)`` is the chance
    an attempt at minute ``m`` (fractional) fails."""
    n = minutes * 60 // BUCKET_S
    calls, errors, failed = np.zeros(n), np.zeros(n), np.zeros(n)
    arrivals = np.sort(rng.uniform(0, minutes * 60, rng.poisson(per_minute * minutes)))
    for t in arrivals:
        first_error = True
        for _attempt in range(3):
            b = int(t // BUCKET_S)
            if b >= n:
                break
            calls[b] += 1
            if rng.random() >= failing(t / 60):
                break
            errors[b] += 1
            if first_error:  # the request (its trace) counts once, where it first failed
                failed[b] += 1
                first_error = False
            if rng.random() < 0.2:
                break
            t += rng.uniform(1, 3)
    return calls, errors, failed


def hour_before(minute: int, calls: np.ndarray, errors: np.ndarray, failed: np.ndarray) -> ServiceWindow:
    """The window the evaluator reads at the end of ``minute``: the hour of buckets before it."""
    end = minute * 60 // BUCKET_S
    return ServiceWindow(calls[end - BUCKETS:end], errors[end - BUCKETS:end], errors[end - BUCKETS:end],
                         failed[end - BUCKETS:end])


def first_page(rule: ErrorRateRule, calls: np.ndarray, errors: np.ndarray, failed: np.ndarray) -> int | None:
    """Minutes after the onset of the first breach in the ``SPAN`` minutes after it (``None``: none)."""
    for m in range(ONSET + 1, ONSET + SPAN + 1):
        verdict = rule.evaluate("p", "svc", hour_before(m, calls, errors, failed), USUAL, T0 + timedelta(minutes=m))
        if verdict is not None and verdict.state == BREACH:
            return m - ONSET
    return None


def _outage(ratio: float) -> Callable[[np.random.Generator], Callable[[float], float]]:
    def make(_rng: np.random.Generator) -> Callable[[float], float]:
        return lambda m: ratio if m >= ONSET else USUAL
    return make


def _bursts(count: int) -> Callable[[np.random.Generator], Callable[[float], float]]:
    def make(rng: np.random.Generator) -> Callable[[float], float]:
        spans = []
        start = float(ONSET)
        for _ in range(count):
            spans.append((start, start + rng.uniform(0.5, 2.5), rng.uniform(0.3, 0.9)))
            start += rng.uniform(2, 5)
        return lambda m: max([p for a, b, p in spans if a <= m < b], default=USUAL)
    return make


def _gapped() -> Callable[[np.random.Generator], Callable[[float], float]]:
    def make(rng: np.random.Generator) -> Callable[[float], float]:
        a = ONSET + rng.uniform(0.5, 2.5)
        b = a + rng.uniform(1, 3)
        c = b + rng.uniform(0.5, 2.5)
        p, q = rng.uniform(0.3, 0.9, 2)
        return lambda m: p if ONSET <= m < a else q if b <= m < c else USUAL
    return make


CASES = {
    "outage 30%": _outage(0.3),
    "outage 20%": _outage(0.2),
    "one burst": _bursts(1),
    "two bursts 2-5 min apart": _bursts(2),
    "two bursts, 1-3 min between": _gapped(),
}
RATES = (4, 8, 16, 30)


def run(rules: dict[str, ErrorRateRule], draws: int, seed: int) -> list[str]:
    lines = ["| case | calls a minute | " + " | ".join(rules) + " |",
             "|---|---:|" + "---:|" * len(rules)]
    for case, make in CASES.items():
        for rate in RATES:
            cells = []
            pages: dict[str, list[int | None]] = {name: [] for name in rules}
            rng = np.random.default_rng([seed, rate, len(case)])
            for _ in range(draws):
                calls, errors, failed = simulate(rng, rate, make(rng), ONSET + SPAN)
                for name, rule in rules.items():
                    pages[name].append(first_page(rule, calls, errors, failed))
            for name in rules:
                got = pages[name]
                if case.startswith("outage"):
                    paged = [m for m in got if m is not None]
                    soon, later = sum(m <= 5 for m in paged) / draws, sum(m <= 8 for m in paged) / draws
                    median = statistics.median(paged) if paged else float("nan")
                    cells.append(f"{soon:.0%} / {later:.0%}, median {median:.0f} min")
                else:
                    cells.append(f"{sum(m is not None for m in got) / draws:.2%}")
            lines.append(f"| {case} | {rate} | " + " | ".join(cells) + " |")
    return lines


def _rule(spec: str) -> ErrorRateRule:
    """``"gap_alpha=0.05,burst_alpha=0.01"``: the rule with those parameters ("" the defaults)."""
    pairs = [item.split("=") for item in spec.split(",") if item]
    defaults = ErrorRateRule()
    return ErrorRateRule(**{k: type(getattr(defaults, k))(v) for k, v in pairs})  # burst_minutes=4 stays an int


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pager.outage_windows", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rules", nargs="*", default=["", "gap_alpha=0.05", "gap_alpha=0.5"],
                        help="ErrorRateRule parameters per column, e.g. gap_alpha=0.05 ('' the defaults)")
    args = parser.parse_args(argv)
    print("\n".join(run({spec or "defaults": _rule(spec) for spec in args.rules}, args.draws, args.seed)))


if __name__ == "__main__":
    main()

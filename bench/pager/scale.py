"""What one minute's evaluation costs at 1,000 tenants and 10M spans a week (the replay's
evaluator, alone in a fresh embedded store).

    .venv/bin/python -m bench.pager.scale                    # ~30 s: ~0.6M rows
    .venv/bin/python -m bench.pager.scale --tenants 50 --spans-per-week 100000   # a quick look
    .venv/bin/python -m bench.pager.scale --queue-baseline-minutes 140   # the day's queue lookback, in ratio

The rules read the last hour of spans every minute and, once an hour, the hour that just ended;
older hours only through the cost rule's in-memory hourly history (read once at start). So the
store holds the last four hours (and the 20 evaluated minutes) at full density (10M spans a week:
~1,000 a minute, 60% of them LLM calls, 1,000 Zipf tenants over 40 routes and 8 services) and,
before them, two weeks of hourly spend per tenant and route (one span per tenant and hour: what
the history query sums to), plus 100 queue replicas reporting every minute over the queue
rule's day of lookback, each redeployed once under a new instance id. Prints the start-up read
(``Evaluator.prepare``: the collector's alert job runs it half a minute before its first
evaluation), the first evaluation after it, the steady minutes and the minute after an hour
boundary.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from infersight.collector.alerts import Evaluator, EvaluatorConfig, QueueRule
from infersight.collector.store import ChdbStore, encode_rows

NOW = datetime(2026, 11, 18, 14, 50, 30, tzinfo=timezone.utc)
ROUTES, SERVICES = 40, 8


def history_rows(rng: np.random.Generator, tenants: int) -> bytes:
    weights = 1 / np.arange(1, tenants + 1) ** 1.1
    lines = []
    hour = (NOW - timedelta(days=15)).replace(minute=0, second=0, microsecond=0)
    end = (NOW - timedelta(hours=3)).replace(minute=0, second=0, microsecond=0)
    while hour < end:
        load = 0.2 + np.exp(-((hour.hour - 14) ** 2) / 18)
        costs = weights * 400 * load * rng.uniform(0.8, 1.2, tenants)
        for t in range(tenants):
            lines.append(f'{{"project":"big","ts":"{hour:%Y-%m-%d %H:%M:%S}","trace_id":"h{t}-{hour:%j%H}",'
                         f'"service":"s{t % SERVICES}","operation":"chat","tenant":"t{t}","route":"r{t % ROUTES}",'
                         f'"cost_usd":{costs[t]:.6f},"status":"ok"}}')
        hour += timedelta(hours=1)
    return ("\n".join(lines) + "\n").encode()


def recent_rows(rng: np.random.Generator, tenants: int, spans_per_minute: float) -> bytes:
    weights = 1 / np.arange(1, tenants + 1) ** 1.1
    start = (NOW - timedelta(hours=3)).replace(minute=0, second=0, microsecond=0)
    end = NOW + timedelta(minutes=20)  # traffic goes on through the evaluated minutes
    n = int(spans_per_minute * (end - start).total_seconds() / 60)
    at = rng.uniform(0, (end - start).total_seconds(), n)
    tenant = rng.choice(tenants, n, p=weights / weights.sum())
    llm = rng.random(n) < 0.6
    failed = rng.random(n) < 0.01
    lines = []
    for i in range(n):
        ts = start + timedelta(seconds=float(at[i]))
        t = int(tenant[i])
        lines.append(f'{{"project":"big","ts":"{ts:%Y-%m-%d %H:%M:%S.%f}","trace_id":"r{i // 3}",'
                     f'"service":"s{t % SERVICES}","operation":"{"chat" if llm[i] else "retrieval"}",'
                     f'"tenant":"t{t}","route":"r{t % ROUTES}","cost_usd":{0.004 if llm[i] else 0},'
                     f'"status":"{"error" if failed[i] else "ok"}"}}')
    return ("\n".join(lines) + "\n").encode()


def queue_rows(rng: np.random.Generator) -> list[dict[str, object]]:
    """100 queue series, one sample a minute over the queue rule's whole lookback (``forget_after``,
    a day) and the evaluated minutes: the rule reads every series seen in it each minute. Each
    replica is redeployed once in that day, its old process's last point marked ended and the
    new one reporting under a new instance id, so the day holds 200 series as a daily deploy makes."""
    rows: list[dict[str, object]] = []
    first = NOW - QueueRule().forget_after
    minutes = int((NOW + timedelta(minutes=20) - first).total_seconds() // 60)
    for s in range(100):
        deploy = int(rng.integers(60, minutes - 60))
        for m in range(minutes):
            ts = first + timedelta(minutes=m)
            rows.append({"project": "big", "service": f"s{s % SERVICES}", "queue": f"q{s % 10}",
                         "instance": f"i{s}@{int(m >= deploy)}", "instance_label": f"pod i{s}-{int(m >= deploy)}",
                         "ended": m == deploy - 1, "ts": f"{ts:%Y-%m-%d %H:%M:%S}", "depth": float((m * 37) % 50)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pager.scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--spans-per-week", type=float, default=10_000_000,
                        help="density of the last hours and the evaluated minutes")
    parser.add_argument("--queue-baseline-minutes", type=int, default=0,
                        help="also run, minute for minute in the same process, an evaluator whose queue rule"
                             " looks back only this many minutes, and print both steady medians")
    args = parser.parse_args(argv)
    spans_per_minute = args.spans_per_week / (7 * 1440)
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory(prefix="pager-scale-") as tmp:
        store = ChdbStore(Path(tmp) / "store", database="scale")
        try:
            t0 = time.perf_counter()
            store.insert("llm_spans", history_rows(rng, args.tenants))
            recent = recent_rows(rng, args.tenants, spans_per_minute)
            store.insert("llm_spans", recent)
            queue = queue_rows(rng)
            for i in range(0, len(queue), 50_000):
                store.insert("queue_depth", encode_rows(queue[i:i + 50_000]))
            spans = recent.count(b"\n")
            print(f"loaded in {time.perf_counter() - t0:.0f} s: {spans:,} spans at {spans_per_minute:,.0f} a minute "
                  f"around the evaluated minutes, 2 weeks of hourly history, {args.tenants} tenants, "
                  f"{len(queue):,} queue samples of 200 series over a day", flush=True)
            evaluator = Evaluator(store)
            t0 = time.perf_counter()
            evaluator.prepare(NOW - timedelta(seconds=30))
            prepared = time.perf_counter() - t0
            baseline = None
            if args.queue_baseline_minutes:
                # the same store and minutes, evaluated in turns (the first of each pair alternating): the
                # ratio of the two is what the queue rule's lookback costs, whatever the machine's load
                short = QueueRule(forget_after=timedelta(minutes=args.queue_baseline_minutes))
                baseline = Evaluator(store, config=EvaluatorConfig(queue_rule=short))
                baseline.prepare(NOW - timedelta(seconds=30))
            took, took_baseline = [], []
            for m in range(20):  # 14:50:30 .. 15:09:30: one hour boundary
                if baseline is not None and m % 2:
                    t0 = time.perf_counter()
                    baseline.run_once(NOW + timedelta(minutes=m))
                    took_baseline.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                result = evaluator.run_once(NOW + timedelta(minutes=m))
                took.append(time.perf_counter() - t0)
                if baseline is not None and not m % 2:
                    t0 = time.perf_counter()
                    baseline.run_once(NOW + timedelta(minutes=m))
                    took_baseline.append(time.perf_counter() - t0)
            steady = [t for i, t in enumerate(took) if i not in (0, 10)]
            print(f"start-up read (prepare: the hourly history, the usual error ratios): {prepared * 1000:,.0f} ms")
            print(f"first evaluation after it: {took[0] * 1000:,.0f} ms")
            print(f"steady minutes: median {statistics.median(steady) * 1000:,.0f} ms, "
                  f"max {max(steady) * 1000:,.0f} ms")
            print(f"first minute of a new hour (extends the history): {took[10] * 1000:,.0f} ms")
            print(f"verdicts at the last minute: {len(evaluator.verdicts(NOW + timedelta(minutes=19)))}; "
                  f"pages: {sum(1 for _ in result.active)}")
            if took_baseline:
                steady_baseline = [t for i, t in enumerate(took_baseline) if i not in (0, 10)]
                print(f"queue rule looking back {args.queue_baseline_minutes} min, in turns with the above: steady "
                      f"median {statistics.median(steady_baseline) * 1000:,.0f} ms; the day's lookback costs "
                      f"{statistics.median(steady) / statistics.median(steady_baseline):.2f}x it")
        finally:
            store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

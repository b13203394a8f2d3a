"""The pager simulation: weeks of realistic traffic in a real embedded store, the alert evaluator
replayed minute by minute over the final week, and a library of incidents.

    .venv/bin/python -m bench.pager                    # 5 seeds, scale 0.25, the whole final week
    .venv/bin/python -m bench.pager --seeds 1 --scale 0.001 --history-days 1 --from-minute 9360 --minutes 10
                                                       # a smoke run (seconds): the silent reporter's minutes
    .venv/bin/python -m bench.pager --first-seed 26    # seeds 26-30: traffic the rules were not tuned on

Per seed the store holds two projects with the same traffic (``n<seed>``: a normal week;
``i<seed>``: the same week with the incidents of ``incidents.LIBRARY``), so every seed's
normal week and incident week are replayed by the same evaluations. Prints the tables (and
writes them to ``--markdown``, the numbers to ``--json``): false pages per normal week, and per
incident whether it paged, minutes to the first page, pages, minutes from its end to the resolve.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from infersight.collector.alerts import ErrorRateRule, Evaluator, EvaluatorConfig
from infersight.collector.store import ChdbStore, Store, encode_rows

from . import incidents as pi
from . import scoring
from . import traffic as pt
from .traffic_b import SEEDS as SEEDS_B
from .traffic_b import TrafficB

GENERATORS: dict[str, type[pt.Traffic]] = {"a": pt.Traffic, "b": TrafficB}
"""The traffic shapes: ``traffic.py`` (the one the rules were tuned on) and ``traffic_b.py``."""


def load(store: Store, seeds: list[int], scale: float, log: Any, history_days: int = (pt.WEEKS - 1) * 7,
         generator: str = "a") -> int:
    """Write every seed's two projects into ``store``, the final week and the ``history_days``
    before it, in the shape of ``generator`` (see :data:`GENERATORS`); returns the number of
    spans written."""
    shape = GENERATORS[generator]
    columns = {r["name"] for r in store.query("SELECT name FROM system.columns WHERE table = 'queue_depth'"
                                               " AND database = currentDatabase()")}
    with_instance = "instance" in columns  # before per-instance queues, ingest dropped the instance
    spans = 0
    final_day = (pt.WEEKS - 1) * 7
    first_day = max(0, final_day - history_days)
    for seed in seeds:
        incident, normal = f"i{seed}", f"n{seed}"
        twins = {incident: shape(incident, seed, scale, pi.modifiers()), normal: shape(normal, seed, scale)}
        for day in range(first_day, pt.WEEKS * 7):
            chunk = twins[incident].day_rows(day)
            # The twins' days before the final week are the same rows (incidents are all in the
            # final week, and each day has its own random stream): generated once, written twice.
            other = (chunk.replace(f'"project":"{incident}"'.encode(), f'"project":"{normal}"'.encode())
                     if day < final_day else twins[normal].day_rows(day))
            for rows in (chunk, other):
                store.insert("llm_spans", rows)
                spans += rows.count(b"\n")
        for traffic in twins.values():
            rows = traffic.queue_rows(with_instance, first_minute=first_day * pt.MINUTES_PER_DAY)
            for i in range(0, len(rows), 50_000):
                store.insert("queue_depth", encode_rows(rows[i:i + 50_000]))
        log(f"  seed {seed}: written ({spans:,} spans so far)")
    return spans


def replay(evaluator: Evaluator, start: datetime, minutes: int, log: Any) -> list[float]:
    """``run_once`` at every minute from ``start``; the seconds each evaluation took."""
    took = []
    for m in range(minutes):
        t0 = time.perf_counter()
        evaluator.run_once(start + timedelta(minutes=m, seconds=30))
        took.append(time.perf_counter() - t0)
        if m and m % 1440 == 0:
            log(f"  day {m // 1440} replayed, median evaluation {statistics.median(took[-1440:]) * 1000:.0f} ms")
    return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pager", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--generator", choices=sorted(GENERATORS), default="a",
                        help=f"the traffic's shape: a (traffic.py) or b (traffic_b.py, seeds {SEEDS_B[0]}-"
                             f"{SEEDS_B[-1]} frozen)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=None,
                        help="seeds first-seed .. first-seed + seeds - 1 (default: 1 with generator a, "
                             f"{SEEDS_B[0]} with b)")
    parser.add_argument("--scale", type=float, default=0.25, help="traffic volume vs 1.6M spans/week")
    parser.add_argument("--minutes", type=int, default=7 * 1440, help="minutes of the final week to replay")
    parser.add_argument("--from-minute", type=int, default=0,
                        help="start the replay this many minutes into the final week (one incident's day, say)")
    parser.add_argument("--history-days", type=int, default=(pt.WEEKS - 1) * 7,
                        help="days of traffic before the final week (fewer: a quicker load, cost rules without"
                             " their baselines)")
    parser.add_argument("--data-dir", type=Path, help="store here (default: a temporary directory)")
    parser.add_argument("--markdown", type=Path, help="also write the tables here")
    parser.add_argument("--json", type=Path, help="also write the scored numbers here, as JSON")
    parser.add_argument("--load-only", action="store_true", help="write the traffic into --data-dir and stop")
    parser.add_argument("--replay-only", action="store_true", help="replay over traffic already in --data-dir")
    parser.add_argument("--score-only", action="store_true", help="only the tables of a replay done in --data-dir")
    parser.add_argument("--outage-burst-minutes", type=int, default=ErrorRateRule().burst_minutes,
                        help="the collector's setting of that name: minutes a provider burst may take")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    first_seed = args.first_seed if args.first_seed is not None else (SEEDS_B[0] if args.generator == "b" else 1)
    seeds = list(range(first_seed, first_seed + args.seeds))
    with tempfile.TemporaryDirectory(prefix="pager-") as tmp:
        store = ChdbStore(args.data_dir or Path(tmp) / "store", database="pager")
        try:
            t0 = time.perf_counter()
            if args.replay_only or args.score_only:
                spans = int(store.query("SELECT count() AS n FROM llm_spans")[0]["n"])
            else:
                spans = load(store, seeds, args.scale, log, args.history_days, args.generator)
                log(f"loaded {spans:,} spans in {time.perf_counter() - t0:.0f} s")
            if args.load_only:
                return 0
            took: list[float] = []
            if not args.score_only:
                for table in ("alerts", "alert_events"):  # a replay starts with no alert history
                    store.query(f"TRUNCATE TABLE {table}")
                config = EvaluatorConfig(error_rule=ErrorRateRule(burst_minutes=args.outage_burst_minutes))
                evaluator = Evaluator(store, config=config)
                t0 = time.perf_counter()
                took = replay(evaluator, pi.FINAL + timedelta(minutes=args.from_minute), args.minutes, log)
                log(f"replayed {args.minutes} minutes in {time.perf_counter() - t0:.0f} s")
            report = scoring.judge(seeds, scoring.events(store), scoring.void_incidents(store, seeds))
            text = scoring.tables(report, took)
        finally:
            store.close()
    header = (f"Generator {args.generator}, seeds {seeds[0]}-{seeds[-1]}: {spans:,} spans over the final week and"
              f" {args.history_days} days before it, {2 * len(seeds)}"
              f" projects (scale {args.scale}: "
              f"{pt.SPANS_PER_WEEK * args.scale:,.0f} spans a week per project); {args.minutes:,} minutes replayed"
              f"; {args.outage_burst_minutes} minutes for a burst.\n")
    print(header + "\n" + text)
    if args.markdown:
        args.markdown.write_text(header + "\n" + text + "\n")
    if args.json:
        args.json.write_text(json.dumps({"spans": spans, "scale": args.scale, "minutes": args.minutes,
                                         "outage_burst_minutes": args.outage_burst_minutes,
                                         **report.as_dict()}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

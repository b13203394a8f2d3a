"""The pager benchmark: weeks of realistic traffic in a real embedded store, the alert evaluator
replayed minute by minute over the final week, and a library of incidents.

    .venv/bin/python bench/pager.py                    # 5 seeds, scale 0.25, the whole final week
    .venv/bin/python bench/pager.py --seeds 1 --minutes 30 --scale 0.02   # a smoke run
    .venv/bin/python bench/pager.py --first-seed 6     # seeds 6-10: traffic the rules were not tuned on

Per seed the store holds two projects with the same traffic (``n<seed>``: a normal week;
``i<seed>``: the same week with the incidents of ``pager_incidents.LIBRARY``), so every seed's
normal week and incident week are replayed by the same evaluations. Prints the tables (and
writes them to ``--markdown``): false pages per normal week, and per incident whether it paged,
minutes to the first page, pages, minutes from its end to the resolve.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Collection
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pager_incidents as pi
import pager_traffic as pt

from infersight.collector.alerts import CostRule, Evaluator, EvaluatorConfig
from infersight.collector.store import ChdbStore, Store, encode_rows


def load(store: Store, seeds: list[int], scale: float, log: Any) -> int:
    """Write every seed's two projects into ``store``; returns the number of spans written."""
    columns = {r["name"] for r in store.query("SELECT name FROM system.columns WHERE table = 'queue_depth'"
                                               " AND database = currentDatabase()")}
    with_instance = "instance" in columns  # before per-instance queues, ingest dropped the instance
    spans = 0
    final_day = (pt.WEEKS - 1) * 7
    for seed in seeds:
        incident, normal = f"i{seed}", f"n{seed}"
        twins = {incident: pt.Traffic(incident, seed, scale, pi.modifiers()), normal: pt.Traffic(normal, seed, scale)}
        for day in range(pt.WEEKS * 7):
            chunk = twins[incident].day_rows(day)
            # The twins' days before the final week are the same rows (incidents are all in the
            # final week, and each day has its own random stream): generated once, written twice.
            other = (chunk.replace(f'"project":"{incident}"'.encode(), f'"project":"{normal}"'.encode())
                     if day < final_day else twins[normal].day_rows(day))
            for rows in (chunk, other):
                store.insert("llm_spans", rows)
                spans += rows.count(b"\n")
        for traffic in twins.values():
            rows = traffic.queue_rows(with_instance)
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


def events(store: Store) -> dict[str, list[dict[str, Any]]]:
    rows = store.query("SELECT project, toString(ts) AS at, fingerprint, name, event, labels FROM alert_events"
                       " ORDER BY ts, event")
    out: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        row["at"] = datetime.fromisoformat(row["at"]).replace(tzinfo=timezone.utc)
        out.setdefault(row["project"], []).append(row)
    return out


VOID_USD = CostRule().min_excess_usd  # an incident that added less is void (see void_incidents)


def void_incidents(store: Store, seeds: list[int]) -> set[tuple[int, str]]:
    """(seed, incident) pairs of tenant cost incidents that did not happen: a tenant's costs
    tripled in an hour of its night add under the cost rule's ``min_excess_usd`` (a small tenant
    far from UTC may spend nothing then), which no rule should page on."""
    out = set()
    for inc in (i for i in pi.LIBRARY if i.name.startswith("tenant cost") and i.end is not None):
        rows = store.query(
            "SELECT project, sum(ifNull(cost_usd, 0)) AS usd FROM llm_spans"
            " WHERE has({projects:Array(String)}, project) AND tenant = {tenant:String}"
            " AND ts >= {start:DateTime64(3)} AND ts < {end:DateTime64(3)} GROUP BY project",
            {"projects": [f"{twin}{seed}" for seed in seeds for twin in "in"], "tenant": inc.target,
             "start": f"{inc.onset:%Y-%m-%d %H:%M:%S}", "end": f"{inc.end:%Y-%m-%d %H:%M:%S}"})
        spent = {r["project"]: float(r["usd"]) for r in rows}
        out |= {(seed, inc.name) for seed in seeds
                if spent.get(f"i{seed}", 0.0) - spent.get(f"n{seed}", 0.0) < VOID_USD}
    return out


def _fmt(values: list[float | None], digits: int = 0) -> str:
    got = [v for v in values if v is not None]
    if not got:
        return "–"
    lo, hi = min(got), max(got)
    return f"{lo:.{digits}f}" if lo == hi else f"{lo:.{digits}f}–{hi:.{digits}f}"


def tables(seeds: list[int], by_project: dict[str, list[dict[str, Any]]], run_end: datetime,
           took: list[float], void: Collection[tuple[int, str]] = ()) -> str:
    """The tables; an incident of a seed in ``void`` (see :func:`void_incidents`) is left out
    of its row, which says how many seeds that was and how many of them paged all the same."""
    out = ["| seed | false pages, normal week | what paged | false pages, incident week |"
           " burst outages (pages, normal / incident week) |",
           "|---:|---:|---|---:|---|"]
    outcomes: dict[str, list[pi.Outcome]] = {inc.name: [] for inc in pi.LIBRARY}
    void_paged: dict[str, int] = {}
    for seed in seeds:
        outages = pi.burst_outages(seed)
        normal_outages, normal = _apart([e for e in by_project.get(f"n{seed}", []) if e["event"] == "firing"],
                                        outages)
        what = ", ".join(sorted({f"{e['name']} {_target(e['labels'])}" for e in normal})) or ""
        results, unexplained = pi.score(by_project.get(f"i{seed}", []), run_end)
        incident_outages, unexplained = _apart(unexplained, outages)
        burst = (", ".join(f"{s} {a:%a %H:%M} {(b - a).seconds // 60} min" for s, a, b in outages)
                 + f" ({len(normal_outages)} / {len(incident_outages)})") if outages else ""
        for r in results:
            if (seed, r.incident.name) in void:
                void_paged[r.incident.name] = void_paged.get(r.incident.name, 0) + bool(r.pages)
            else:
                outcomes.setdefault(r.incident.name, []).append(r)
        out.append(f"| {seed} | {len(normal)} | {what[:200]} | {len(unexplained)} | {burst} |")
    out += ["", f"Per incident, over {len(seeds)} seeds (range across seeds):", "",
            "| incident | paged (seeds) | minutes to first page | pages per incident | minutes from end to resolve |",
            "|---|---:|---:|---:|---:|"]
    for inc in pi.LIBRARY:
        name, results = inc.name, outcomes[inc.name]
        if skipped := sum((seed, name) in void for seed in seeds):
            name += (f" ({skipped} of {len(seeds)} seeds void: the incident added under"
                     f" ${VOID_USD}; {void_paged.get(inc.name, 0)} of them paged)")
        paged = sum(1 for r in results if r.pages)
        if inc.real:
            resolve = _fmt([r.resolve_min for r in results])
            if inc.end is None:
                resolve = f"still firing at the end in {sum(r.still_firing for r in results)}/{len(results)}"
            elif any(r.still_firing for r in results):
                resolve += f" (unresolved in {sum(r.still_firing for r in results)})"
            out.append(f"| {name} | {paged}/{len(results)} | {_fmt([r.first_page_min for r in results])} | "
                       f"{_fmt([float(r.pages) for r in results if r.pages])} | {resolve} |")
        else:
            out.append(f"| {name} (must not page) | {paged}/{len(results)} | – | "
                       f"{_fmt([float(r.pages) for r in results])} | – |")
    if took:
        out += ["", f"Evaluation time per minute: median {statistics.median(took) * 1000:.0f} ms, "
                f"p99 {sorted(took)[int(len(took) * 0.99)] * 1000:.0f} ms, max {max(took) * 1000:.0f} ms "
                f"({len(took):,} evaluations over {2 * len(seeds)} projects)."]
    return "\n".join(out)


def _apart(pages: list[dict[str, Any]], outages: list[tuple[str, datetime, datetime]]
           ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``pages`` on the seed's burst outages (see ``pager_incidents.burst_outages``), and the rest."""
    on = [pi.on_burst_outage(e, outages) for e in pages]
    return [e for e, o in zip(pages, on, strict=True) if o], [e for e, o in zip(pages, on, strict=True) if not o]


def _target(labels: dict[str, str]) -> str:
    keys = ("service", "instance", "queue", "tenant", "route")
    return "/".join(labels[k] for k in keys if labels.get(k))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=1,
                        help="seeds first-seed .. first-seed + seeds - 1 (6 with 5 seeds: the held-out ones)")
    parser.add_argument("--scale", type=float, default=0.25, help="traffic volume vs 1.6M spans/week")
    parser.add_argument("--minutes", type=int, default=7 * 1440, help="minutes of the final week to replay")
    parser.add_argument("--from-minute", type=int, default=0,
                        help="start the replay this many minutes into the final week (one incident's day, say)")
    parser.add_argument("--data-dir", type=Path, help="store here (default: a temporary directory)")
    parser.add_argument("--markdown", type=Path, help="also write the tables here")
    parser.add_argument("--load-only", action="store_true", help="write the traffic into --data-dir and stop")
    parser.add_argument("--replay-only", action="store_true", help="replay over traffic already in --data-dir")
    parser.add_argument("--score-only", action="store_true", help="only the tables of a replay done in --data-dir")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    with tempfile.TemporaryDirectory(prefix="pager-") as tmp:
        store = ChdbStore(args.data_dir or Path(tmp) / "store", database="pager")
        try:
            t0 = time.perf_counter()
            if args.replay_only or args.score_only:
                spans = int(store.query("SELECT count() AS n FROM llm_spans")[0]["n"])
            else:
                spans = load(store, seeds, args.scale, log)
                log(f"loaded {spans:,} spans in {time.perf_counter() - t0:.0f} s")
            if args.load_only:
                return 0
            took: list[float] = []
            if not args.score_only:
                for table in ("alerts", "alert_events"):  # a replay starts with no alert history
                    store.query(f"TRUNCATE TABLE {table}")
                evaluator = Evaluator(store, config=EvaluatorConfig())
                t0 = time.perf_counter()
                took = replay(evaluator, pi.FINAL + timedelta(minutes=args.from_minute), args.minutes, log)
                log(f"replayed {args.minutes} minutes in {time.perf_counter() - t0:.0f} s")
            run_end = pi.FINAL + timedelta(minutes=args.from_minute + args.minutes)
            text = tables(seeds, events(store), run_end, took, void_incidents(store, seeds))
        finally:
            store.close()
    header = (f"{spans:,} spans over {pt.WEEKS} weeks and {2 * len(seeds)} projects (scale {args.scale}: "
              f"{pt.SPANS_PER_WEEK * args.scale:,.0f} spans a week per project); {args.minutes:,} minutes replayed.\n")
    print(header + "\n" + text)
    if args.markdown:
        args.markdown.write_text(header + "\n" + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

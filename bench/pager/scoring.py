"""Scoring a replay: each incident's pages and resolves, false pages per week, the tables.

The evaluator writes its pages to ``alert_events``; :func:`events` reads them back per project,
:func:`judge` attributes them (see ``incidents.Incident.matches``), :func:`tables` renders the
markdown that BENCHMARKS.md quotes, and :func:`Report.as_dict` the same numbers as JSON.
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from infersight.collector.alerts import BREACH, CLEAR, CostRule
from infersight.collector.store import Store

from . import incidents as pi

VOID_USD = CostRule().min_excess_usd  # an incident that added less is void (see void_incidents)


@dataclass
class Outcome:
    incident: pi.Incident
    pages: int
    first_page_min: float | None
    resolve_min: float | None  # after the end; None: not resolved by the end of the run
    still_firing: bool


def tally(states: Iterable[tuple[int, str | None]], onset: int, end: int, clear_for: int
          ) -> tuple[int, int | None, int | None, int]:
    """One simulated incident from its rule's state each minute (``BREACH``, ``CLEAR`` or ``None``),
    as the evaluator would page it (firing on a breach, resolved after ``clear_for`` clear minutes):
    pages, minutes from ``onset`` to the first, minutes from ``end`` to the last resolve (``None``:
    not paged, or still firing at the last minute), and the incident's minutes after its first
    page that were shown resolved."""
    firing, clear_run, pages, first, resolved, dark = False, 0, 0, None, None, 0
    for m, state in states:
        clear_run = clear_run + 1 if state == CLEAR else 0
        if state == BREACH and not firing:
            firing, pages = True, pages + 1
            first = m - onset if first is None else first
        elif firing and clear_run >= clear_for:
            firing, resolved = False, m - end
        dark += int(first is not None and not firing and m < end)
    return pages, first, None if firing else resolved, dark


def spread(values: list[int]) -> str:
    """``min–max`` of a table cell's draws."""
    return f"{min(values)}–{max(values)}" if values else "–"


def score(events: list[dict[str, Any]], library: tuple[pi.Incident, ...] = pi.LIBRARY
          ) -> tuple[list[Outcome], list[dict[str, Any]]]:
    """Per incident its outcome, and the firing events no incident explains (false pages).

    ``events``: the project's ``alert_events`` rows as dicts with ``at`` (datetime), ``event``,
    ``name``, ``labels``, ``fingerprint``.
    """
    firing = [e for e in events if e["event"] == "firing"]
    claimed: dict[int, pi.Incident] = {}
    for i, e in enumerate(firing):
        for inc in library:
            if inc.matches(e["name"], e["labels"], e["at"]):
                claimed[i] = inc
                break
    outcomes = []
    for inc in library:
        mine = [e for i, e in enumerate(firing) if claimed.get(i) is inc]
        # each page's own resolve: the first one of its fingerprint after it fired
        resolves = [next((r["at"] for r in events if r["event"] == "resolved"
                          and r["fingerprint"] == e["fingerprint"] and r["at"] >= e["at"]), None) for e in mine]
        still = any(r is None for r in resolves)
        resolve_min = None
        if mine and not still and inc.end is not None:
            resolve_min = (max(r for r in resolves if r is not None) - inc.end).total_seconds() / 60
        first = (min(e["at"] for e in mine) - inc.onset).total_seconds() / 60 if mine else None
        outcomes.append(Outcome(inc, len(mine), first, resolve_min, still))
    unexplained = [e for i, e in enumerate(firing) if i not in claimed]
    return outcomes, unexplained


def events(store: Store) -> dict[str, list[dict[str, Any]]]:
    """Every ``alert_events`` row of the store, per project, oldest first."""
    rows = store.query("SELECT project, toString(ts) AS at, fingerprint, name, event, labels FROM alert_events"
                       " ORDER BY ts, event")
    out: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        row["at"] = datetime.fromisoformat(row["at"]).replace(tzinfo=timezone.utc)
        out.setdefault(row["project"], []).append(row)
    return out


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


@dataclass
class SeedResult:
    """One seed's week twice: false pages of its normal week and of its incident week, and the
    pages on outages that provider bursts made by chance (scored apart from both)."""

    seed: int
    normal_false: list[dict[str, Any]]
    incident_false: list[dict[str, Any]]
    burst_outages: list[tuple[str, datetime, datetime]]
    normal_burst_pages: int
    incident_burst_pages: int


@dataclass
class Report:
    seeds: list[SeedResult]
    outcomes: dict[str, list[Outcome]]  # incident name -> its outcome in each seed where it is not void
    void_seeds: dict[str, int] = field(default_factory=dict)  # incident name -> seeds where it was void
    void_paged: dict[str, int] = field(default_factory=dict)  # ... and of those, how many paged anyway

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (``replay --json``)."""
        return {
            "seeds": [{"seed": s.seed, "false_pages_normal_week": len(s.normal_false),
                       "false_pages_incident_week": len(s.incident_false),
                       "what_paged_normal_week": sorted(_what(s.normal_false)),
                       "burst_outages": len(s.burst_outages),
                       "burst_outage_pages": [s.normal_burst_pages, s.incident_burst_pages]} for s in self.seeds],
            "incidents": [{"name": inc.name, "must_page": inc.real,
                           "seeds": len(self.outcomes[inc.name]),
                           "paged": sum(1 for o in self.outcomes[inc.name] if o.pages),
                           "void_seeds": self.void_seeds.get(inc.name, 0),
                           "first_page_min": [o.first_page_min for o in self.outcomes[inc.name]],
                           "pages": [o.pages for o in self.outcomes[inc.name]],
                           "resolve_min": [o.resolve_min for o in self.outcomes[inc.name]],
                           "still_firing": [o.still_firing for o in self.outcomes[inc.name]]}
                          for inc in pi.LIBRARY],
        }


def judge(seeds: list[int], by_project: dict[str, list[dict[str, Any]]],
          void: Collection[tuple[int, str]] = ()) -> Report:
    """Every seed's pages attributed; an incident of a seed in ``void`` (see :func:`void_incidents`)
    is left out of its outcomes and counted apart."""
    report = Report([], {inc.name: [] for inc in pi.LIBRARY})
    for seed in seeds:
        outages = pi.burst_outages(seed)
        normal_outages, normal = _apart([e for e in by_project.get(f"n{seed}", []) if e["event"] == "firing"],
                                        outages)
        results, unexplained = score(by_project.get(f"i{seed}", []))
        incident_outages, unexplained = _apart(unexplained, outages)
        for r in results:
            if (seed, r.incident.name) in void:
                report.void_seeds[r.incident.name] = report.void_seeds.get(r.incident.name, 0) + 1
                report.void_paged[r.incident.name] = report.void_paged.get(r.incident.name, 0) + bool(r.pages)
            else:
                report.outcomes[r.incident.name].append(r)
        report.seeds.append(SeedResult(seed, normal, unexplained, outages, len(normal_outages),
                                       len(incident_outages)))
    return report


def tables(report: Report, took: list[float]) -> str:
    """The markdown tables: per seed, per incident, and the evaluation time."""
    out = ["| seed | false pages, normal week | what paged | false pages, incident week |"
           " burst outages (pages, normal / incident week) |",
           "|---:|---:|---|---:|---|"]
    for s in report.seeds:
        what = ", ".join(sorted(_what(s.normal_false)))
        burst = (", ".join(f"{svc} {a:%a %H:%M} {(b - a).seconds // 60} min" for svc, a, b in s.burst_outages)
                 + f" ({s.normal_burst_pages} / {s.incident_burst_pages})") if s.burst_outages else ""
        out.append(f"| {s.seed} | {len(s.normal_false)} | {what[:200]} | {len(s.incident_false)} | {burst} |")
    out += ["", f"Per incident, over {len(report.seeds)} seeds (range across seeds):", "",
            "| incident | paged (seeds) | minutes to first page | pages per incident | minutes from end to resolve |",
            "|---|---:|---:|---:|---:|"]
    for inc in pi.LIBRARY:
        name, results = inc.name, report.outcomes[inc.name]
        if skipped := report.void_seeds.get(inc.name, 0):
            name += (f" ({skipped} of {len(report.seeds)} seeds void: the incident added under"
                     f" ${VOID_USD}; {report.void_paged.get(inc.name, 0)} of them paged)")
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
                f"({len(took):,} evaluations over {2 * len(report.seeds)} projects)."]
    return "\n".join(out)


def _what(pages: list[dict[str, Any]]) -> set[str]:
    return {f"{e['name']} {_target(e['labels'])}" for e in pages}


def _fmt(values: list[float | None], digits: int = 0) -> str:
    got = [v for v in values if v is not None]
    if not got:
        return "–"
    lo, hi = min(got), max(got)
    return f"{lo:.{digits}f}" if lo == hi else f"{lo:.{digits}f}–{hi:.{digits}f}"


def _apart(pages: list[dict[str, Any]], outages: list[tuple[str, datetime, datetime]]
           ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``pages`` on the seed's burst outages (see ``incidents.burst_outages``), and the rest."""
    on = [pi.on_burst_outage(e, outages) for e in pages]
    return [e for e, o in zip(pages, on, strict=True) if o], [e for e, o in zip(pages, on, strict=True) if not o]


def _target(labels: dict[str, str]) -> str:
    keys = ("service", "instance", "queue", "tenant", "route")
    return "/".join(labels[k] for k in keys if labels.get(k))

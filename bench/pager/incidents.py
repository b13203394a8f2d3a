"""The pager simulation's incident library: what each incident does to the traffic, and which
pages belong to it.

Every incident happens in the final week of an "incident" project whose traffic is otherwise the
same (same seed) as its "normal" twin. A page (a ``firing`` event) belongs to an incident when it
is of the incident's family, matches its target (the service, the queue's instance, the tenant
or route), and fires between its onset and two hours after its end (:meth:`Incident.matches`);
any other page is a false page (``scoring.py`` counts them).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from . import traffic as pt

FINAL = pt.START + timedelta(weeks=pt.WEEKS - 1)
ERROR_ALERTS = ("ErrorRateSpike",)
QUEUE_ALERTS = ("QueueNotDraining", "QueueStoppedReporting")
COST_ALERTS = ("CostAnomaly",)
ATTRIBUTION = timedelta(hours=2)


@dataclass(frozen=True)
class Incident:
    name: str
    family: tuple[str, ...]
    target: str  # service, instance, tenant or route
    day: int  # of the final week, 0 = Monday
    hour: float
    minutes: int  # 0: lasts to the end of the run
    factor: float = 0.0
    real: bool = True  # False: something that must NOT page

    @property
    def onset(self) -> datetime:
        return FINAL + timedelta(days=self.day, hours=self.hour)

    @property
    def end(self) -> datetime | None:
        return self.onset + timedelta(minutes=self.minutes) if self.minutes else None

    def minute_range(self) -> slice:
        first = int((self.onset - pt.START).total_seconds() // 60)
        return slice(first, first + self.minutes if self.minutes else pt.total_minutes())

    def matches(self, name: str, labels: dict[str, str], at: datetime) -> bool:
        last = self.end + ATTRIBUTION if self.end is not None else at  # no end: to the end of the run
        if name not in self.family or not self.onset <= at <= last:
            return False
        if self.family is ERROR_ALERTS:
            return labels.get("service") == self.target
        if self.family is QUEUE_ALERTS:  # before the per-instance series, labels had no instance
            # traffic_b names a replica's process worker-<slot>@<id>, new at every deploy
            return labels.get("instance", self.target).split("@")[0] == self.target
        # cost: the tenant's or route's own page; another key paging in the window is a false page
        return self.target in (labels.get("tenant"), labels.get("route"))


LIBRARY = (
    Incident("error outage 30%, 6 min", ERROR_ALERTS, "chat-api", 0, 10, 6, 0.30),
    Incident("error outage 30%, 12 min", ERROR_ALERTS, "search-assist", 1, 14, 12, 0.30),
    Incident("error outage 20%, 30 min", ERROR_ALERTS, "chat-api", 2, 20, 30, 0.20),
    Incident("error creep 4x, 1 h", ERROR_ALERTS, "chat-api", 3, 9, 60, 4.0),
    Incident("error creep 4x, 3 h", ERROR_ALERTS, "agent-runner", 4, 13, 180, 4.0),
    Incident("stalled consumer, 1 of 3 replicas, 40 min", QUEUE_ALERTS, "worker-1", 0, 15, 40),
    Incident("dying consumers (10 min), dead 30 min", QUEUE_ALERTS, "worker-2", 2, 11, 40),
    Incident("queue reporter silent for good", QUEUE_ALERTS, "worker-0", 6, 12, 0),
    Incident("tenant cost 3x, 1 h (large tenant t01)", COST_ALERTS, "t01", 1, 11, 60, 3.0),
    Incident("tenant cost 3x, 1 h (small tenant t22)", COST_ALERTS, "t22", 3, 15, 60, 3.0),
    Incident("10x pricier model on docs.summarize, all tenants, 2 h", COST_ALERTS, "docs.summarize", 4, 10, 120,
             10.0),
    Incident("runaway agent loop in one trace, 2x its tenant's spend, 3 h (t02)", COST_ALERTS, "t02", 2, 13, 180, 2.0),
    Incident("runaway agent loop in one trace, 3x its tenant's spend, 3 h (t05)", COST_ALERTS, "t05", 5, 9, 180, 3.0),
    Incident("one long agent session, 45 min (t08)", COST_ALERTS, "t08", 5, 14, 45, 0.0, real=False),
)


def burst_outages(seed: int, ratio: float = 0.2, minutes: int = 5) -> list[tuple[str, datetime, datetime]]:
    """(service, start, end) of the final week's outages that provider bursts made by chance:
    bursts that overlap or follow each other keep a provider failing ``ratio`` or more for
    ``minutes`` or longer, an outage by the pager's own target (it must page within 5 minutes),
    on every service of that provider. The same in both twins: bursts are drawn from the seed."""
    bursts = pt.Traffic("", seed, 1.0).bursts
    first = int((FINAL - pt.START).total_seconds() // 60)
    out = []
    for provider, floor in bursts.items():
        failing = np.append(floor[first:] >= ratio, False)
        edges = np.flatnonzero(np.diff(np.concatenate(([0], failing.astype(int)))))
        for start, end in zip(edges[::2], edges[1::2], strict=True):
            if end - start >= minutes:
                at = FINAL + timedelta(minutes=int(start))
                out += [(service, at, at + timedelta(minutes=int(end - start)))
                        for service, spec in pt.SERVICES.items() if spec[0] == provider]
    return out


def on_burst_outage(event: dict[str, Any], outages: list[tuple[str, datetime, datetime]]) -> bool:
    """Whether an error page is for one of ``outages``: of its service, from its start to two
    hours after its end (as an incident's)."""
    return event["name"] in ERROR_ALERTS and any(
        event["labels"].get("service") == service and start <= event["at"] <= end + ATTRIBUTION
        for service, start, end in outages)


def modifiers(library: tuple[Incident, ...] = LIBRARY) -> pt.Modifiers:
    """What the incidents do to the incident project's traffic."""
    n = pt.total_minutes()
    mods = pt.Modifiers()
    pt.PRICES.setdefault("claude-opus", (30.0, 150.0))  # 10x claude-sonnet
    for inc in library:
        window = inc.minute_range()
        if inc.name.startswith("error outage"):
            mods.error_floor.setdefault(inc.target, np.zeros(n))[window] = inc.factor
        elif inc.name.startswith("error creep"):
            mods.error_factor.setdefault(inc.target, np.ones(n))[window] = inc.factor
        elif inc.name.startswith("stalled"):
            mods.queue_capacity.setdefault(inc.target, np.ones(n))[window] = 0.0
        elif inc.name.startswith("dying"):
            capacity = mods.queue_capacity.setdefault(inc.target, np.ones(n))
            capacity[window] = 0.0
            capacity[window.start:window.start + 10] = np.linspace(0.9, 0.0, 10)  # a consumer dies every 2.5 min
        elif inc.name.startswith("queue reporter"):
            mods.queue_silent_from[inc.target] = window.start
        elif inc.name.startswith("tenant cost"):
            mods.tenant_cost.setdefault(inc.target, np.ones(n))[window] = inc.factor
        elif inc.name.startswith("10x pricier"):
            mask = np.zeros(n, dtype=bool)
            mask[window] = True
            mods.route_model[inc.target] = (mask, "claude-opus")
        elif inc.name.startswith("runaway agent loop"):
            mods.runaways.append((inc.target, window.start, inc.minutes, inc.factor))
        elif inc.name.startswith("one long agent session"):
            mods.heavy_sessions.append((inc.target, window.start, inc.minutes, 225))  # as dense as it was for 2 h
    return mods

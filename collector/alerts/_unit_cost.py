"""What one request of a tenant or route usually costs, so a small key's tripled cost per request
is seen even when its hourly spend swings several-fold with the number of sessions.

A request is a trace (untraced calls count one each); its *unit cost* is the mean log cost of its
priced calls. Routes differ by orders of magnitude (a summary on a dear model against a query
rewrite), so a trace is measured against its route's level: the residual is its unit cost less
the route's mean unit cost over the last week. Each key (tenant or route) has a usual residual
(mean) and spread (variance across its traces) over the last week; the last hour's traces are
tested against them: z = (their mean residual - usual) / sqrt(spread / traces).

Spend that rose because calls got dearer (a prompt that tripled, a pricier model) shifts every
trace; spend that rose because a few more sessions came does not. Sessions are the unit, so one
conversation's correlated calls are one observation, not many.

The week's sums are kept per (tenant, route) pair and hour in arrays, extended hour by hour like
the hourly spend, so learning and testing cost a few vectorised passes, not a scan of the week.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

Pair = tuple[str, str, str]  # project, tenant, route
Key = tuple[str, str, str]  # project, dimension (tenant | route), value
Window = tuple[Pair, float, float, float, float]  # pair, traces and sum of unit costs: the hour, the recent minutes
RECENT = 10
"""Minutes: the window that says whether a shift (of spend or of cost per request) is still going on."""
WEEK = timedelta(days=7)
"""The span a key's usual cost per request is learnt over."""
MIN_TRACES_NOW = 5
"""Fewer priced traces in the last hour: no verdict (the normal approximation needs a few)."""
MIN_TRACES_WEEK = 20
"""Fewer priced traces over :data:`WEEK`: no usual cost per request yet."""


@dataclass(frozen=True, slots=True)
class UnitShift:
    """A key's last hour against its usual cost per request: ``z`` (how far beyond chance),
    ``ratio`` (how many times its usual a request cost, the geometric mean), ``recent`` (the
    same over the last :data:`RECENT` minutes; ``None``: no request in them) and ``recent_z``
    (the z of those minutes alone: a shift that began minutes ago is plain there, diluted in the
    hour)."""

    z: float
    ratio: float
    recent: float | None
    recent_z: float = 0.0


class UnitCosts:
    """Per (tenant, route) pair and hour: traces, sum and sum of squares of their unit costs."""

    def __init__(self) -> None:
        self._ids: dict[Pair, int] = {}
        self._hours: dict[datetime, tuple[np.ndarray, np.ndarray]] = {}  # hour -> (pair ids, [k, s, q] rows)
        self._week = np.zeros((0, 3))
        self._level: dict[tuple[str, str], float] = {}
        self._usual: dict[Key, tuple[float, float]] = {}

    def set_hour(self, hour: datetime, rows: Mapping[Pair, tuple[float, float, float]]) -> None:
        """Replace one hour's sums (hours are re-read while late spans arrive)."""
        self.drop_hour(hour)
        for pair in rows:
            self._ids.setdefault(pair, len(self._ids))
        if len(self._ids) > len(self._week):
            self._week = np.vstack([self._week, np.zeros((len(self._ids) - len(self._week), 3))])
        ids = np.fromiter((self._ids[p] for p in rows), dtype=np.int64, count=len(rows))
        sums = np.asarray(list(rows.values()), dtype=float).reshape(-1, 3)
        self._hours[hour] = (ids, sums)
        np.add.at(self._week, ids, sums)

    def drop_hour(self, hour: datetime) -> None:
        if hour in self._hours:
            ids, sums = self._hours.pop(hour)
            np.subtract.at(self._week, ids, sums)

    def __len__(self) -> int:
        """The pairs kept: those with a priced trace in the hours kept."""
        return len(self._ids)

    def keep_week(self, until: datetime) -> None:
        """Drop the hours before the week to ``until``, and forget the pairs left without a trace
        (a tenant that left, a renamed route): the arrays stay the size of the week's pairs, not
        of every pair a long-running evaluator has seen."""
        for hour in [h for h in self._hours if h < until - WEEK]:
            self.drop_hour(hour)
        alive = self._week[: len(self._ids), 0] > 0
        if alive.all():
            return
        # ids are given in insertion order, so the dict's order is the rows' order
        self._ids = {pair: i for i, pair in enumerate(p for p, keep in zip(self._ids, alive, strict=True) if keep)}
        remap = np.cumsum(alive) - 1  # an idle pair is in no hour kept: its entry is never read
        self._week = self._week[: len(alive)][alive]
        self._hours = {hour: (remap[ids], sums) for hour, (ids, sums) in self._hours.items()}

    def learn(self) -> None:
        """Each route's level and each key's usual residual and spread, from the week's sums."""
        pairs = list(self._ids)
        if not pairs:
            return
        k, s, q = (self._week[: len(pairs), i] for i in range(3))
        routes = {(p, r): i for i, (p, r) in enumerate(dict.fromkeys((p, r) for p, _, r in pairs))}
        tenants = {(p, t): i for i, (p, t) in enumerate(dict.fromkeys((p, t) for p, t, _ in pairs))}
        r_idx = np.fromiter((routes[(p, r)] for p, _, r in pairs), dtype=np.int64, count=len(pairs))
        t_idx = np.fromiter((tenants[(p, t)] for p, t, _ in pairs), dtype=np.int64, count=len(pairs))
        r_k = np.bincount(r_idx, k, len(routes))
        level = np.divide(np.bincount(r_idx, s, len(routes)), r_k, out=np.zeros(len(routes)), where=r_k > 0)
        mu = level[r_idx]
        # the pairs' sums of residuals and of squared residuals against their route's level
        rs, rq = s - k * mu, q - 2 * mu * s + k * mu * mu
        self._level = {key: float(level[i]) for key, i in routes.items() if r_k[i] > 0}
        self._usual = {}
        for dimension, index, names in (("tenant", t_idx, tenants), ("route", r_idx, routes)):
            n = np.bincount(index, k, len(names))
            total, squares = np.bincount(index, rs, len(names)), np.bincount(index, rq, len(names))
            for (project, value), i in names.items():
                if n[i] >= MIN_TRACES_WEEK:
                    mean = total[i] / n[i]
                    spread = max(float(squares[i] / n[i] - mean ** 2), 0.0)
                    self._usual[(project, dimension, value)] = (float(mean), spread)

    def shift(self, now: Iterable[Window], skip_routes: Collection[tuple[str, str]] = ()) -> dict[Key, UnitShift]:
        """Per key, how its last hour's traces compare with its usual: ``now`` yields each pair's
        (pair, traces, sum of unit costs) of the hour and of its last :data:`RECENT` minutes;
        ``skip_routes`` (project, route) are left out of the tenants' sums (a route whose model
        got dearer pages for the route, not for every tenant on it)."""
        sums: dict[Key, list[float]] = {}
        for (project, tenant, route), k, s, recent_k, recent_s in now:
            level = self._level.get((project, route))
            if level is None or k <= 0:
                continue  # a route first seen this week has no level yet
            skip = (project, route) in skip_routes
            keys = [(project, "route", route)] + ([] if skip else [(project, "tenant", tenant)])
            for key in keys:
                acc = sums.setdefault(key, [0.0, 0.0, 0.0, 0.0])
                acc[0] += k
                acc[1] += s - k * level
                acc[2] += recent_k
                acc[3] += recent_s - recent_k * level
        out = {}
        for key, (k, total, recent_k, recent_total) in sums.items():
            usual = self._usual.get(key)
            if usual is None or k < MIN_TRACES_NOW:
                continue
            mean, spread = usual
            delta = total / k - mean
            recent_delta = recent_total / recent_k - mean if recent_k > 0 else 0.0
            recent = math.exp(recent_delta) if recent_k > 0 else None
            out[key] = UnitShift(_z(delta, k, spread), math.exp(delta), recent, _z(recent_delta, recent_k, spread))
        return out


def _z(delta: float, k: float, spread: float) -> float:
    """How far a mean shift of ``delta`` over ``k`` traces is beyond chance, at a variance of ``spread``."""
    if k <= 0:
        return 0.0
    return delta / math.sqrt(spread / k) if spread > 0 else (math.inf if delta > 0 else 0.0)

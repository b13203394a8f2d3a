"""Cost anomalies per tenant and per route, against a seasonal baseline of the same key.

Spend is of LLM calls, and *trimmed*: in every hour (and every window) the costliest single trace
of the key is left out. One long agent session is one trace, so it cannot page by itself, while a
tripled spend spread over many requests is barely touched by the trim.

The baseline of a clock hour is the median, over the last same-type days (up to 5 weekdays for a
weekday, 4 weekend days for a weekend day; within 3 weeks, since the key's first full day), of
that day's spend around the same hour (the hour and its two neighbours, averaged, which damps
small tenants' noise), or of the hour alone where that is higher (averaging flattens a peak
hour, and a busy-but-normal hour at a peak paged as 4.7x its baseline). It is scaled by the
key's trend: the last two same-type days' totals against those days' median, clamped to
[0.67, 1.5], so an onboarding tenant's ramp does not page and a shrinking one does not hide a
spike. With under two same-type days there is no baseline and no verdict: a new tenant or route
is learnt, not paged on. Medians of whole days move with the level in both directions, so the
baseline never drifts down the way excluding only high outliers does. A median is the typical
hour, though, and a lumpy key's typical hour is under its mean one: the baseline is scaled by how
far it fell short of the key's spend over the last week (:func:`calibration`, at most 1.5x).

A key breaches when, over the last hour, it spent at least ``ratio`` (2x) its baseline, the
excess clears both floors (``min_excess_usd`` and ``min_excess_share`` of the key's own mean
hourly spend over the last week, so small tenants are judged on their own scale), the last 10
minutes are still at 2x (so the tail of an hour that has ended does not page again once
resolved, and a 10x route, whose 15 minutes stayed at 2x for 12 minutes past its end, resolves
sooner), and the excess is beyond the key's own noise. Spend is lumpy (a small tenant's hour is
a few agent sessions), so it is modelled as compound Poisson: its variance is the baseline times
a dispersion (the cost of one "event"), measured from the key's own residuals over the last week
and never below what one of its traces costs (the caller's floor: the hour's only session is
trimmed, so residuals alone can say a session is nearly free), and its skew that of the key's
dearer traces (a few agent sessions among many cheap calls make the tail, which a variance read
as events of one cost thins); the hour's spend must be as unlikely as ``alpha`` under that model
(1e-8: the test runs every minute on a sliding hour for every tenant and route, and the arrivals
of sessions bunch more than Poisson ones: a busy-but-normal Sunday hour, 53 requests where 27-39
are usual, was 3e-8). A small tenant whose hours normally swing 5x pages on a real tripling of
many calls, not on two more sessions.
A key also breaches when each request got dearer (see ``_unit_cost``: a prompt that tripled, a
pricier model): its last hour's requests cost ``ratio`` times their usual, beyond chance at
``unit_alpha`` (1e-7: the mean of many requests is close to normal), so do its last 10 minutes',
what that adds to its mean hour clears the floors and the hour spent at least
``min_excess_usd``, whatever this hour's spend against its baseline (fewer sessions than usual
can hide a tripling from the spend test). It holds while the last 10 minutes' spend stays at
1.5x, or their requests stay 1.5x dearer (none: no data, held), and clears below, so an alert
resolves within minutes of the end and pages once.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlencode

import numpy as np

from ..store import usd_text
from ._model import BREACH, CLEAR, COST_ANOMALY, HOLD, Alert, Verdict
from ._unit_cost import RECENT, UnitShift

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
# Window lengths in minutes the rule reads, for the caller to sum: the hour, the ongoing and hold
# window (RECENT, as for the requests' costs), and the steps that date the breach's first minute.
WINDOWS = (5, 10, 15, 20, 30, 45, 60)


@dataclass(frozen=True, slots=True)
class CostRule:
    ratio: float = 2.0
    ongoing_ratio: float = 1.5
    min_excess_usd: float = 0.01
    min_excess_share: float = 0.5
    weekday_days: int = 5
    weekend_days: int = 4
    lookback_days: int = 21
    alpha: float = 1e-8
    unit_alpha: float = 1e-7

    def __post_init__(self) -> None:
        if self.ratio <= self.ongoing_ratio or self.ongoing_ratio <= 1.0:
            raise ValueError(
                f"CostRule needs ratio > ongoing_ratio > 1; got {self.ratio!r} and {self.ongoing_ratio!r}."
            )
        if self.min_excess_usd < 0 or self.min_excess_share < 0:
            raise ValueError("The cost floors (min_excess_usd, min_excess_share) must be 0 or more; got "
                             f"{self.min_excess_usd!r} and {self.min_excess_share!r}.")

    @property
    def history(self) -> timedelta:
        """How far back the hourly spend must reach."""
        return timedelta(days=self.lookback_days + 1)

    def expected_hour(self, hourly: Mapping[datetime, float], first_seen: datetime, hour: datetime) -> float | None:
        """The baseline spend of clock hour ``hour`` from complete earlier days, or ``None``."""
        return self.expected_hours(hourly, first_seen, [hour])[0]

    def expected_hours(self, hourly: Mapping[datetime, float], first_seen: datetime,
                       hours: Sequence[datetime]) -> list[float | None]:
        """The baselines of several clock hours of one key at once (a week of them when the
        evaluator starts): the same-type days are picked once per day, the spend of those days is
        laid out as an array, and the medians are one sort."""
        if not hours:
            return []
        first_day = first_seen.replace(hour=0) + (DAY if first_seen.hour else timedelta(0))
        origin = min(hours).replace(hour=0) - DAY * self.lookback_days
        days = (max(hours).replace(hour=0) - origin).days + 1
        at = _hours_from(origin, hours)
        day, offset = at // 24, at % 24
        plan = {int(d): self._same_days(origin + DAY * int(d), first_day, origin) for d in np.unique(day)}
        plan = {d: same for d, same in plan.items() if len(same) >= 2}
        # index i + 1 holds hour i from origin (one array write: at start-up every key asks for a
        # week of hours, and filling day by day from the mapping was half of that evaluation)
        spend = np.zeros(days * 24 + 2)
        index = _hours_from(origin, hourly.keys()) + 1
        inside = (index >= 0) & (index < len(spend))
        spend[index[inside]] = np.fromiter(hourly.values(), float, len(hourly))[inside]
        around = (spend[:-2] + spend[1:-1] + spend[2:]) / 3  # each hour with its two neighbours
        totals = spend[1:-1].reshape(days, 24).sum(axis=1)
        # per hour the same-type days' values, missing ones at +inf so that a sort puts them last:
        # around the hour, and the hour alone
        width = max(self.weekday_days, self.weekend_days)
        values, alone = np.full((len(hours), width), np.inf), np.full((len(hours), width), np.inf)
        counts, trends = np.zeros(len(hours), dtype=np.int64), np.ones(len(hours))
        for d, same in plan.items():
            mine = day == d
            index = np.array(same)[None, :] * 24 + offset[mine][:, None]
            values[mine, : len(same)], alone[mine, : len(same)] = around[index], spend[index + 1]
            counts[mine], trends[mine] = len(same), _trend(totals[same])
        rows = np.arange(len(hours))
        lower, upper = np.maximum(counts - 1, 0) // 2, counts // 2
        values.sort(axis=1)
        alone.sort(axis=1)
        # averaging with the neighbours damps a small key's noise, but flattens a peak hour (a
        # diurnal top, a cron): the hour is expected at no less than its own median
        middle = np.maximum((values[rows, lower] + values[rows, upper]) / 2,
                            (alone[rows, lower] + alone[rows, upper]) / 2)
        return [float(m * t) if c >= 2 else None for m, t, c in zip(middle, trends, counts, strict=True)]

    @functools.lru_cache(maxsize=1024)  # noqa: B019 - a few rules live as long as the process
    def _same_days(self, day: datetime, first_day: datetime, origin: datetime) -> list[int]:
        """The last same-type days before ``day`` since the key's first full day, most recent
        first, as indices from ``origin``."""
        weekend = day.weekday() >= 5
        same = [d for d in (day - DAY * k for k in range(1, self.lookback_days + 1))
                if (d.weekday() >= 5) == weekend and d >= first_day]
        return [(d - origin).days for d in same[: self.weekend_days if weekend else self.weekday_days]]

    def evaluate(self, project: str, dimension: str, key: str, spent: Mapping[int, float],
                 expected: Mapping[int, float], typical_hourly: float, now: datetime,
                 dispersion: float | None = None, unit: UnitShift | None = None, *,
                 jump: float | None = None) -> Verdict:
        """The verdict on one key: ``spent`` and ``expected`` map each of :data:`WINDOWS` (minutes)
        to the trimmed spend before ``now`` and its baseline; ``typical_hourly`` is the key's mean
        hourly spend over the last week; ``dispersion`` its noise (see :func:`dispersion`;
        ``None``: not known yet) and ``jump`` the cost of the events that make its tail (see
        ``_unlikely``; ``None``: ``dispersion``); ``unit`` its last hour's cost per request against its usual
        (``None``: not known). Without either, it cannot breach."""
        labels = {"project": project, dimension: key}
        # never judged against less than half its mean hour: at a key's quiet hours the seasonal
        # baseline is ~$0, and one session would look impossible
        a60, e60 = spent[60], max(expected[60], 0.5 * typical_hourly)
        floor = max(self.min_excess_usd, self.min_excess_share * typical_hourly)
        more = (a60 >= self.ratio * e60 and a60 - e60 >= floor
                and spent[RECENT] >= self.ratio * expected[RECENT] and spent[RECENT] > 0
                and dispersion is not None and _unlikely(a60, e60, dispersion, self.alpha, jump))
        if more or self.dearer(unit, typical_hourly, floor, a60):
            minutes = max(m for m in WINDOWS if spent[m] >= self.ratio * expected[m] or m == 5)
            if not more:  # a shift of the requests is measured over the hour: it began 15 minutes ago or more
                minutes = max(minutes, 15)
            since = (now - timedelta(minutes=minutes)).replace(second=0, microsecond=0)
            return Verdict(BREACH, _alert(labels, dimension, key, a60, e60, since, unit.ratio if unit else None))
        held = spent[RECENT] >= self.ongoing_ratio * expected[RECENT] and spent[RECENT] > 0
        if unit is not None and not held:  # requests still dearer, or none since (no data: not a clear)
            held = unit.recent >= self.ongoing_ratio if unit.recent is not None else unit.ratio >= self.ratio
        return Verdict(HOLD if held else CLEAR, Alert(COST_ANOMALY, labels, "", now))

    def dearer(self, unit: UnitShift | None, typical_hourly: float, floor: float, spent_hour: float) -> bool:
        """Whether a key's requests cost ``ratio`` times their usual, beyond chance, over the last
        hour and still over its last minutes, and what that adds to its mean hour clears the
        floor: a cost anomaly however few requests came (a small tenant's hour is a few sessions,
        and fewer of them can hide a tripling from the spend test). Dearer requests go on at
        every hour, so they are costed at the key's mean hour, not at this hour's: a tripling
        that starts in a small tenant's night is worth paging before its morning. But an hour
        that spent (``spent_hour``) under ``min_excess_usd`` holds no excess worth a page,
        whatever its requests cost: a page never says a key spent $0.00."""
        return (unit is not None and self.dearer_hour(unit) and unit.recent is not None
                and unit.recent >= self.ratio and (unit.ratio - 1) * typical_hourly >= floor
                and spent_hour >= self.min_excess_usd)

    def dearer_hour(self, unit: UnitShift) -> bool:
        """Whether a key's requests cost ``ratio`` times their usual over the last hour, beyond chance."""
        return unit.z >= _z_beyond(self.unit_alpha) and unit.ratio >= self.ratio


def _hours_from(origin: datetime, hours: Iterable[datetime]) -> np.ndarray:
    """Whole hours from ``origin`` to each of ``hours``."""
    at = np.fromiter((h.timestamp() for h in hours), float)
    return ((at - origin.timestamp()) // 3600).astype(np.int64)


def _trend(totals: np.ndarray) -> float:
    """The two latest days' spend against the days' median, clamped to [0.67, 1.5]."""
    days = totals.tolist()  # a handful: statistics is 10x faster than numpy here
    middle = statistics.median(days)
    return min(max(statistics.fmean(days[:2]) / middle, 0.67), 1.5) if middle > 0 else 1.0


def calibration(residuals: Sequence[tuple[float, float]]) -> float:
    """How far a key's baselines fell short of its spend over its last hours' (residual, baseline)
    pairs, as a factor within [1, 1.5] (the two largest residuals left out, as for the dispersion).
    A median of a few same-type days is the typical hour, and where spend comes in lumpy
    sessions the typical hour sits under the mean one, which is what the compound-Poisson test
    compares against."""
    if len(residuals) < 24:
        return 1.0
    ordered = sorted(residuals)[:-2]
    base = sum(b for _, b in ordered)
    return min(max(1.0 + sum(r for r, _ in ordered) / base, 1.0), 1.5) if base > 0 else 1.0


def dispersion(residuals: Sequence[tuple[float, float]], scale: float = 1.0) -> float | None:
    """The cost of one spend "event" of a key: squared residuals over baselines, from its last
    hours' (residual, baseline) pairs with the baselines times ``scale`` (see :func:`calibration`),
    the two largest residuals left out (an incident in the week must not make the key deaf);
    ``None`` under a day of hours."""
    if len(residuals) < 24:
        return None
    scaled = sorted(((r - (scale - 1.0) * b) ** 2, scale * b) for r, b in residuals)[:-2]
    base = sum(b for _, b in scaled)
    return sum(r2 for r2, _ in scaled) / base if base > 0 else None


def _unlikely(spent: float, expected: float, dispersion: float, alpha: float, jump: float | None = None) -> bool:
    """P(spend >= ``spent``) <= ``alpha`` when spend is compound Poisson with this mean, variance
    ``expected x dispersion`` and skew of events of cost ``jump`` (``E[c^3] / E[c^2]``; ``None``:
    events all of one cost, ``dispersion``): a translated Poisson that matches the three, so
    spend is a fixed part plus events of cost ``jump``. Matching only two (events of cost
    ``dispersion``) thins the tail wherever a few dear sessions come among many cheap calls: a
    tenant with an agent session every other hour and four in one hour, a chance of ~1e-4, was
    judged 1e-9 and paged."""
    from scipy.special import gammainc  # the alert job's thread already loads SciPy; the app's import does not

    if dispersion <= 0:
        return spent > expected
    jump = max(jump or dispersion, dispersion)
    expected = max(expected, 1e-12)
    fixed = expected * (1.0 - dispersion / jump)  # the part of the mean that does not vary
    if spent <= fixed:
        return False
    events, mean = (spent - fixed) / jump, expected * dispersion / jump ** 2
    return bool(gammainc(events, mean) <= alpha)


@functools.cache
def _z_beyond(alpha: float) -> float:
    """The standard normal's upper ``alpha`` quantile (4.75 for 1e-6)."""
    from scipy.special import ndtri

    return float(-ndtri(alpha))


def _alert(labels: dict[str, str], dimension: str, key: str, actual: float, expected: float,
           since: datetime, unit_ratio: float | None) -> Alert:
    usual = f"{actual / expected:.1f}x the usual {usd_text(expected)}" if expected > 0 else "usually nothing"
    dearer = f"; a request cost {unit_ratio:.1f}x its usual" if unit_ratio is not None and unit_ratio >= 1.5 else ""
    return Alert(
        name=COST_ANOMALY, labels=labels,
        summary=f"{dimension} {key} spent {usd_text(actual)} in the last hour, {usual}{dearer}"
                f" (since {since:%H:%M} UTC)",
        since=since,
        numbers={"cost_usd": actual, "baseline_usd": expected, "excess_usd": actual - expected,
                 "ratio": actual / expected if expected > 0 else 0.0,
                 **({"request_cost_ratio": unit_ratio} if unit_ratio is not None else {})},
        link="/cost?" + urlencode({dimension: key}),
    )

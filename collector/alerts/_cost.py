"""Cost anomalies per tenant and per route, against a seasonal baseline of the same key.

What is measured (``_reads.cost_windows``, every minute): each key's *trimmed* spend of LLM calls
in each of :data:`WINDOWS` ending now: in every window the costliest single trace of the key is
left out, so one long agent session cannot page by itself, while a tripled spend spread over
many requests is barely touched by the trim. Names below are fields of :class:`CostRule`.

The baseline of a clock hour (:meth:`CostRule.expected_hours`):

1. the same-type days: the last ``weekday_days`` (5) weekdays for a weekday, ``weekend_days``
   (4) weekend days for a weekend day, within ``lookback_days`` (21) and since the key's first
   full day; with under two there is no baseline and no verdict (a new key is learnt, not paged);
2. the median over those days of the spend around the hour (the hour and its two neighbours,
   averaged, which damps a small key's noise), or of the hour alone where that is higher (so a
   peak hour is not flattened);
3. times the key's trend: the last two same-type days' totals against those days' median,
   clamped to [``min_trend_factor``, ``max_trend_factor``] ([0.67, 1.5]), so a ramping key does
   not page and a shrinking one does not hide a spike;
4. times the key's calibration (``calibration``, at most :data:`MAX_CALIBRATION`): how far the
   baselines fell short of its spend over the last week (a median is the typical hour, and a
   lumpy key's typical hour is under its mean one).

A window's baseline is the two clock hours it spans, prorated. Medians of whole days move with the
level in both directions, so the baseline never drifts down the way excluding only high
outliers does.

More spend, fires when all of these hold:

1. the last hour's spend is at least ``ratio`` (2x) its baseline, the baseline taken no lower
   than ``min_baseline_share`` (half) of the key's mean hourly spend over the last week (at a
   quiet hour the seasonal baseline is ~$0, and one session would look impossible);
2. the excess clears both floors: ``min_excess_usd`` ($0.01) and ``min_excess_share`` (0.5) of
   the key's mean hour, so small tenants are judged on their own scale;
3. the last :data:`RECENT` (10) minutes spent something and are still at ``ratio`` their
   baseline (the tail of an hour that has ended does not page again once resolved);
4. the hour's spend is beyond the key's noise: spend is modelled as compound Poisson (its
   variance the baseline times the cost of one "event", measured from the key's own residuals
   over the last week and never below what one of its traces costs; its skew that of its dearer
   traces), and the hour's spend must be as unlikely as ``alpha`` (1e-8) under that model. The
   test runs every minute on a sliding hour for every key, hence the small ``alpha``.

Dearer requests, fires when all of these hold (see ``_unit_cost``: a prompt that tripled, a
pricier model; fewer sessions than usual can hide them from the spend test):

1. the last hour's requests cost at least ``ratio`` their usual, beyond chance (a z-score at the
   normal's ``unit_alpha`` (1e-7) quantile: the mean of many requests is close to normal);
2. so do the last :data:`RECENT` minutes' requests;
3. what that adds to the key's mean hour clears the floors (as above);
4. the hour spent at least ``min_excess_usd`` (a page never says a key spent $0.00).

When it fires, ``since`` is the start of the longest of :data:`WINDOWS` at ``ratio`` its
baseline (at least the shortest, 5 minutes; at least ``dearer_since_minutes`` (15) when only the
requests got dearer, as that is measured over the hour).

Hold and resolve, while an alert fires and neither test breaches:

1. it holds while the last :data:`RECENT` minutes' spend stays at ``ongoing_ratio`` (1.5x)
   their baseline;
2. or while their requests stay ``ongoing_ratio`` dearer (no request in them: no data, so held
   if the hour's requests are still ``ratio`` dearer);
3. otherwise the verdict is clear, and the evaluator resolves the alert once the clear has lasted.

One trace that keeps spending (a runaway agent loop), per tenant: the trimming above hides it
from the tests above, so it is judged by its own spend. It fires when all of these hold for the
tenant's costliest trace of the last hour:

1. it has been spending for at least ``runaway_minutes`` (55) of the hour, it spent in the last
   :data:`RECENT` minutes, and with it the tenant spent at least ``ongoing_ratio`` (1.5x) its
   baseline for them;
2. with it, the tenant's hour is at least ``ratio`` (2x) its baseline hour (taken as above), by
   the floors above: the more-spend test on the tenant's whole spend, so a loop that doubles a
   busy tenant's hour pages as one that doubles a quiet tenant's does;
3. its hour is at least ``runaway_top_factor`` (1.5) times the costliest trace of any hour of
   the tenant's history (the baselines' ``lookback_days``, 21), before the last
   ``runaway_recent_hours`` (4, the loop's own hours): a tenant whose long sessions are normal
   life does not page for one. Such sessions come a few a week, and one week's costliest fell
   short of a session three weeks had seen larger (generator b of the pager's bench, seed 206).

It holds while the trace spends (in the last :data:`RECENT` minutes), and clears once it has
stopped: the incident is the trace itself. Holding on the tenant's last minutes instead, a loop
that doubled a busy tenant's hour resolved and paged again whenever ten minutes of the tenant's
own traffic dipped (3 pages for one loop on the pager's generator a, seed 25). Its labels add
``scope: trace`` to the tenant's, so it is its own alert beside the tenant's.

Routes and tenants (``_rules.CostRules``): a route's breach that one tenant made (at least
``one_tenant_share`` (80%) of the route's hour) is held, not paged: that tenant pages. A route
whose hour surges, or whose requests got dearer, pages for itself: the tenants on it are judged
with that route's share of their spend deflated by the surge. A route whose requests got dearer
over the last :data:`RECENT` minutes alone (beyond chance in them) deflates its tenants already,
by its hour so far: a tenant mostly on it would otherwise double its hour, and page, before the
route does.

Measured in BENCHMARKS.md, section 'The pager'.
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
from ._unit_cost import RECENT, Key, UnitShift

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
WINDOWS = (5, 10, 15, 20, 30, 45, 60)
"""Window lengths in minutes the rule reads, for the caller to sum: the hour, the ongoing and hold
window (:data:`RECENT`, as for the requests' costs), and the steps that date a breach's first minute."""
NOISE_MIN_HOURS = 24
"""Hours of residuals a key needs before its noise (:func:`dispersion`, :func:`calibration`) is known."""
NOISE_OUTLIER_HOURS = 2
"""The largest residuals left out of a key's noise: an incident in the week must not make it deaf."""
MAX_CALIBRATION = 1.5
"""The most a key's baselines are scaled up by :func:`calibration`."""
MENTION_DEARER_FACTOR = 1.5
"""A cost alert's summary mentions the cost per request from this multiple of its usual."""


@dataclass(frozen=True, slots=True)
class TopTrace:
    """A key's costliest trace of the last hour: its id, when its first call of the hour was,
    what it spent over the hour and over the last :data:`RECENT` minutes; and what the key spent
    over those minutes, every trace included (the key's window of them leaves out its own
    costliest trace, not always this one; its hour leaves out this one)."""

    trace_id: str
    first_at: datetime
    spent_hour: float
    spent_recent: float
    key_recent: float


@dataclass(frozen=True, slots=True)
class KeyHour:
    """What the cost rule reads of one key at one evaluation: ``spent`` and ``expected`` map each
    of :data:`WINDOWS` (minutes) to the trimmed spend before now and its baseline;
    ``typical_hourly`` is the key's mean hourly spend over the last week; ``dispersion`` its
    noise (see :func:`dispersion`; ``None``: not known yet) and ``jump`` the cost of the events
    that make its tail (see ``_unlikely``; ``None``: ``dispersion``); ``unit`` its last hour's
    cost per request against its usual (``None``: not known)."""

    spent: Mapping[int, float]
    expected: Mapping[int, float]
    typical_hourly: float
    dispersion: float | None = None
    jump: float | None = None
    unit: UnitShift | None = None
    left_out: TopTrace | None = None
    """The hour's costliest trace, which ``spent`` leaves out (``None``: none was)."""


@dataclass(frozen=True, slots=True)
class CostRule:
    """The cost rule's settings (the module docstring says how each is used).

    Units: ``ratio`` and ``*_factor`` are multiples of a baseline, ``*_share`` a fraction,
    ``*_alpha`` a probability, ``*_usd`` dollars.
    """

    ratio: float = 2.0
    """Multiple of its baseline a key's spend (or cost per request) reaches to fire."""
    ongoing_ratio: float = 1.5
    """Multiple of its baseline the last minutes' spend (or cost per request) holds a firing alert at."""
    min_excess_usd: float = 0.01
    """An excess (and an hour's spend) under this many dollars never pages."""
    min_excess_share: float = 0.5
    """An excess under this share of the key's mean hour never pages."""
    min_baseline_share: float = 0.5
    """A key is never judged against less than this share of its mean hour."""
    weekday_days: int = 5
    """Same-type days a weekday's baseline is the median of."""
    weekend_days: int = 4
    """Same-type days a weekend day's baseline is the median of."""
    lookback_days: int = 21
    """How far back same-type days are looked for."""
    min_trend_factor: float = 0.67
    """The trend scaling a baseline is clamped to this at the least."""
    max_trend_factor: float = 1.5
    """The trend scaling a baseline is clamped to this at the most."""
    alpha: float = 1e-8
    """The hour's spend must be this unlikely under the key's compound-Poisson noise."""
    unit_alpha: float = 1e-7
    """The hour's cost per request must be this unlikely (normal tail) to be dearer."""
    dearer_since_minutes: int = 15
    """A breach of dearer requests alone is dated at least this many minutes back."""
    one_tenant_share: float = 0.8
    """A route's breach is one tenant's when that tenant made at least this share of its hour."""
    runaway_minutes: int = 55
    """A trace must have been spending for this many minutes of the hour to page by itself."""
    runaway_top_factor: float = 1.5
    """A runaway's hour must be this multiple of the tenant's costliest trace-hour of its history."""
    runaway_recent_hours: int = 4
    """The last hours left out of that history: the loop's own."""

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
            counts[mine] = len(same)
            trends[mine] = _trend(totals[same], self.min_trend_factor, self.max_trend_factor)
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

    def evaluate(self, key: Key, hour: KeyHour, now: datetime) -> Verdict:
        """The verdict on ``key`` (project, dimension, value) at ``now`` from what was read of it
        (``hour``). Without a known dispersion or unit shift, it cannot breach."""
        project, dimension, value = key
        labels = {"project": project, dimension: value}
        spent_hour = hour.spent[60]
        baseline = max(hour.expected[60], self.min_baseline_share * hour.typical_hourly)
        floor = max(self.min_excess_usd, self.min_excess_share * hour.typical_hourly)
        more = self._spends_more(hour, spent_hour, baseline, floor)
        if more or self.dearer(hour.unit, hour.typical_hourly, floor, spent_hour):
            since = self._since(hour, now, dearer_only=not more)
            return Verdict(BREACH, _alert(key, spent_hour, baseline, since, hour.unit.ratio if hour.unit else None,
                                          hour.left_out))
        return Verdict(HOLD if self._holds(hour) else CLEAR, Alert(COST_ANOMALY, labels, "", now))

    def runaway(self, key: Key, top: TopTrace | None, hour: KeyHour, history_top: float, now: datetime) -> Verdict:
        """The verdict on one tenant's costliest trace of the last hour (the module's runaway
        list); ``history_top`` is the costliest trace-hour of its history before the loop's own hours."""
        project, dimension, value = key
        labels = {"project": project, dimension: value, "scope": "trace"}
        if top is None or top.spent_recent <= 0:  # stopped: the incident is the trace itself
            return Verdict(CLEAR, Alert(COST_ANOMALY, labels, "", now))
        baseline = max(hour.expected[60], self.min_baseline_share * hour.typical_hourly)
        floor = max(self.min_excess_usd, self.min_excess_share * hour.typical_hourly)
        key_hour = hour.spent[60] + top.spent_hour  # the hour's trimmed spend left out this trace
        if (top.first_at <= now - timedelta(minutes=self.runaway_minutes)
                and top.key_recent >= self.ongoing_ratio * hour.expected[RECENT]
                and key_hour >= self.ratio * baseline and key_hour - baseline >= floor
                and top.spent_hour >= self.runaway_top_factor * history_top):
            return Verdict(BREACH, _runaway_alert(labels, top, key_hour, baseline, history_top, now))
        return Verdict(HOLD, Alert(COST_ANOMALY, labels, "", now))

    def _spends_more(self, hour: KeyHour, spent_hour: float, baseline: float, floor: float) -> bool:
        """The module's "more spend" list: the hour at ``ratio`` its ``baseline``, by ``floor``
        or more, the last minutes too, and beyond the key's noise."""
        return (spent_hour >= self.ratio * baseline and spent_hour - baseline >= floor
                and hour.spent[RECENT] >= self.ratio * hour.expected[RECENT] and hour.spent[RECENT] > 0
                and hour.dispersion is not None
                and _unlikely(spent_hour, baseline, hour.dispersion, self.alpha, hour.jump))

    def _since(self, hour: KeyHour, now: datetime, dearer_only: bool) -> datetime:
        """The breach's first minute: the longest of :data:`WINDOWS` at ``ratio`` its baseline."""
        minutes = max(m for m in WINDOWS if hour.spent[m] >= self.ratio * hour.expected[m] or m == WINDOWS[0])
        if dearer_only:  # a shift of the requests is measured over the hour
            minutes = max(minutes, self.dearer_since_minutes)
        return (now - timedelta(minutes=minutes)).replace(second=0, microsecond=0)

    def _holds(self, hour: KeyHour) -> bool:
        """Whether a firing alert holds: the last minutes' spend, or their requests' cost, still
        at ``ongoing_ratio`` (no request in them: no data, held while the hour's are dearer)."""
        held = hour.spent[RECENT] >= self.ongoing_ratio * hour.expected[RECENT] and hour.spent[RECENT] > 0
        unit = hour.unit
        if unit is not None and not held:
            held = unit.recent >= self.ongoing_ratio if unit.recent is not None else unit.ratio >= self.ratio
        return held

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

    def dearer_lately(self, unit: UnitShift) -> bool:
        """Whether a key's requests cost ``ratio`` times their usual over the last :data:`RECENT`
        minutes, beyond chance in them alone: a pricier model minutes old, still diluted in the hour."""
        return unit.recent is not None and unit.recent >= self.ratio and unit.recent_z >= _z_beyond(self.unit_alpha)


def _hours_from(origin: datetime, hours: Iterable[datetime]) -> np.ndarray:
    """Whole hours from ``origin`` to each of ``hours``."""
    # map over the C method, not a generator: at a new hour this runs over every key's 3 weeks
    # of hours (378,000 at 1,000 tenants), and the generator's frames were two thirds of it
    at = np.fromiter(map(datetime.timestamp, hours), float)
    return ((at - origin.timestamp()) // 3600).astype(np.int64)


def _trend(totals: np.ndarray, lowest: float, highest: float) -> float:
    """The two latest days' spend against the days' median, clamped to [``lowest``, ``highest``]."""
    days = totals.tolist()  # a handful: statistics is 10x faster than numpy here
    middle = statistics.median(days)
    return min(max(statistics.fmean(days[:2]) / middle, lowest), highest) if middle > 0 else 1.0


def calibration(residuals: Sequence[tuple[float, float]]) -> float:
    """How far a key's baselines fell short of its spend over its last hours' (residual, baseline)
    pairs, as a factor within [1, :data:`MAX_CALIBRATION`] (the :data:`NOISE_OUTLIER_HOURS`
    largest residuals left out, as for the dispersion; 1 under :data:`NOISE_MIN_HOURS`). A median
    of a few same-type days is the typical hour, and where spend comes in lumpy sessions the
    typical hour sits under the mean one, which is what the compound-Poisson test compares
    against."""
    if len(residuals) < NOISE_MIN_HOURS:
        return 1.0
    ordered = sorted(residuals)[:-NOISE_OUTLIER_HOURS]
    base = sum(b for _, b in ordered)
    return min(max(1.0 + sum(r for r, _ in ordered) / base, 1.0), MAX_CALIBRATION) if base > 0 else 1.0


def dispersion(residuals: Sequence[tuple[float, float]], scale: float = 1.0) -> float | None:
    """The cost of one spend "event" of a key: squared residuals over baselines, from its last
    hours' (residual, baseline) pairs with the baselines times ``scale`` (see :func:`calibration`),
    the :data:`NOISE_OUTLIER_HOURS` largest residuals left out; ``None`` under
    :data:`NOISE_MIN_HOURS`."""
    if len(residuals) < NOISE_MIN_HOURS:
        return None
    scaled = sorted(((r - (scale - 1.0) * b) ** 2, scale * b) for r, b in residuals)[:-NOISE_OUTLIER_HOURS]
    base = sum(b for _, b in scaled)
    return sum(r2 for r2, _ in scaled) / base if base > 0 else None


def _unlikely(spent: float, expected: float, dispersion: float, alpha: float, jump: float | None = None) -> bool:
    """P(spend >= ``spent``) <= ``alpha`` when spend is compound Poisson with this mean, variance
    ``expected x dispersion`` and skew of events of cost ``jump`` (``E[c^3] / E[c^2]``; ``None``:
    events all of one cost, ``dispersion``): a translated Poisson that matches the three, so
    spend is a fixed part plus events of cost ``jump``. Matching only two (events of cost
    ``dispersion``) thins the tail wherever a few dear sessions come among many cheap calls."""
    from scipy.special import gammainc  # the alert job's thread already loads SciPy; the app's import does not

    if dispersion <= 0:
        return spent > expected
    jump = max(jump or dispersion, dispersion)
    expected = max(expected, 1e-12)  # a zero mean would divide by zero
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


def _alert(key: Key, actual: float, expected: float, since: datetime, unit_ratio: float | None,
           left_out: TopTrace | None = None) -> Alert:
    project, dimension, value = key
    usual = f"{actual / expected:.1f}x the usual {usd_text(expected)}" if expected > 0 else "usually nothing"
    dearer = (f"; a request cost {unit_ratio:.1f}x its usual"
              if unit_ratio is not None and unit_ratio >= MENTION_DEARER_FACTOR else "")
    without = f" without its costliest trace ({usd_text(left_out.spent_hour)})" if left_out is not None else ""
    return Alert(
        name=COST_ANOMALY, labels={"project": project, dimension: value},
        summary=f"{dimension} {value} spent {usd_text(actual)} in the last hour{without}, {usual}{dearer}"
                f" (since {since:%H:%M} UTC)",
        since=since,
        numbers={"cost_usd": actual, "baseline_usd": expected, "excess_usd": actual - expected,
                 "ratio": actual / expected if expected > 0 else 0.0,
                 **({"left_out_trace_usd": left_out.spent_hour} if left_out is not None else {}),
                 **({"request_cost_ratio": unit_ratio} if unit_ratio is not None else {})},
        details=_definitions(dimension, actual, expected, unit_ratio, left_out),
        link="/cost?" + urlencode({dimension: value}),
    )


def _definitions(dimension: str, actual: float, expected: float, unit_ratio: float | None,
                 left_out: TopTrace | None) -> str:
    """What each figure of a cost alert's headline counts, so none contradicts its details."""
    spent = f"Spent: the {dimension}'s LLM calls of the last hour, {usd_text(actual)}"
    if left_out is not None:
        spent += (f", leaving out its costliest trace ({left_out.trace_id}, {usd_text(left_out.spent_hour)}),"
                  " as every hour of the baseline leaves out its own: one long session is not an anomaly")
    text = (f"{spent}. Usual: the same hour of the last same-type days, measured the same way,"
            f" {usd_text(expected)}.")
    if unit_ratio is not None:
        text += (f" A request (a trace's calls) cost {unit_ratio:.1f}x its usual: the hour's requests against"
                 " the last week's of the same tenant and route.")
    return text


def _runaway_alert(labels: dict[str, str], top: TopTrace, key_hour: float, baseline: float, history_top: float,
                   now: datetime) -> Alert:
    dimension, value = next((k, v) for k, v in labels.items() if k not in ("project", "scope"))
    per_hour = usd_text(top.spent_hour)
    return Alert(
        name=COST_ANOMALY, labels=labels,
        summary=(f"{dimension} {value}: one trace ({top.trace_id}) spent {per_hour} in the last hour, and is"
                 f" still spending (since {top.first_at:%H:%M} UTC); with it the {dimension} spent"
                 f" {usd_text(key_hour)}, {key_hour / baseline:.1f}x its usual hour of {usd_text(baseline)}"),
        since=top.first_at,
        numbers={"trace_cost_usd": top.spent_hour, "trace_recent_usd": top.spent_recent, "baseline_usd": baseline,
                 "key_cost_usd": key_hour, "ratio": key_hour / baseline if baseline > 0 else 0.0,
                 "history_top_trace_usd": history_top},
        details=(f"A single session that keeps spending, such as an agent loop: trace {top.trace_id} spent"
                 f" {per_hour} over the last hour, {usd_text(top.spent_recent)} of it in the last {RECENT}"
                 f" minutes; the costliest trace of any hour of the {dimension}'s last 3 weeks cost"
                 f" {usd_text(history_top)}."
                 f" With this trace the {dimension} spent {usd_text(key_hour)} over the hour. The"
                 f" {dimension}'s own cost figures leave out each hour's costliest trace, this one included."),
        link="/cost?" + urlencode({dimension: value}),
    )

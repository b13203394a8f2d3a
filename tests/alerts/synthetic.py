"""Synthetic traffic with daily and weekly seasonality and noise, for replaying alert rules."""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from infersight.collector.alerts._error_rate import Counts

START = datetime(2026, 10, 5, tzinfo=timezone.utc)  # a Monday


def seasonal_rate(t: datetime, base: float) -> float:
    """Requests per minute: quiet nights, busy afternoons, slow weekends."""
    hour = t.hour + t.minute / 60
    daily = 0.55 + 0.45 * math.sin((hour - 8) / 24 * 2 * math.pi)
    weekly = 0.45 if t.weekday() >= 5 else 1.0
    return base * daily * weekly


@dataclass
class MinuteTraffic:
    """Per-minute requests and errors with prefix sums, so any window is counted in O(log n)."""

    minutes: list[datetime]
    cum_total: list[int]
    cum_errors: list[int]

    def counts(self, now: datetime, lookback: timedelta) -> Counts:
        lo = bisect.bisect_left(self.minutes, now - lookback)
        hi = bisect.bisect_left(self.minutes, now)
        total = self.cum_total[hi] - self.cum_total[lo]
        errors = self.cum_errors[hi] - self.cum_errors[lo]
        return Counts(total, errors, transient=errors, logic=0)


def minute_traffic(
    days: float, *, base: float = 40.0, error_rate: Callable[[datetime], float] = lambda t: 0.002, seed: int = 1,
) -> MinuteTraffic:
    rng = random.Random(seed)
    minutes, cum_total, cum_errors = [], [0], [0]
    t = START
    for _ in range(int(days * 1440)):
        n = _poisson(rng, seasonal_rate(t, base))
        e = sum(1 for _ in range(n) if rng.random() < error_rate(t))
        minutes.append(t)
        cum_total.append(cum_total[-1] + n)
        cum_errors.append(cum_errors[-1] + e)
        t += timedelta(minutes=1)
    return MinuteTraffic(minutes, cum_total, cum_errors)


def _poisson(rng: random.Random, lam: float) -> int:
    # Knuth for small rates, normal approximation above: exact enough for traffic noise.
    if lam > 30:
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    limit, k, p = math.exp(-lam), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def hourly_cost(
    weeks: float, *, base_usd: float = 4.0, seed: int = 2, multiplier: Callable[[datetime], float] = lambda t: 1.0,
) -> dict[datetime, float]:
    """Hourly spend of one tenant: seasonal, with a Monday-morning peak every week, and noise."""
    rng = random.Random(seed)
    out = {}
    t = START
    for _ in range(int(weeks * 7 * 24)):
        rate = seasonal_rate(t, base_usd)
        if t.weekday() == 0 and 8 <= t.hour < 12:
            rate *= 2.2  # the usual Monday batch of reports
        out[t] = max(0.0, rate * rng.uniform(0.85, 1.15)) * multiplier(t)
        t += timedelta(hours=1)
    return out

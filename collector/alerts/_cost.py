"""Cost anomalies per tenant and hour, against a seasonal, robust baseline.

The baseline for an hour is the median spend of the same hour of the week over the last four
weeks, or, with less history, of the same hour of the day over the last seven days. Its scale is
the MAD (1.4826 x median absolute deviation, floored so a perfectly flat history does not make
every cent an anomaly). An hour is anomalous when its robust z-score is at least 3.5 AND the
excess is above a dollar floor AND above a share of the baseline; the alert fires when two of
the last three complete hours are anomalous. Hours found anomalous against the weekly baseline
never enter later baselines, so a long incident does not teach the baseline that it is normal.
Flags from the hour-of-day fallback are provisional and do not exclude hours: that baseline
cannot know weekly rhythms, and excluding, say, every Monday peak it flags would keep Monday
peaks out of the weekly baseline forever.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlencode

from ._model import COST_ANOMALY, Alert

HOUR = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class HourVerdict:
    hour: datetime
    cost_usd: float
    baseline_usd: float | None
    z: float | None
    anomalous: bool


@dataclass(frozen=True, slots=True)
class CostRule:
    z_threshold: float = 3.5
    min_excess_usd: float = 1.0
    min_excess_share: float = 0.5
    weeks: int = 4
    min_points: int = 3

    @property
    def history(self) -> timedelta:
        return timedelta(weeks=self.weeks) + timedelta(hours=3)

    def verdicts(self, hourly: Mapping[datetime, float], until: datetime) -> list[HourVerdict]:
        """Judge every complete hour of the history, oldest first, up to (excluding) ``until``.

        ``hourly`` maps hour starts to spend; hours absent between the first one and ``until``
        count as zero spend.
        """
        if not hourly:
            return []
        first = min(hourly)
        out: list[HourVerdict] = []
        flagged: set[datetime] = set()
        hour = first
        while hour < until:
            cost = hourly.get(hour, 0.0)
            baseline, weekly = self._baseline_points(hourly, hour, first, flagged)
            verdict = HourVerdict(hour, cost, None, None, False)
            if baseline is not None:
                median = statistics.median(baseline)
                mad = statistics.median(abs(x - median) for x in baseline)
                scale = max(1.4826 * mad, 0.05 * median, 0.01)
                excess = cost - median
                z = excess / scale
                anomalous = (
                    z >= self.z_threshold
                    and excess >= self.min_excess_usd
                    and excess >= self.min_excess_share * median
                )
                verdict = HourVerdict(hour, cost, median, z, anomalous)
                if anomalous and weekly:
                    flagged.add(hour)
            out.append(verdict)
            hour += HOUR
        return out

    def _baseline_points(
        self, hourly: Mapping[datetime, float], hour: datetime, first: datetime, flagged: set[datetime]
    ) -> tuple[list[float] | None, bool]:
        """The baseline's points and whether they are the weekly (same hour of week) ones."""
        for step, count, weekly in ((timedelta(weeks=1), self.weeks, True), (timedelta(days=1), 7, False)):
            points = [
                hourly.get(h, 0.0)
                for h in (hour - step * i for i in range(1, count + 1))
                if h >= first and h not in flagged
            ]
            if len(points) >= self.min_points:
                return points, weekly
        return None, False

    def evaluate(
        self, project: str, tenant: str, hourly: Mapping[datetime, float], now: datetime
    ) -> tuple[Alert | None, list[HourVerdict]]:
        """The alert for this tenant (if 2 of the last 3 complete hours are anomalous) and the
        verdicts of those three hours."""
        current = now.replace(minute=0, second=0, microsecond=0)
        verdicts = self.verdicts(hourly, current)
        last3 = [v for v in verdicts if v.hour >= current - 3 * HOUR]
        bad = [v for v in last3 if v.anomalous]
        if len(bad) < 2:
            return None, last3
        actual = sum(v.cost_usd for v in bad)
        expected = sum(v.baseline_usd or 0.0 for v in bad)
        alert = Alert(
            name=COST_ANOMALY,
            labels={"project": project, "tenant": tenant},
            summary=(
                f"tenant {tenant} spent ${actual:,.2f} in {len(bad)} of the last 3 hours, "
                f"{actual / expected:.1f}x the usual ${expected:,.2f}" if expected > 0 else
                f"tenant {tenant} spent ${actual:,.2f} in {len(bad)} of the last 3 hours, usually nothing"
            ),
            since=bad[0].hour,
            numbers={
                "cost_usd": actual,
                "baseline_usd": expected,
                "excess_usd": actual - expected,
                "max_z": max(v.z or 0.0 for v in bad),
                "anomalous_hours": float(len(bad)),
            },
            link="/cost?" + urlencode({"tenant": tenant}),
        )
        return alert, last3

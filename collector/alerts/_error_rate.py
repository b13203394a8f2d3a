"""Error-rate spikes: multi-window, multi-burn-rate alerting against an error budget.

After the SRE workbook: with an SLO of 99.5% successful calls, the budget is 0.5% errors. A
burn rate of 14.4 over one hour spends 2% of a 30-day budget; it pages only if the last five
minutes burn as fast (so the alert resolves quickly once the spike ends). The slower pair, 6x
over six hours confirmed over 30 minutes, catches smouldering failures. A minimum request count
keeps three failures at night from paging.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlencode

from ._model import ERROR_SPIKE, Alert


@dataclass(frozen=True, slots=True)
class Counts:
    """Calls of one service over one look-back window."""

    total: int
    errors: int
    transient: int = 0
    logic: int = 0


@dataclass(frozen=True, slots=True)
class BurnWindow:
    long: timedelta
    short: timedelta
    burn_rate: float


@dataclass(frozen=True, slots=True)
class ErrorRateRule:
    """Parameters; defaults follow the SRE workbook's page-level windows."""

    slo: float = 0.995
    windows: tuple[BurnWindow, ...] = (
        BurnWindow(timedelta(hours=1), timedelta(minutes=5), 14.4),
        BurnWindow(timedelta(hours=6), timedelta(minutes=30), 6.0),
    )
    min_requests: int = 100

    def __post_init__(self) -> None:
        if not 0.0 < self.slo < 1.0:
            raise ValueError(f"The 'slo' parameter of ErrorRateRule must be in (0, 1); got {self.slo!r}.")

    def lookbacks(self) -> tuple[timedelta, ...]:
        """Every window the rule reads, for the caller to count."""
        return tuple(sorted({w.long for w in self.windows} | {w.short for w in self.windows}))

    def evaluate(
        self, project: str, service: str, counts: Mapping[timedelta, Counts], now: datetime,
        top_labels: Mapping[str, str] | None = None,
    ) -> Alert | None:
        """An alert if a window pair burns too fast, else ``None``.

        ``counts`` maps each of :meth:`lookbacks` to the calls in ``[now - lookback, now)``.
        """
        budget = 1.0 - self.slo
        for window in self.windows:
            long, short = counts[window.long], counts[window.short]
            if long.total < self.min_requests or short.total == 0:
                continue
            long_burn = long.errors / long.total / budget
            short_burn = short.errors / short.total / budget
            if long_burn < window.burn_rate or short_burn < window.burn_rate:
                continue
            return Alert(
                name=ERROR_SPIKE,
                labels={"project": project, "service": service},
                summary=(
                    f"{service}: {long.errors / long.total:.1%} of {long.total:,} LLM calls failed in the last "
                    f"{_fmt(window.long)} (error budget {budget:.2%}, burning {long_burn:.1f}x)"
                ),
                since=now - window.short,
                numbers={
                    "error_rate": long.errors / long.total,
                    "requests": float(long.total),
                    "errors": float(long.errors),
                    "transient_errors": float(long.transient),
                    "logic_errors": float(long.logic),
                    "burn_rate_long": long_burn,
                    "burn_rate_short": short_burn,
                    "slo": self.slo,
                },
                details=(
                    f"{long.transient:,} transient (timeouts, 429, 5xx) and {long.logic:,} logic errors (4xx, "
                    f"validation). Burn {long_burn:.1f}x over {_fmt(window.long)} and {short_burn:.1f}x over "
                    f"{_fmt(window.short)} (threshold {window.burn_rate}x)."
                    + most_affected(top_labels or {})
                ),
                link="/traces?" + urlencode({"service": service, "status": "error"}),
            )
        return None


def most_affected(top_labels: Mapping[str, str]) -> str:
    """The alert body's sentence naming the tenant, model, ... with the most errors."""
    return "".join(f" Most affected {k}: {v}." for k, v in top_labels.items())


def _fmt(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    return f"{minutes // 60} h" if minutes % 60 == 0 else f"{minutes} min"

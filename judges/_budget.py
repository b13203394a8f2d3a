"""The daily judge budget, in calls and in dollars, checked against the ``judge_calls`` ledger."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from infersight.collector.store import Store

from ._records import PURPOSE_SAMPLE, spend_today


@dataclass(frozen=True, slots=True)
class Budget:
    """At most ``max_calls`` judge HTTP requests and ``max_usd`` dollars per project per UTC day.

    ``None`` means no limit of that kind. Only sampled judging (the background runner and
    ``judge run``) draws on it; panel comparisons are deliberate runs whose spend is recorded
    in the same ledger but not capped, so a CI gate never stops half-way for budget.
    """

    max_calls: int | None = 2000
    max_usd: float | None = 5.0

    def __post_init__(self) -> None:
        if self.max_calls is not None and (not isinstance(self.max_calls, int) or self.max_calls < 0):
            raise ValueError(
                f"The 'max_calls' parameter of Budget must be an integer >= 0 or None; got {self.max_calls!r}."
            )
        if self.max_usd is not None and not self.max_usd >= 0:
            raise ValueError(f"The 'max_usd' parameter of Budget must be >= 0 or None; got {self.max_usd!r}.")


class BudgetTracker:
    """Reserves judge calls against today's budget before they go out.

    Today's spend is read from the ledger (so a restart does not reset it) and kept current
    with :meth:`settle`. A call is started only if the spend so far plus the calls in flight,
    each at the average cost per call seen today, stay within the budget; so the budget is
    exceeded at most by what retries of in-flight calls cost beyond that average.
    Not thread-safe: the runner reserves and settles from one thread.
    """

    def __init__(self, store: Store, project: str, budget: Budget, *,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.project = project
        self.budget = budget
        self._clock = clock
        self._day: int | None = None
        self.calls = 0
        self.usd = 0.0
        self._costed = 0
        self._in_flight = 0
        self.warned_unknown_cost = False

    def _refresh(self) -> None:
        day = int(self._clock() // 86400)
        if day != self._day:
            self._day = day
            self.calls, self.usd, self._costed = spend_today(self.store, self.project, PURPOSE_SAMPLE, self._clock())

    def _average_usd(self) -> float:
        return self.usd / self._costed if self._costed else 0.0

    def try_reserve(self) -> bool:
        """Reserve one judgement; ``False`` when it would break today's budget."""
        self._refresh()
        b = self.budget
        if b.max_calls is not None and self.calls + self._in_flight + 1 > b.max_calls:
            return False
        if b.max_usd is not None:
            if self.usd >= b.max_usd:
                return False
            if self.usd + (self._in_flight + 1) * self._average_usd() > b.max_usd:
                return False
        self._in_flight += 1
        return True

    def settle(self, calls: int, cost_usd: float | None) -> None:
        """A reserved judgement finished after ``calls`` HTTP requests costing ``cost_usd``."""
        self._in_flight = max(0, self._in_flight - 1)
        self.calls += calls
        if cost_usd is not None:
            self.usd += cost_usd
            self._costed += 1

    def release(self) -> None:
        """A reserved judgement was not attempted (e.g. the breaker was open)."""
        self._in_flight = max(0, self._in_flight - 1)

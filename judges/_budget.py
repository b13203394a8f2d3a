"""The daily judge budget, in calls and in dollars, paced over the UTC day and checked against the
``judge_calls`` ledger."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from infersight.collector.store import Store, usd_text

from ._client import Judge
from ._records import PURPOSE_SAMPLE, spend_today

DAY_S = 86400.0
logger = logging.getLogger("infersight.judges")


@dataclass(frozen=True, slots=True)
class Budget:
    """At most ``max_calls`` judge HTTP requests and ``max_usd`` dollars per project per UTC day,
    paced so that every hour of the day gets judgements.

    Pacing (``paced=True``): ``t`` seconds after 00:00 UTC, the day's spend so far may reach
    ``cap * (b + (1 - b) * t / 86400)`` of each cap, where ``b = burst_s / 86400``: one hour's
    share is there at midnight, and the rest comes in evenly until the next midnight. With the
    defaults (2000 calls, $5, one hour's burst) that is 83 calls and $0.21 at 00:00, 1042 calls
    and $2.60 at 12:00, and each hour adds about 80 calls and $0.20. It caps spend to date, not
    per-hour buckets: a quiet morning's unused share is there for the afternoon, and a burst
    may run up to ``burst_s`` worth of budget ahead of the clock; the whole cap is reached only
    at the day's end, so its last hour is judged too. Unpaced, a steady 250 judgements an hour
    spent the default budget by 08:00 and left the rest of the day unjudged.

    ``paced=False`` lets the whole day's budget go at once (a one-off backfill that should use
    what is left of today now). ``None`` means no limit of that kind. Only sampled judging (the
    background runner and ``judge run``) draws on it; panel comparisons are deliberate runs
    whose spend is recorded in the same ledger but not capped, so a CI gate never stops
    half-way for budget.

    A dollar cap needs the judge's price. A judge whose price is unknown is refused before it
    starts (:func:`require_price`); should an answered call still come back without a cost,
    dollar-capped judging stops for the rest of the UTC day (with a warning), since the cap can
    no longer be checked. An answer without token usage is costed at an upper bound by
    :class:`~._client.JudgeClient`, so it counts against the cap at no less than it cost.
    """

    max_calls: int | None = 2000
    max_usd: float | None = 5.0
    paced: bool = True
    burst_s: float = 3600.0

    def __post_init__(self) -> None:
        if self.max_calls is not None and (not isinstance(self.max_calls, int) or self.max_calls < 0):
            raise ValueError(
                f"The 'max_calls' parameter of Budget must be an integer >= 0 or None; got {self.max_calls!r}."
            )
        if self.max_usd is not None and not self.max_usd >= 0:
            raise ValueError(f"The 'max_usd' parameter of Budget must be >= 0 or None; got {self.max_usd!r}.")
        if not 0 <= self.burst_s <= DAY_S:
            raise ValueError(f"The 'burst_s' parameter of Budget must be from 0 to 86400; got {self.burst_s!r}.")

    def share(self, unix_s: float) -> float:
        """The fraction of each cap that may be spent by ``unix_s`` (1.0 unpaced)."""
        if not self.paced:
            return 1.0
        burst = self.burst_s / DAY_S
        return burst + (1.0 - burst) * (unix_s % DAY_S) / DAY_S


class BudgetTracker:
    """Reserves judge calls against today's paced budget before they go out.

    Today's spend is read from the ledger (so a restart does not reset it) and kept current
    with :meth:`settle`. A call is started only if the spend so far plus the calls in flight,
    each at the average cost per call seen today, stay within the share of the budget the
    clock allows (:meth:`Budget.share`); so the budget is exceeded at most by what retries of
    in-flight calls cost beyond that average. ``refusal`` says why the last refusal happened.
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
        self._uncosted = 0
        self._in_flight = 0
        self.refusal = ""
        self._warned_uncosted = False

    def _refresh(self, now_s: float) -> None:
        day = int(now_s // DAY_S)
        if day != self._day:
            self._day = day
            self.calls, self.usd, self._costed, self._uncosted = spend_today(
                self.store, self.project, PURPOSE_SAMPLE, now_s)

    def _average_usd(self) -> float:
        return self.usd / self._costed if self._costed else 0.0

    def try_reserve(self) -> bool:
        """Reserve one judgement; ``False`` (and ``refusal`` set) when it would break the budget."""
        now = self._clock()
        self._refresh(now)
        self.refusal = self._refused(now)
        if self.refusal:
            return False
        self._in_flight += 1
        return True

    def _refused(self, now_s: float) -> str:
        b = self.budget
        share = b.share(now_s)
        if b.max_calls is not None and self.calls + self._in_flight + 1 > b.max_calls * share:
            return f"{self.calls + self._in_flight} of {b.max_calls} calls used today" + _paced_note(share, now_s)
        if b.max_usd is None:
            return ""
        if self._uncosted:
            self._warn_uncosted()
            return (f"{self._uncosted} answered judge calls today have no known cost, so the {usd_text(b.max_usd)} cap "
                    "cannot be checked")
        limit = b.max_usd * share
        if self.usd >= limit or self.usd + (self._in_flight + 1) * self._average_usd() > limit:
            return f"{usd_text(self.usd)} of {usd_text(b.max_usd)} spent today" + _paced_note(share, now_s)
        return ""

    def _warn_uncosted(self) -> None:
        if not self._warned_uncosted:
            self._warned_uncosted = True
            logger.warning(
                "project %r: %d judge calls today were answered with no known cost, so the daily dollar cap "
                "(%s) cannot be checked; sampled judging stops until 00:00 UTC. Give the judge's price "
                "(--judge-price-input-mtok and --judge-price-output-mtok) or turn the dollar cap off.",
                self.project, self._uncosted, usd_text(self.budget.max_usd),
            )

    def settle(self, calls: int, cost_usd: float | None, *, answered: bool = True) -> None:
        """A reserved judgement finished after ``calls`` HTTP requests costing ``cost_usd``.

        ``answered``: the judge replied, so the call was paid for; without a cost, the dollar cap
        can no longer be checked today. (Failed calls without a cost were not answered.)
        """
        self._in_flight = max(0, self._in_flight - 1)
        self.calls += calls
        if cost_usd is not None:
            self.usd += cost_usd
            self._costed += 1
        elif answered:
            self._uncosted += 1

    def release(self) -> None:
        """A reserved judgement was not attempted (e.g. the breaker was open)."""
        self._in_flight = max(0, self._in_flight - 1)


def _paced_note(share: float, now_s: float) -> str:
    if share >= 1:
        return ""
    return f" (paced: {share:.0%} of the day's budget by {time.strftime('%H:%M', time.gmtime(now_s))} UTC)"


def unpriced_judge_message(model: str, max_usd: float, *, give_price: str, no_cap: str) -> str:
    """Why a judge with no known price cannot run under a dollar cap, and the two ways out."""
    return (f"The judge model {model!r} has no known price (genai-prices lacks it), so the daily dollar cap "
            f"({usd_text(max_usd)}) could not be enforced. Give its price with {give_price} (USD per million tokens; "
            f"0 and 0 for a free self-hosted model), or turn the dollar cap off with {no_cap} "
            "(the call cap still holds).")


def require_price(budget: Budget | None, judge: Judge) -> None:
    """Raise ``ValueError`` when ``budget`` caps dollars and ``judge`` says its price is unknown
    (``price_known = False``, as :class:`~._client.JudgeClient` does for a model genai-prices
    lacks when no ``prices`` were given). A dollar cap that cannot count is refused, not ignored."""
    if budget is None or budget.max_usd is None or getattr(judge, "price_known", True):
        return
    raise ValueError(unpriced_judge_message(judge.model, budget.max_usd, give_price="JudgeClient(prices=...)",
                                            no_cap="Budget(max_usd=None)"))

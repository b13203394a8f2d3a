"""Error-rate spikes of LLM calls, per service: outages within minutes, creeps within the hour.

Two questions, both against the service's usual error ratio (the median of its last seven daily
ratios, so one bad day moves it not at all, and it drifts neither up nor down):

- **Outage**: over the last 5 minutes at least ``outage_ratio`` (15%) of calls failed, far beyond
  chance (binomial tail <= ``alpha``), by at least ``min_failed_requests`` (5) requests (distinct
  traces: one request retried twice is one failure, not three, which at night's few calls a
  minute is the difference), and the errors outlast a burst: beyond the 3 minutes that hold most
  of them, the rest of the window still has failed requests beyond chance at the usual ratio
  (``burst_alpha``), and no run of calls without an error, between its errors or since the last,
  is longer than chance allows at the window's own ratio (``gap_alpha``). Provider 5xx bursts
  (under 3 minutes, retried by clients) are normal life and fail those tests: one burst sits in 3
  minutes, and two bursts minutes apart leave the minutes between without an error. Both are
  judged against the calls, not as a fixed share: with a fixed "no 3 minutes hold 80% of the
  errors" 58% of 30% outages at 8 calls a minute paged within 5 minutes, against 79% now
  (``bench/outage_windows.py``, which also counts the bursts that page). At 16 calls a minute or
  more a 20% or 30% outage pages at a median 4-5 minutes. Under ~5 calls a minute two bursts
  close together and an outage look alike for the first minutes.
- **Creep**: over the last 30, 45 or 60 minutes the ratio is at least ``creep_factor`` (3.5x) the
  usual, beyond chance (``creep_alpha`` over the hour, a tenth of it over the shorter windows:
  more of them slide past in an hour, and chance clusters of half an hour are common: a Sunday
  morning at 16 calls a minute had 15 errors in 30 minutes where 3.4 are usual, 2e-6), with the
  errors spread like the calls (no 15 minutes hold a share of the errors 0.4 above their share of
  the calls), and still so over the last 10 minutes; the minutes that paged already are left
  out (an outage's, and a creep's once its alert clears: the hour after a 30-minute outage at
  13 calls a minute, read as a creep, paged again on two stray errors). A busy service's creep
  is beyond chance within half an hour, and a 4x creep takes 50 minutes to lift a whole hour to
  3.5x; a quiet service's needs the hour. Burst minutes (more errors than ``1 + 10 x usual x
  calls``) are left out first, so provider bursts, however many in the hour, never look like a
  creep.

Hysteresis, by what fired: an outage holds while the last 5 minutes stay at 10%, or at twice the
usual ratio beyond chance (at a usual 0.3%, one stray error in 90 calls is twice the usual and
held an outage 16 minutes past its end), so it resolves minutes after the provider recovers; a
creep (few errors a minute) holds while the last 12 minutes stay at twice the usual ratio, so a
sparse minute does not end it. Below that it clears, and the evaluator resolves it once the
clear has lasted.
With no calls in the last 10 minutes the rule says nothing, so the alert neither fires nor
resolves. ``since`` is the first minute of the breach, not the window's start.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlencode

import numpy as np

from ._model import BREACH, CLEAR, ERROR_SPIKE, HOLD, Alert, Verdict

BUCKET_S = 10
WINDOW = timedelta(hours=1)
BUCKETS = int(WINDOW.total_seconds()) // BUCKET_S
_PER_MINUTE = 60 // BUCKET_S
OUTAGE, CREEP = "outage", "creep"
CREEP_WINDOWS = (30, 45, 60)  # minutes
BURST = 180 // BUCKET_S  # buckets: a provider burst and its retries fit in 3 minutes
ONGOING = 10  # minutes: a creep is still going on (as the cost rule's RECENT)


@dataclass(frozen=True, slots=True)
class ServiceWindow:
    """One service's LLM calls over the last hour in 10-second buckets, oldest first (arrays of
    :data:`BUCKETS`): calls, errors, errors the SDK classed transient (timeouts, 429, 5xx), and
    failed requests (distinct traces with an error; ``None``: taken to be the errors)."""

    calls: np.ndarray
    errors: np.ndarray
    transient: np.ndarray
    failed_requests: np.ndarray | None = None


@dataclass(frozen=True, slots=True)
class ErrorRateRule:
    """Parameters. ``slo``'s complement is the usual ratio assumed for a service with under two
    days of history."""

    slo: float = 0.995
    outage_ratio: float = 0.15
    creep_factor: float = 3.5
    hold_factor: float = 2.0
    alpha: float = 1e-6
    creep_alpha: float = 1e-5
    hold_alpha: float = 0.01
    min_usual: float = 0.001
    min_failed_requests: int = 5
    gap_alpha: float = 0.3
    burst_alpha: float = 0.01

    def __post_init__(self) -> None:
        if not 0.0 < self.slo < 1.0:
            raise ValueError(f"The 'slo' parameter of ErrorRateRule must be in (0, 1); got {self.slo!r}.")
        if not 0.0 < self.outage_ratio < 1.0:
            raise ValueError(
                f"The 'outage_ratio' parameter of ErrorRateRule must be in (0, 1); got {self.outage_ratio!r}."
            )
        if self.creep_factor <= self.hold_factor or self.hold_factor <= 1.0:
            raise ValueError("ErrorRateRule needs creep_factor > hold_factor > 1; got "
                             f"{self.creep_factor!r} and {self.hold_factor!r}.")

    def usual(self, daily_ratios: list[float]) -> float:
        """The usual error ratio from the last days' ratios (the budget without two of them)."""
        usual = float(np.median(daily_ratios)) if len(daily_ratios) >= 2 else 1.0 - self.slo
        return max(usual, self.min_usual)

    def evaluate(self, project: str, service: str, w: ServiceWindow, usual: float, now: datetime,
                 top_labels: dict[str, str] | None = None, held_as: str = CREEP,
                 paged_until: datetime | None = None) -> Verdict | None:
        """The verdict on ``service`` at ``now``; ``None`` without calls in the last 10 minutes.
        ``held_as`` is what the firing alert (if any) fired as, :data:`OUTAGE` or :data:`CREEP`
        (the longer hold, the safe guess after a restart); the breach says it in ``numbers["outage"]``.
        ``paged_until`` ends the minutes that paged already (an outage's last breach, or a creep's
        whose alert has cleared since): the creep test leaves them out and says nothing with under
        30 left, so an hour that still holds an incident's errors does not page for them again."""
        calls, errors = w.calls.astype(float), w.errors.astype(float)
        if calls[-10 * _PER_MINUTE:].sum() == 0:
            return None
        labels = {"project": project, "service": service}
        five = slice(-5 * _PER_MINUTE, None)
        n5, e5 = calls[five].sum(), errors[five].sum()
        kind, first = None, 0
        failed = (w.failed_requests if w.failed_requests is not None else w.errors)[five].astype(float)
        if (e5 and e5 / n5 >= self.outage_ratio and _tail(e5, n5, usual) <= self.alpha
                and failed.sum() >= self.min_failed_requests
                and _outlasts_burst(calls[five], errors[five], failed, usual, self.burst_alpha)
                and _steady(calls[five], errors[five], self.gap_alpha)):
            kind, first = OUTAGE, _onset(calls, errors, self.outage_ratio)
        else:
            minute_calls, minute_errors = _creep_minutes(calls, errors, usual)
            skip = 0
            if paged_until is not None:
                skip = min(60, max(0, 60 - int((now - paged_until).total_seconds() // 60)))
                minute_errors[:skip], minute_calls[:skip] = 0, 0
            recent_n, recent_e = minute_calls[-ONGOING:].sum(), minute_errors[-ONGOING:].sum()
            if (skip <= 30 and recent_e >= self.creep_factor * usual * recent_n
                    and any(self._creeps(minute_calls[-m:], minute_errors[-m:], usual,
                                         self.creep_alpha if m == 60 else self.creep_alpha / 10)
                            for m in CREEP_WINDOWS)):
                kind, first = CREEP, _PER_MINUTE * _onset(minute_calls, minute_errors, self.creep_factor * usual, 5)
        if kind is None:
            minutes = 5 if held_as == OUTAGE else 12
            minute_calls, minute_errors = _creep_minutes(calls, errors, usual)
            n_hold, e_hold = minute_calls[-minutes:].sum(), minute_errors[-minutes:].sum()
            held = bool(n5 and e5 / n5 >= 0.10) or (
                e_hold >= self.hold_factor * usual * n_hold
                and (held_as != OUTAGE or _tail(e_hold, n_hold, usual) <= self.hold_alpha))
            return Verdict(HOLD if held else CLEAR, Alert(ERROR_SPIKE, labels, "", now))
        since = (now - WINDOW + timedelta(seconds=BUCKET_S * first)).replace(second=0, microsecond=0)
        return Verdict(BREACH, self._alert(kind, labels, w, usual, since, now, top_labels or {}))

    def _creeps(self, minute_calls: np.ndarray, minute_errors: np.ndarray, usual: float, alpha: float) -> bool:
        """Whether these minutes' errors are ``creep_factor`` times the usual, beyond chance
        (``alpha``), and spread like their calls."""
        n, e = minute_calls.sum(), minute_errors.sum()
        return bool(e >= self.creep_factor * usual * n and _tail(e, n, usual) <= alpha
                    and _spread_like_calls(minute_errors, minute_calls))

    def _alert(self, kind: str, labels: dict[str, str], w: ServiceWindow, usual: float, since: datetime,
               now: datetime, top_labels: dict[str, str]) -> Alert:
        start = max(0, BUCKETS - int((now - since).total_seconds()) // BUCKET_S)
        n, e, tr = int(w.calls[start:].sum()), int(w.errors[start:].sum()), int(w.transient[start:].sum())
        ratio = e / n if n else 0.0
        service = labels["service"]
        what = "outage" if kind == OUTAGE else "error rate creeping up"
        return Alert(
            name=ERROR_SPIKE, labels=labels,
            summary=(f"{service}: {what}, {ratio:.1%} of {n:,} LLM calls failed since {since:%H:%M} UTC "
                     f"({ratio / usual:.0f}x the usual {usual:.2%})"),
            since=since,
            numbers={"error_rate": ratio, "usual_error_rate": usual, "requests": float(n), "errors": float(e),
                     "transient_errors": float(tr), "logic_errors": float(e - tr),
                     "outage": float(kind == OUTAGE)},
            details=(f"{tr:,} transient (timeouts, 429, 5xx) and {e - tr:,} logic errors (4xx, validation)."
                     + most_affected(top_labels)),
            link="/traces?" + urlencode({"service": service, "status": "error"}),
        )


@dataclass(slots=True)
class ServiceMemory:
    """What one service's verdicts leave for its next: what its last breach fired as, when, and
    the end of the minutes that paged already (an outage's at each of its breaches, any alert's
    at its first clear). The hour holds an incident's errors for an hour after it ends: without
    this, two stray errors in ten minutes after a creep's alert cleared paged those errors again."""

    fired_as: str = CREEP
    breached_at: datetime | None = None
    paged_until: datetime | None = None

    def verdict(self, rule: ErrorRateRule, project: str, service: str, w: ServiceWindow, usual: float,
                now: datetime) -> Verdict | None:
        """``rule``'s verdict at ``now``, remembered for the next."""
        verdict = rule.evaluate(project, service, w, usual, now, held_as=self.fired_as, paged_until=self.paged_until)
        if verdict is not None and verdict.state == CLEAR and self.breached_at is not None:
            self.paged_until, self.breached_at = self.breached_at, None
        elif verdict is not None and verdict.state == BREACH:
            self.fired_as = OUTAGE if verdict.alert.numbers.get("outage") else CREEP
            self.breached_at = now
            if self.fired_as == OUTAGE:
                self.paged_until = now
        return verdict


def most_affected(top_labels: dict[str, str]) -> str:
    """The alert body's sentence naming the tenant, model, ... with the most errors."""
    return "".join(f" Most affected {k}: {v}." for k, v in top_labels.items())


def _tail(k: float, n: float, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    # scipy.special, not scipy.stats: the same function, without a second of importing scipy.stats
    # at the first evaluation; the app's import does not load SciPy at all
    from scipy.special import bdtrc

    below = math.floor(k - 1)  # P(X >= k) = P(X > below)
    if below < 0:
        return 1.0
    return 0.0 if below >= int(n) else float(bdtrc(below, int(n), p))


def _outlasts_burst(calls: np.ndarray, errors: np.ndarray, failed: np.ndarray, usual: float,
                    alpha: float) -> bool:
    """Whether the window's errors do not fit in one burst: outside the 3 minutes that hold most
    of them, its failed requests are still beyond chance at the usual ratio (``alpha``). A burst
    beside a stray error is a burst; an outage's minutes outside any 3 fail as its others do."""
    crowded = int(np.argmax(np.convolve(errors, np.ones(BURST), mode="valid")))
    outside = np.ones(len(calls), dtype=bool)
    outside[crowded:crowded + BURST] = False
    return _tail(failed[outside].sum(), calls[outside].sum(), usual) <= alpha


def _steady(calls: np.ndarray, errors: np.ndarray, alpha: float) -> bool:
    """Whether the window's errors keep coming as an outage's do: no run of calls without an
    error, between its errors or since the last, longer than chance allows at the window's own
    ratio (the chance of a run that long among that many errors is about ``errors x (1 - ratio)
    ^ run``; at ``alpha`` or under, it is no outage). Two provider bursts minutes apart (or one
    that has ended) leave such a run; at a few calls a minute they are spread over the window
    as an outage is."""
    hit = np.nonzero(errors)[0]
    if len(hit) == 0:
        return False
    ratio = min(errors.sum() / max(calls.sum(), 1.0), 0.99)
    total = np.cumsum(calls)
    runs = total[np.append(hit[1:] - 1, len(calls) - 1)] - total[hit]  # calls after each error, to the next
    return bool(errors.sum() * (1.0 - ratio) ** runs.max() > alpha)


def _spread_like_calls(minute_errors: np.ndarray, minute_calls: np.ndarray) -> bool:
    """The minutes' errors (burst minutes out) follow their calls: no 15 minutes hold a share of
    the errors 0.4 above their share of the calls. A creep is spread like the traffic, while a
    short outage sits in a few minutes of it (a service whose calls all came in one minute may
    have its errors there too)."""
    window = np.ones(15)
    errors, calls = np.convolve(minute_errors, window, mode="valid"), np.convolve(minute_calls, window, mode="valid")
    return bool((errors / max(minute_errors.sum(), 1.0) - calls / max(minute_calls.sum(), 1.0)).max() <= 0.4)


def _creep_minutes(calls: np.ndarray, errors: np.ndarray, usual: float) -> tuple[np.ndarray, np.ndarray]:
    """Calls and errors per minute, bursts left out: a minute with more errors than
    ``1 + 10 x usual x calls`` is a burst (a creep to 4x makes such a minute about once in a
    hundred), which the outage test judges; in the creep's hour it would count like a creep. The
    minutes either side of a burst go with it: its retries and its first seconds spill into them
    (at night, one error in a minute of one call is no burst, and three bursts' spill made a
    creep of 5 errors in 54 calls). A minute holding half the hour's calls is the hour's traffic,
    not a burst in it."""
    minute_calls = calls.reshape(-1, _PER_MINUTE).sum(axis=1)
    minute_errors = errors.reshape(-1, _PER_MINUTE).sum(axis=1)
    core = (minute_errors > 1 + np.floor(10 * usual * minute_calls)) & (minute_calls < 0.5 * minute_calls.sum())
    burst = core.copy()
    burst[1:] |= core[:-1]
    burst[:-1] |= core[1:]
    return np.where(burst, 0.0, minute_calls), np.where(burst, 0.0, minute_errors)


def _onset(calls: np.ndarray, errors: np.ndarray, ratio: float, width: int = _PER_MINUTE) -> int:
    """Index of the first bucket of the breach: the start of the longest stretch up to now whose
    ratio is at least ``ratio``, moved forward to where the next ``width`` buckets reach it too
    (so the normal minute before an outage is not its first)."""
    n, e = np.cumsum(calls[::-1]), np.cumsum(errors[::-1])
    ok = (e >= ratio * n) & (n > 0)
    start = len(calls) - 1 - (int(np.nonzero(ok)[0].max()) if ok.any() else 0)
    while start < len(calls) - 1 and (
        errors[start] == 0 or errors[start:start + width].sum() < ratio * calls[start:start + width].sum()
    ):
        start += 1
    return start

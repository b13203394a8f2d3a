"""Error-rate spikes of LLM calls, per service: an outage pages within minutes, a creep within the hour.

What is measured (:class:`ServiceWindow`, read by ``_reads.error_windows``): a service's LLM
calls, errors and failed requests (distinct traces with an error: one request retried twice is
one failure) over the last hour, in 10-second buckets. Everything is judged against the
service's *usual* error ratio (:meth:`ErrorRateRule.usual`): the median of its last seven daily
ratios, burst minutes left out, so one bad day moves it not at all; ``1 - slo`` with under two
days of history; never under ``min_usual``. "Beyond chance" means a binomial tail at the usual
ratio at or under the ``*_alpha`` named. Names below are fields of :class:`ErrorRateRule`.

No data:

1. No call in the last ``no_data_minutes`` (10): no verdict, so a firing alert neither fires again
   nor resolves (silence never looks healthy).

Outage, fires when all of these hold over the last ``outage_window_minutes`` (5):

1. at least ``outage_ratio`` (15%) of the calls failed;
2. that many errors are beyond chance (``alpha``, 1e-6);
3. at least ``min_failed_requests`` (5) requests failed;
4. the errors outlast a burst: outside the ``burst_minutes`` (3) that hold most of them, the
   failed requests are still beyond chance (``burst_alpha``, 0.01);
5. the errors keep coming: no run of calls without an error (between two errors, or since the
   last) is longer than chance allows at the window's own ratio (``gap_alpha``, 0.3), and the
   run since the last error alone is not that unlikely (``end_alpha``, 0.05).

Tests 4 and 5 tell an outage from provider 5xx bursts (under 3 minutes, retried by clients),
which are normal life: one burst sits in 3 minutes, two bursts minutes apart leave the minutes
between them without an error. Two bursts back to back (4-5 minutes of errors) pass both while
the second goes on, and some right after it ends: the run since the last error is one run, so
it is judged alone, while the runs between errors are judged as the longest of many.

Creep, judged when there is no outage; fires when all of these hold:

1. the hour is read per minute without its burst minutes: a minute with more errors than
   ``1 + burst_minute_factor (10) x usual x calls`` that holds under ``burst_minute_max_share``
   (half) of the hour's calls is a burst, and the minutes either side go with it (the outage test
   judges bursts);
2. the minutes that paged already are left out (those up to the memory's ``paged_until``: an
   outage's last breach, a creep's first clear); with fewer minutes left than the shortest creep
   window (30), there is no creep;
3. the last ``creep_ongoing_minutes`` (10) are at least ``creep_factor`` (3.5x) the usual ratio;
4. in at least one of the windows ``creep_windows_minutes`` (the last 30, 45 or 60 minutes):
   the ratio is at least ``creep_factor`` the usual, beyond chance (``creep_alpha``, 1e-5, over
   the hour; divided by ``creep_short_alpha_divisor`` (10) over the shorter windows, as more of
   them slide past in an hour), and the errors are spread like the calls: no
   ``creep_spread_minutes`` (15) hold a share of the errors more than ``creep_spread_excess``
   (0.4) above their share of the calls;
5. at least ``min_failed_requests`` (5) requests failed since its first minute: on a service
   of a call every few minutes one request tried six times (a retry storm) is the hour's
   errors, in a minute too large a share of the calls to count as a burst, and it is not a creep.

A creep whose last ``outage_window_minutes`` failed at ``outage_ratio`` or more is an outage the
outage test doubted (its spread): it fires as an outage, and is dated as one.

When it fires, ``since`` is the breach's first minute, not the window's start. An outage's: the
start of the stretch up to now with the most evidence of failing at ``outage_ratio`` rather than
the usual ratio (each error counts for, each success against), so stray errors half an hour
before it, with the successes between, are not its start. A creep's: the start of the longest
stretch up to now at ``creep_factor`` x usual, moved on to where the next
``creep_onset_minutes`` (5) reach that ratio too. The evaluator then moves it to the first failed
call in that minute (``_rules.ErrorRule``), the time the page, its card and every channel give.

Hold and resolve, while an alert fires and neither test breaches:

1. it holds while the last ``outage_window_minutes`` (5) stay at ``outage_hold_ratio`` (10%);
2. one that fired as an outage holds while the last ``outage_hold_minutes`` (5), burst minutes
   left out, stay at ``hold_factor`` (2x) the usual ratio, beyond chance (``hold_alpha``, 0.01);
3. one that fired as a creep holds until the recent minutes are evidence that it ended: for some
   stretch of the last ``creep_end_max_minutes`` (60) ending now, bursts in, the usual
   ratio explains its errors ``creep_end_odds`` (100) times better than the creep's ratio (the
   geometric mean of ``creep_factor`` x usual and the ratio of its last breach, the whole
   incident so far). A short quiet stretch of a low-rate creep is not such evidence, so it does
   not end it. One that fired as an outage, when 1 and 2 fail, holds the same way against the
   geometric mean of ``outage_hold_ratio`` and its breach's ratio, while a call failed in the last
   ``outage_quiet_minutes`` (10): a quiet service's outage dips under both by chance, resolved
   and paged again (BENCHMARKS.md: 'Pages per outage'), and one of a call every few minutes
   would hold for hours;
4. otherwise the verdict is clear, and the evaluator resolves the alert once the clear has lasted
   ``EvaluatorConfig.clear_for`` (2 minutes).

Measured in BENCHMARKS.md, section 'The pager'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from urllib.parse import urlencode

import numpy as np

from ._model import BREACH, CLEAR, ERROR_SPIKE, HOLD, Alert, Verdict

BUCKET_S = 10
"""Width of the buckets a :class:`ServiceWindow` counts in, in seconds."""
WINDOW = timedelta(hours=1)
"""The span of a :class:`ServiceWindow`: the longest window any test reads."""
BUCKETS = int(WINDOW.total_seconds()) // BUCKET_S
"""Buckets in a :class:`ServiceWindow`."""
WINDOW_MINUTES = BUCKETS * BUCKET_S // 60
"""Minutes in a :class:`ServiceWindow`."""
_PER_MINUTE = 60 // BUCKET_S
OUTAGE, CREEP = "outage", "creep"


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
    """The error-spike rule's settings (the module docstring says how each is used).

    Units: ``*_ratio`` is a share of the calls, ``*_factor`` a multiple of the usual ratio,
    ``*_alpha`` a probability (a binomial tail), ``*_share`` a fraction.
    """

    slo: float = 0.995
    """Its complement is the usual ratio of a service with under two days of history."""
    min_usual: float = 0.001
    """The usual ratio is never taken lower (a flawless week would make one error a spike)."""
    no_data_minutes: int = 10
    """No call in this many minutes: no verdict."""
    # outage
    outage_window_minutes: int = 5
    """The outage test's window, and the hold's share test's."""
    outage_ratio: float = 0.15
    """Share of the calls that failed over the outage window to fire."""
    alpha: float = 1e-6
    """The outage's errors must be this unlikely at the usual ratio."""
    min_failed_requests: int = 5
    """Failed requests (distinct traces) over the outage window to fire."""
    burst_minutes: int = 3
    """A provider burst and its retries fit in this many minutes."""
    burst_alpha: float = 0.01
    """Outside its densest ``burst_minutes``, the outage's failed requests must be this unlikely."""
    gap_alpha: float = 0.3
    """A run of calls without an error this unlikely at the window's own ratio: no outage."""
    end_alpha: float = 0.05
    """The run of calls since the last error alone this unlikely at the window's own ratio: the
    errors have stopped, no outage."""
    # creep
    creep_factor: float = 3.5
    """Multiple of the usual ratio that makes a creep."""
    creep_windows_minutes: tuple[int, ...] = (30, 45, 60)
    """The windows (ending now) a creep may be found in."""
    creep_alpha: float = 1e-5
    """A creep's errors over the hour must be this unlikely at the usual ratio."""
    creep_short_alpha_divisor: int = 10
    """Over the shorter creep windows, ``creep_alpha`` is divided by this."""
    creep_ongoing_minutes: int = 10
    """The creep must still be at ``creep_factor`` over this many last minutes."""
    creep_spread_minutes: int = 15
    """The stretch of minutes the spread test slides over the window."""
    creep_spread_excess: float = 0.4
    """Largest share of the errors above the share of the calls any stretch may hold."""
    creep_onset_minutes: int = 5
    """A creep's first minute is where this many minutes reach ``creep_factor`` too."""
    burst_minute_factor: float = 10.0
    """A minute with more errors than ``1 + this x usual x calls`` is a burst, left out of creeps."""
    burst_minute_max_share: float = 0.5
    """A minute with at least this share of the hour's calls is the traffic, never a burst."""
    # hold
    hold_factor: float = 2.0
    """Multiple of the usual ratio that keeps a firing alert."""
    hold_alpha: float = 0.01
    """An outage's hold at ``hold_factor`` must be this unlikely at the usual ratio."""
    outage_hold_ratio: float = 0.10
    """Share of the calls failed over the outage window that keeps any firing alert."""
    outage_hold_minutes: int = 5
    """The window of the ``hold_factor`` test for an alert that fired as an outage."""
    outage_quiet_minutes: int = 10
    """An outage's alert holds on the evidence of its whole incident only while a call failed in
    this many last minutes."""
    creep_end_odds: float = 100.0
    """How much better the usual ratio must explain a recent stretch than the creep's to end it."""
    creep_end_max_minutes: int = 60
    """The longest recent stretch the creep's end is looked for in."""

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
                 memory: ServiceMemory | None = None) -> Verdict | None:
        """The verdict on ``service`` at ``now``; ``None`` without calls in the last
        ``no_data_minutes``. ``memory`` is what the service's earlier verdicts left (default: none):
        what the firing alert (if any) fired as, :data:`OUTAGE` or :data:`CREEP` (the longer hold,
        the safe guess after a restart), and ``paged_until``, the end of the minutes that paged
        already, which the creep test leaves out. A breach says what it is in
        ``numbers["outage"]``."""
        memory = memory or ServiceMemory()
        calls, errors = w.calls.astype(float), w.errors.astype(float)
        if calls[-self.no_data_minutes * _PER_MINUTE:].sum() == 0:
            return None
        labels = {"project": project, "service": service}
        first = self._outage_onset(w, calls, errors, usual)
        kind = OUTAGE
        minute_calls, minute_errors = _per_minute(calls), _per_minute(errors)  # for the creep test and the hold
        if first is None:
            kind, first = CREEP, self._creep_onset(minute_calls, minute_errors, usual, now, memory.paged_until)
            if first is not None and _failed(w)[first:].sum() < self.min_failed_requests:
                first = None
            if first is not None and self._outage_like(calls, errors):
                # a creep test that found calls failing at an outage's ratio found an outage (one
                # whose spread the outage test doubted): said so, and dated from its own onset,
                # not from the stray errors of the half hour before it
                kind, first = OUTAGE, _outage_start(calls, errors, self.outage_ratio, usual)
        if first is None:
            held = self._holds(calls, errors, minute_calls, minute_errors, usual, memory)
            return Verdict(HOLD if held else CLEAR, Alert(ERROR_SPIKE, labels, "", now))
        since = (now - WINDOW + timedelta(seconds=BUCKET_S * first)).replace(second=0, microsecond=0)
        return Verdict(BREACH, self._alert(kind, labels, w, usual, since, now))

    def _outage_onset(self, w: ServiceWindow, calls: np.ndarray, errors: np.ndarray, usual: float) -> int | None:
        """The outage's first bucket, or ``None`` without an outage (the module's outage list)."""
        window = slice(-self.outage_window_minutes * _PER_MINUTE, None)
        n, e = calls[window].sum(), errors[window].sum()
        failed = _failed(w)[window].astype(float)
        if (e and e / n >= self.outage_ratio and _tail(e, n, usual) <= self.alpha
                and failed.sum() >= self.min_failed_requests
                and _outlasts_burst(calls[window], errors[window], failed, usual, self.burst_alpha,
                                    self.burst_minutes * _PER_MINUTE)
                and _steady(calls[window], errors[window], self.gap_alpha, self.end_alpha)):
            return _outage_start(calls, errors, self.outage_ratio, usual)
        return None

    def _outage_like(self, calls: np.ndarray, errors: np.ndarray) -> bool:
        """Whether the last ``outage_window_minutes`` failed at ``outage_ratio`` or more."""
        window = slice(-self.outage_window_minutes * _PER_MINUTE, None)
        n = calls[window].sum()
        return bool(n and errors[window].sum() / n >= self.outage_ratio)

    def _creep_onset(self, every_calls: np.ndarray, every_errors: np.ndarray, usual: float, now: datetime,
                     paged_until: datetime | None) -> int | None:
        """The creep's first bucket, or ``None`` without a creep (the module's creep list), from
        the window's calls and errors per minute."""
        minute_calls, minute_errors = self._creep_minutes(every_calls, every_errors, usual)
        skip = 0
        if paged_until is not None:
            skip = min(WINDOW_MINUTES, max(0, WINDOW_MINUTES - int((now - paged_until).total_seconds() // 60)))
            minute_errors[:skip], minute_calls[:skip] = 0, 0
        ongoing = -self.creep_ongoing_minutes
        recent_n, recent_e = minute_calls[ongoing:].sum(), minute_errors[ongoing:].sum()
        if (skip <= WINDOW_MINUTES - min(self.creep_windows_minutes)
                and recent_e >= self.creep_factor * usual * recent_n
                and any(self._creeps(minute_calls[-m:], minute_errors[-m:], usual,
                                     self.creep_alpha if m == WINDOW_MINUTES
                                     else self.creep_alpha / self.creep_short_alpha_divisor)
                        for m in self.creep_windows_minutes)):
            return _PER_MINUTE * _onset(minute_calls, minute_errors, self.creep_factor * usual,
                                        self.creep_onset_minutes)
        return None

    def _holds(self, calls: np.ndarray, errors: np.ndarray, every_calls: np.ndarray, every_errors: np.ndarray,
               usual: float, memory: ServiceMemory) -> bool:
        """Whether a firing alert holds (the module's hold list); ``every_calls`` and
        ``every_errors``: the window's per minute, bursts too."""
        window = slice(-self.outage_window_minutes * _PER_MINUTE, None)
        n, e = calls[window].sum(), errors[window].sum()
        if n and e / n >= self.outage_hold_ratio:
            return True
        # every minute, bursts too: leaving out an incident's busiest minutes would make its end
        if memory.fired_as != OUTAGE:
            return not self._ended(every_calls, every_errors, usual, self.creep_factor * usual, memory.incident_ratio)
        minute_calls, minute_errors = self._creep_minutes(every_calls, every_errors, usual)
        n_hold = minute_calls[-self.outage_hold_minutes:].sum()
        e_hold = minute_errors[-self.outage_hold_minutes:].sum()
        if e_hold >= self.hold_factor * usual * n_hold and _tail(e_hold, n_hold, usual) <= self.hold_alpha:
            return True
        # a quiet service's outage (a few calls a minute) dips under both by chance, and paged again;
        # but a service of a call every few minutes would hold for hours on that evidence alone
        quiet = errors[-self.outage_quiet_minutes * _PER_MINUTE:].sum() == 0
        return not quiet and not self._ended(every_calls, every_errors, usual, self.outage_hold_ratio,
                                             memory.incident_ratio)

    def _ended(self, minute_calls: np.ndarray, minute_errors: np.ndarray, usual: float, weakest: float,
               incident_ratio: float | None) -> bool:
        """Whether some stretch of the last ``creep_end_max_minutes`` favours the usual ratio over
        the incident's by ``creep_end_odds`` (a likelihood ratio of the two binomials)."""
        # between the weakest incident that keeps its alert and the breach's own ratio, which runs
        # high: a breach is found where errors happen to crowd, and that ratio ended a 2% creep's
        # alert in a quiet quarter hour of it
        if usual >= weakest:
            return True
        creep = min(math.sqrt(max(incident_ratio or 0.0, weakest) * weakest), 0.99)
        n = np.cumsum(minute_calls[::-1])[:self.creep_end_max_minutes]
        e = np.cumsum(minute_errors[::-1])[:self.creep_end_max_minutes]
        log_odds = e * math.log(usual / creep) + (n - e) * math.log((1 - usual) / (1 - creep))
        return bool(log_odds.max() >= math.log(self.creep_end_odds))

    def _creeps(self, minute_calls: np.ndarray, minute_errors: np.ndarray, usual: float, alpha: float) -> bool:
        """Whether these minutes' errors are ``creep_factor`` times the usual, beyond chance
        (``alpha``), and spread like their calls."""
        n, e = minute_calls.sum(), minute_errors.sum()
        return bool(e >= self.creep_factor * usual * n and _tail(e, n, usual) <= alpha
                    and _spread_like_calls(minute_errors, minute_calls, self.creep_spread_minutes,
                                           self.creep_spread_excess))

    def _creep_minutes(self, minute_calls: np.ndarray, minute_errors: np.ndarray,
                       usual: float) -> tuple[np.ndarray, np.ndarray]:
        """Calls and errors per minute (:func:`_per_minute`), bursts left out, as new arrays: a
        minute with more errors than ``1 + burst_minute_factor x usual x calls`` is a burst (a
        creep to 4x makes such a minute about once in a hundred), which the outage test judges;
        in the creep's hour it would count like a creep. The minutes either side of a burst go
        with it: its retries and its first seconds spill into them. A minute holding
        ``burst_minute_max_share`` of the hour's calls is the hour's traffic, not a burst in it."""
        core = ((minute_errors > 1 + np.floor(self.burst_minute_factor * usual * minute_calls))
                & (minute_calls < self.burst_minute_max_share * minute_calls.sum()))
        burst = core.copy()
        burst[1:] |= core[:-1]
        burst[:-1] |= core[1:]
        return np.where(burst, 0.0, minute_calls), np.where(burst, 0.0, minute_errors)

    def _alert(self, kind: str, labels: dict[str, str], w: ServiceWindow, usual: float, since: datetime,
               now: datetime) -> Alert:
        start = max(0, BUCKETS - int((now - since).total_seconds()) // BUCKET_S)
        n, e, tr = int(w.calls[start:].sum()), int(w.errors[start:].sum()), int(w.transient[start:].sum())
        return error_alert(labels, kind == OUTAGE, n, e, tr, usual, since, now)


def _per_minute(buckets: np.ndarray) -> np.ndarray:
    """A window's 10-second buckets summed per minute."""
    minutes: np.ndarray = buckets.reshape(-1, _PER_MINUTE).sum(axis=1)
    return minutes


def _failed(w: ServiceWindow) -> np.ndarray:
    """The window's failed requests per bucket (its errors where it does not count them)."""
    return w.failed_requests if w.failed_requests is not None else w.errors


def error_alert(labels: dict[str, str], outage: bool, calls: int, errors: int, transient: int, usual: float,
                since: datetime, now: datetime) -> Alert:
    """The error alert of ``calls`` LLM calls since ``since``, ``errors`` of them failed."""
    ratio = errors / calls if calls else 0.0
    service = labels["service"]
    what = "outage" if outage else "error rate creeping up"
    return Alert(
        name=ERROR_SPIKE, labels=labels,
        summary=(f"{service}: {what}, {ratio:.1%} of {calls:,} LLM calls failed since {since:%H:%M:%S} UTC "
                 f"({ratio / usual:.0f}x the usual {usual:.2%})"),
        since=since,
        numbers={"error_rate": ratio, "usual_error_rate": usual, "requests": float(calls), "errors": float(errors),
                 "transient_errors": float(transient), "logic_errors": float(errors - transient),
                 "outage": float(outage)},
        details=(f"Of the {calls:,} LLM calls since then, {errors:,} failed: {transient:,} transient errors"
                 f" (timeouts, 429, 5xx) and {errors - transient:,} logic errors (4xx, validation)."),
        link=traces_link(service, since, now),
    )


def traces_link(service: str, start: datetime, end: datetime, **labels: str) -> str:
    """The traces page of ``service`` over [``start``, ``end``], failures first (plus ``route``
    or ``tenant`` where an alert has them)."""
    return "/traces?" + urlencode({"service": service, **labels, "start": _iso(start), "end": _iso(end),
                                   "status": "error", "sort": "errors"})


def _iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(slots=True)
class ServiceMemory:
    """What one service's verdicts leave for its next: what its last breach fired as, when, and
    the end of the minutes that paged already (an outage's at each of its breaches, any alert's
    at its first clear), and the incident's ratio at its last breach. The hour holds an
    incident's errors for an hour after it ends: without this, they would page again once the
    alert has cleared."""

    fired_as: str = CREEP
    breached_at: datetime | None = None
    paged_until: datetime | None = None
    incident_ratio: float | None = None
    """The error ratio of the last breach: the incident's, since its first minute."""

    def verdict(self, rule: ErrorRateRule, project: str, service: str, w: ServiceWindow, usual: float,
                now: datetime) -> Verdict | None:
        """``rule``'s verdict at ``now``, remembered for the next."""
        verdict = rule.evaluate(project, service, w, usual, now, memory=self)
        if verdict is not None and verdict.state == CLEAR and self.breached_at is not None:
            # the minutes the alert held for paged too: after a creep's end they would page again
            self.paged_until, self.breached_at = now, None
        elif verdict is not None and verdict.state == BREACH:
            self.fired_as = OUTAGE if verdict.alert.numbers.get("outage") else CREEP
            self.breached_at = now
            self.incident_ratio = verdict.alert.numbers.get("error_rate")
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
                    alpha: float, burst: int) -> bool:
    """Whether the window's errors do not fit in one burst: outside the ``burst`` buckets that
    hold most of them, its failed requests are still beyond chance at the usual ratio
    (``alpha``). A burst beside a stray error is a burst; an outage's minutes outside any
    burst's fail as its others do."""
    crowded = int(np.argmax(np.convolve(errors, np.ones(burst), mode="valid")))
    outside = np.ones(len(calls), dtype=bool)
    outside[crowded:crowded + burst] = False
    return _tail(failed[outside].sum(), calls[outside].sum(), usual) <= alpha


def _steady(calls: np.ndarray, errors: np.ndarray, alpha: float, end_alpha: float) -> bool:
    """Whether the window's errors keep coming as an outage's do: no run of calls without an
    error, between its errors or since the last, longer than chance allows at the window's own
    ratio (the chance of a run that long among that many errors is about ``errors x (1 - ratio)
    ^ run``; at ``alpha`` or under, it is no outage), and the run since the last error, one run
    that ends now, not at ``end_alpha`` or under by itself. Two provider bursts minutes apart (or
    one that has ended) leave such a run; at a few calls a minute they are spread over the window
    as an outage is."""
    hit = np.nonzero(errors)[0]
    if len(hit) == 0:
        return False
    ratio = min(errors.sum() / max(calls.sum(), 1.0), 0.99)
    total = np.cumsum(calls)
    runs = total[np.append(hit[1:] - 1, len(calls) - 1)] - total[hit]  # calls after each error, to the next
    # the longest of as many runs as errors, or the one run since the last error (it ends now)
    return bool(errors.sum() * (1.0 - ratio) ** runs.max() > alpha and (1.0 - ratio) ** runs[-1] > end_alpha)


def _spread_like_calls(minute_errors: np.ndarray, minute_calls: np.ndarray, width: int, excess: float) -> bool:
    """The minutes' errors (burst minutes out) follow their calls: no ``width`` minutes hold a
    share of the errors more than ``excess`` above their share of the calls. A creep is spread
    like the traffic, while a short outage sits in a few minutes of it (a service whose calls
    all came in one minute may have its errors there too)."""
    window = np.ones(width)
    errors, calls = np.convolve(minute_errors, window, mode="valid"), np.convolve(minute_calls, window, mode="valid")
    return bool((errors / max(minute_errors.sum(), 1.0) - calls / max(minute_calls.sum(), 1.0)).max() <= excess)


def _outage_start(calls: np.ndarray, errors: np.ndarray, ratio: float, usual: float) -> int:
    """Index of an outage's first bucket: where the stretch ending now most likely began to fail
    at ``ratio`` rather than at ``usual`` (the suffix of the most evidence, a log-likelihood
    ratio: each error counts for, each success against). Stray errors half an hour before, with
    a stretch of successes between, are not its start, however long a stretch the two together
    keep at ``ratio`` (:func:`_onset`, which a quiet service's outage paged late dated from them)."""
    if usual >= ratio:
        return _onset(calls, errors, ratio)
    evidence = errors * math.log(ratio / usual) - (calls - errors) * math.log((1 - usual) / (1 - ratio))
    # the first of equal maxima, counted from now: the shortest such suffix, which starts at an error
    return len(calls) - 1 - int(np.argmax(np.cumsum(evidence[::-1])))


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

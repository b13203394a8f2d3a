"""Judging many spans: bounded concurrency, the budget, the breaker, a progress bar, the ledger.

:class:`JudgeRunner` is what the collector's evaluator runs in the background (via ``JudgeLoop``)
and what ``infersight judge run --since 7d`` runs once as a backfill. :func:`execute` is the
shared engine, also used by panel comparisons.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from infersight.collector.store import Store, usd_text

from . import _records
from ._budget import Budget, BudgetTracker, require_price
from ._client import Judge
from ._errors import CircuitOpen, InvalidVerdict, JudgeCallError, RubricError
from ._rubrics import Rubric
from ._sampler import Sampler
from ._types import SampledSpan, Verdict

_FLUSH_EVERY = 100
ESTIMATED_COST_NOTE = "cost is an upper bound: the judge reported no token usage"
RENDER_ERROR = "render_error"
CIRCUIT_OPEN = "circuit_open"


@dataclass(frozen=True, slots=True)
class Judgement:
    """The outcome of judging one span with one rubric.

    ``outcome`` is ``ok`` (``verdict`` set), ``invalid_verdict``, ``transient``, ``rejected``,
    ``circuit_open`` (not attempted) or ``render_error`` (the rubric failed on this input).
    """

    span: SampledSpan
    rubric: Rubric
    outcome: str
    verdict: Verdict | None = None
    attempts: int = 0
    cost_usd: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    error: str = ""
    cost_estimated: bool = False

    @property
    def called(self) -> bool:
        """Whether the judge was actually asked (so the call belongs in the ledger)."""
        return self.outcome not in (CIRCUIT_OPEN, RENDER_ERROR)

    @property
    def answered(self) -> bool:
        """Whether the judge replied, valid or not (so the call was paid for)."""
        return self.outcome in (_records.OUTCOME_OK, "invalid_verdict")


def judge_one(judge: Judge, rubric: Rubric, span: SampledSpan) -> Judgement:
    """Render ``rubric`` for ``span`` and ask ``judge``; never raises a :class:`JudgeError`."""
    try:
        messages = rubric.render(span)
    except RubricError as exc:
        return Judgement(span, rubric, RENDER_ERROR, error=str(exc))
    started = time.perf_counter()
    try:
        verdict = judge.judge(messages)
    except CircuitOpen as exc:
        return Judgement(span, rubric, CIRCUIT_OPEN, error=str(exc))
    except InvalidVerdict as exc:
        return Judgement(span, rubric, exc.kind, attempts=exc.attempts, cost_usd=exc.cost_usd,
                         input_tokens=exc.input_tokens, output_tokens=exc.output_tokens,
                         latency_s=time.perf_counter() - started, cost_estimated=exc.cost_estimated,
                         error=f"{exc}; {ESTIMATED_COST_NOTE}" if exc.cost_estimated else str(exc))
    except JudgeCallError as exc:
        return Judgement(span, rubric, exc.kind, attempts=exc.attempts,
                         latency_s=time.perf_counter() - started, error=str(exc))
    return Judgement(span, rubric, _records.OUTCOME_OK, verdict=verdict, attempts=verdict.attempts,
                     cost_usd=verdict.cost_usd, input_tokens=verdict.input_tokens,
                     output_tokens=verdict.output_tokens, latency_s=verdict.latency_s,
                     error=ESTIMATED_COST_NOTE if verdict.cost_estimated else "",
                     cost_estimated=verdict.cost_estimated)


@dataclass
class RunReport:
    """What one run did. Counts are of (span, rubric) judgements unless named for spans."""

    sampled_spans: int = 0
    no_content_spans: int = 0
    already_judged: int = 0
    not_applicable: int = 0
    scored: int = 0
    invalid_verdicts: int = 0
    failed: int = 0
    skipped_budget: int = 0
    budget_refusal: str = ""
    skipped_circuit_open: int = 0
    render_errors: int = 0
    calls: int = 0
    cost_usd: float = 0.0
    stopped: str | None = None
    outcomes: dict[str, int] = field(default_factory=dict)

    def add(self, judgement: Judgement) -> None:
        self.outcomes[judgement.outcome] = self.outcomes.get(judgement.outcome, 0) + 1
        if judgement.outcome == _records.OUTCOME_OK:
            self.scored += 1
        elif judgement.outcome == "invalid_verdict":
            self.invalid_verdicts += 1
        elif judgement.outcome == CIRCUIT_OPEN:
            self.skipped_circuit_open += 1
        elif judgement.outcome == RENDER_ERROR:
            self.render_errors += 1
        else:
            self.failed += 1
        self.calls += judgement.attempts
        self.cost_usd += judgement.cost_usd or 0.0

    def summary(self) -> str:
        parts = [
            f"{self.sampled_spans} spans sampled", f"{self.scored} scored",
            f"{self.invalid_verdicts} invalid verdicts", f"{self.failed} failed judge calls",
        ]
        for name, value in (("already judged", self.already_judged), ("without content", self.no_content_spans),
                            ("skipped for budget", self.skipped_budget),
                            ("skipped, breaker open", self.skipped_circuit_open),
                            ("rubric render errors", self.render_errors)):
            if value:
                parts.append(f"{value} {name}")
        parts.append(f"{self.calls} judge calls, {usd_text(self.cost_usd)}")
        if self.stopped:
            detail = f" ({self.budget_refusal})" if self.stopped == "budget" and self.budget_refusal else ""
            parts.append(f"stopped early: {self.stopped}{detail}")
        return "; ".join(parts)


def execute(
    store: Store,
    judge: Judge,
    tasks: Sequence[tuple[SampledSpan, Rubric]],
    *,
    purpose: str,
    source: str,
    concurrency: int = 4,
    budget: BudgetTracker | None = None,
    report: RunReport | None = None,
    progress: bool = False,
    on_judgement: Callable[[Judgement], None] | None = None,
    clock: Callable[[], float] = time.time,
) -> RunReport:
    """Judge ``tasks`` with at most ``concurrency`` calls in flight, writing scores and the ledger.

    Stops submitting when the budget refuses a call (the rest count as ``skipped_budget``) or
    the judge's breaker opens (the rest count as ``skipped_circuit_open``). Rows are written
    every 100 judgements, so an interrupted backfill keeps what it finished; they are stamped
    with ``clock`` (Unix seconds), the same clock the budget reads. Blocking.
    """
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"The 'concurrency' parameter must be a positive integer; got {concurrency!r}.")
    report = report or RunReport()
    bar = _progress(len(tasks), progress)
    scores: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []

    def flush() -> None:
        _records.write(store, scores, calls)
        scores.clear()
        calls.clear()

    def finish(future: Future[Judgement]) -> None:
        judgement = future.result()
        report.add(judgement)
        if budget is not None:
            if judgement.called:
                budget.settle(judgement.attempts, judgement.cost_usd, answered=judgement.answered)
            else:
                budget.release()
        now_ns = int(clock() * 1e9)
        if judgement.called:
            calls.append(_records.call_row(
                judgement.span, judgement.rubric, judge.model, purpose, judgement.outcome,
                attempts=judgement.attempts, input_tokens=judgement.input_tokens,
                output_tokens=judgement.output_tokens, cost_usd=judgement.cost_usd,
                latency_s=judgement.latency_s, error=judgement.error, ts_ns=now_ns,
            ))
        if judgement.verdict is not None:
            scores.append(_records.score_row(judgement.span, judgement.rubric, judgement.verdict, source,
                                             judged_at_ns=now_ns))
        if on_judgement is not None:
            on_judgement(judgement)
        if len(calls) >= _FLUSH_EVERY:
            flush()
        bar.update(1)

    pending: set[Future[Judgement]] = set()
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="infersight-judge") as pool:
        try:
            for index, (span, rubric) in enumerate(tasks):
                while len(pending) >= concurrency:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        finish(future)
                stop = _stop_reason(report, budget)
                if stop is not None:
                    report.stopped = stop
                    left = len(tasks) - index
                    if stop == "budget":
                        report.skipped_budget += left
                        report.budget_refusal = budget.refusal if budget is not None else ""
                    else:
                        report.skipped_circuit_open += left
                    bar.update(left)
                    break
                pending.add(pool.submit(judge_one, judge, rubric, span))
            for future in pending:
                finish(future)
        finally:
            flush()
            bar.close()
    return report


def _stop_reason(report: RunReport, budget: BudgetTracker | None) -> str | None:
    if report.skipped_circuit_open:
        return "the judge's circuit breaker is open"
    if budget is not None and not budget.try_reserve():
        return "budget"
    return None


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


class _ClickBar:
    def __init__(self, total: int) -> None:
        import click

        self._bar = click.progressbar(length=total, label="judging", file=sys.stderr, show_pos=True, show_eta=True)
        self._bar.__enter__()

    def update(self, n: int) -> None:
        self._bar.update(n)

    def close(self) -> None:
        self._bar.__exit__(None, None, None)


def _progress(total: int, enabled: bool) -> _NoBar | _ClickBar:
    return _ClickBar(total) if enabled and total else _NoBar()


class JudgeRunner:
    """Samples spans, judges them with every applicable rubric, records scores and spend.

    Args:
        store: the store holding spans and the judge tables.
        judge: the judge (usually a :class:`~._client.JudgeClient`).
        rubrics: rubrics to apply to each sampled span (those a span lacks the inputs for, such
            as groundedness without retrieved context, are skipped for it).
        project: the project whose spans are judged.
        sampler: which spans; a default :class:`Sampler` on ``store`` if omitted.
        budget: the daily cap, paced over the UTC day (see :class:`~._budget.Budget`); ``None`` for none.
            With a dollar cap, a judge whose price is unknown is refused (``ValueError``).
        concurrency: judge calls in flight at most.
        clock: Unix seconds; what the budget's day and pace and the ledger's times are read from.

    ``run`` blocks; one runner must not run twice at once (the budget is tracked per runner).
    Spans this judge already answered for a rubric version are not judged again, so windows
    may overlap freely.
    """

    def __init__(self, store: Store, judge: Judge, rubrics: Sequence[Rubric], *, project: str,
                 sampler: Sampler | None = None, budget: Budget | None = Budget(), concurrency: int = 4,
                 clock: Callable[[], float] = time.time) -> None:
        if not rubrics:
            raise ValueError("The 'rubrics' parameter of JudgeRunner must name at least one rubric.")
        require_price(budget, judge)
        self.store = store
        self.judge = judge
        self.rubrics = list(rubrics)
        self.project = project
        self.sampler = sampler or Sampler(store)
        self.budget = BudgetTracker(store, project, budget, clock=clock) if budget is not None else None
        self.concurrency = concurrency
        self.clock = clock

    def run(self, since_ns: int, until_ns: int | None = None, *, progress: bool = False) -> RunReport:
        """Judge the sample of spans in ``[since_ns, until_ns)`` (until now by default)."""
        until_ns = int(self.clock() * 1e9) if until_ns is None else until_ns
        report = RunReport()
        spans = self.sampler.sample(self.project, since_ns, until_ns)
        report.sampled_spans = len(spans)
        todo = self._unanswered(spans, report)
        if todo and self.budget is not None:
            # A paced budget refuses most cycles: then the window's content is not read at all.
            if not self.budget.try_reserve():
                report.stopped, report.budget_refusal = "budget", self.budget.refusal
                report.skipped_budget = sum(len(rubrics) for _, rubrics in todo)
                return report
            self.budget.release()
        loaded = self.sampler.with_content([span for span, _ in todo])
        tasks = []
        for span, (_, rubrics) in zip(loaded, todo, strict=True):
            if not span.has_content:
                report.no_content_spans += 1
                continue
            for rubric in rubrics:
                if rubric.applies_to(span):
                    tasks.append((span, rubric))
                else:
                    report.not_applicable += 1
        return execute(
            self.store, self.judge, tasks, purpose=_records.PURPOSE_SAMPLE, source=_records.PURPOSE_SAMPLE,
            concurrency=self.concurrency, budget=self.budget, report=report, progress=progress, clock=self.clock,
        )

    def _unanswered(self, spans: list[SampledSpan], report: RunReport) -> list[tuple[SampledSpan, list[Rubric]]]:
        """Each span with the rubrics this judge has not answered for it yet (by id: no content read)."""
        ids = [s.span_id for s in spans]
        answered = {
            rubric.key: _records.answered_span_ids(self.store, self.project, ids, self.judge.model, rubric)
            for rubric in self.rubrics
        }
        todo = []
        for span in spans:
            rubrics = [rubric for rubric in self.rubrics if span.span_id not in answered[rubric.key]]
            report.already_judged += len(self.rubrics) - len(rubrics)
            if rubrics:
                todo.append((span, rubrics))
        return todo

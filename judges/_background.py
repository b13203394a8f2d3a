"""Judging in the background: the collector runs a :class:`JudgeLoop` thread.

``infersight collector --judge-base-url URL ...`` builds :class:`JudgeSettings`, and the app's
lifespan builds it with :func:`judge_loop_from` and schedules its :meth:`JudgeLoop.run_once`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from infersight.collector.store import Store

from ._budget import Budget, require_price, unpriced_judge_message
from ._client import Judge, JudgeClient, chat_completions_url, known_price
from ._rubrics import Rubric, load_rubrics, select_rubrics
from ._runner import JudgeRunner, RunReport
from ._sampler import Sampler, SamplingPolicy
from ._types import JUDGE_ROUTE

logger = logging.getLogger("infersight.judges")


class JudgeLoop:
    """Every ``every_s`` seconds, judge the sample of the last ``lookback_s`` of every project.

    Projects are ``projects`` or, by default, those with LLM spans in the look-back window,
    found afresh each cycle. Each project has its own runner, so its own daily budget, paced over
    the UTC day by ``clock`` (Unix seconds; see :class:`Budget`). Windows overlap on purpose: late
    spans are picked up by the next cycle, and spans already answered are never judged twice.
    One project's failure is logged and the cycle goes on with the next. The collector's
    scheduler runs :meth:`run_once` every ``every_s`` (a failed cycle is logged there and retried
    at the next turn); :meth:`close` ends a cycle early and closes ``judge`` when ``close_judge``.
    """

    def __init__(self, store: Store, judge: Judge, rubrics: Sequence[Rubric], *,
                 policy: SamplingPolicy | None = None, budget: Budget | None = Budget(),
                 concurrency: int = 4, every_s: float = 60.0, lookback_s: float = 3600.0,
                 projects: Sequence[str] | None = None, close_judge: bool = False,
                 clock: Callable[[], float] = time.time) -> None:
        if not every_s > 0 or not lookback_s > 0:
            raise ValueError("The 'every_s' and 'lookback_s' parameters of JudgeLoop must be positive.")
        require_price(budget, judge)
        self.store = store
        self.judge = judge
        self.rubrics = list(rubrics)
        self.policy = policy or SamplingPolicy()
        self.budget = budget
        self.concurrency = concurrency
        self.every_s = every_s
        self.lookback_s = lookback_s
        self.projects = list(projects) if projects is not None else None
        self.close_judge = close_judge
        self.clock = clock
        self._runners: dict[str, JudgeRunner] = {}
        self._stop = threading.Event()

    def _runner(self, project: str) -> JudgeRunner:
        if project not in self._runners:
            self._runners[project] = JudgeRunner(
                self.store, self.judge, self.rubrics, project=project, sampler=Sampler(self.store, self.policy),
                budget=self.budget, concurrency=self.concurrency, clock=self.clock,
            )
        return self._runners[project]

    def run_once(self, now_ns: int | None = None) -> dict[str, RunReport]:
        """One cycle over every active project; blocking. Returns each project's report."""
        now = int(self.clock() * 1e9) if now_ns is None else now_ns
        since = now - int(self.lookback_s * 1e9)
        reports: dict[str, RunReport] = {}
        for project in self._active_projects(since):
            if self._stop.is_set():
                break
            try:
                reports[project] = report = self._runner(project).run(since, now)
            except Exception:
                logger.exception("judging project %r failed; the next cycle retries", project)
                continue
            if report.sampled_spans:
                logger.info("judge cycle, project %r: %s", project, report.summary())
        return reports

    def _active_projects(self, since_ns: int) -> list[str]:
        if self.projects is not None:
            return self.projects
        rows = self.store.query(
            "SELECT DISTINCT project FROM llm_spans WHERE ts >= fromUnixTimestamp64Nano({since_ns:Int64})"
            " AND route != {judge_route:String} ORDER BY project",
            {"since_ns": since_ns, "judge_route": JUDGE_ROUTE},
        )
        return [r["project"] for r in rows]

    def interrupt(self) -> None:
        """End the current :meth:`run_once` after the project being judged (from any thread)."""
        self._stop.set()

    def close(self) -> None:
        """Interrupt, and close ``judge`` when ``close_judge`` was set."""
        self.interrupt()
        if self.close_judge:
            self.judge.close()


@dataclass(frozen=True, slots=True)
class JudgeSettings:
    """How the collector judges in the background. Validated on construction (fail fast).

    Attributes:
        base_url, model, api_key, provider: the OpenAI-compatible judge (see :class:`JudgeClient`).
        rubrics: ids of the rubrics applied to each sampled span.
        rubrics_dir: a folder of custom rubrics (with its ``rubrics.lock.json``).
        rate, min_per_stratum, flagged_rate, negative_feedback_rate: the :class:`SamplingPolicy`.
        max_calls_per_day, max_usd_per_day: the daily :class:`Budget` per project, paced over the
            UTC day (``None``: no cap of that kind).
        price_input_mtok, price_output_mtok: the judge's price when genai-prices lacks the model.
            With a dollar cap, a model genai-prices lacks and no price given is refused here
            (``ValueError``), so the collector does not start with a cap that cannot count.
        every_s, lookback_s: how often a cycle runs and how far back it looks.
        concurrency: judge calls in flight at most.
    """

    base_url: str
    model: str = "gpt-4o-mini"
    api_key: str | None = None
    provider: str = "openai"
    rubrics: tuple[str, ...] = ("helpfulness",)
    rubrics_dir: Path | None = None
    rate: float = 0.02
    min_per_stratum: int = 3
    flagged_rate: float = 0.25
    negative_feedback_rate: float = 1.0
    max_calls_per_day: int | None = 2000
    max_usd_per_day: float | None = 5.0
    price_input_mtok: float | None = None
    price_output_mtok: float | None = None
    every_s: float = 60.0
    lookback_s: float = 3600.0
    concurrency: int = 4

    def __post_init__(self) -> None:
        chat_completions_url(self.base_url)
        self.policy()
        self.budget()
        if (self.price_input_mtok is None) != (self.price_output_mtok is None):
            raise ValueError("The judge price needs both 'price_input_mtok' and 'price_output_mtok', or neither.")
        unpriced = self.price_input_mtok is None and not known_price(self.provider, self.model)
        if self.max_usd_per_day is not None and unpriced:
            raise ValueError(unpriced_judge_message(
                self.model, self.max_usd_per_day, give_price="--judge-price-input-mtok and --judge-price-output-mtok",
                no_cap="--judge-max-usd none"))
        if not self.rubrics:
            raise ValueError("The 'rubrics' judge setting must name at least one rubric.")
        if not self.every_s > 0 or not self.lookback_s > 0:
            raise ValueError("The 'every_s' and 'lookback_s' judge settings must be positive.")
        if not isinstance(self.concurrency, int) or self.concurrency < 1:
            raise ValueError(f"The 'concurrency' judge setting must be a positive integer; got {self.concurrency!r}.")

    def policy(self) -> SamplingPolicy:
        return SamplingPolicy(rate=self.rate, min_per_stratum=self.min_per_stratum, flagged_rate=self.flagged_rate,
                              negative_feedback_rate=self.negative_feedback_rate)

    def budget(self) -> Budget:
        return Budget(max_calls=self.max_calls_per_day, max_usd=self.max_usd_per_day)


def judge_loop_from(settings: JudgeSettings, store: Store) -> JudgeLoop:
    """Build the judge client, load the rubrics and return a :class:`JudgeLoop` on ``store``.

    Raises :class:`~._errors.RubricError` (a bad or unlocked rubric) before anything runs.
    ``close()`` on the returned loop also closes the client.
    """
    rubrics = select_rubrics(load_rubrics(settings.rubrics_dir), settings.rubrics)
    prices = None
    if settings.price_input_mtok is not None and settings.price_output_mtok is not None:
        prices = {"input_mtok": settings.price_input_mtok, "output_mtok": settings.price_output_mtok}
    client = JudgeClient(base_url=settings.base_url, model=settings.model, api_key=settings.api_key,
                         provider=settings.provider, prices=prices)
    loop = JudgeLoop(store, client, rubrics, policy=settings.policy(), budget=settings.budget(),
                     concurrency=settings.concurrency, every_s=settings.every_s, lookback_s=settings.lookback_s,
                     close_judge=True)
    logger.info("judging %s with %s at %s every %.0f s", ", ".join(r.key for r in rubrics), settings.model,
                settings.base_url, settings.every_s)
    return loop

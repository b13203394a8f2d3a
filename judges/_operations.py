"""The judge operations ``infersight judge`` runs, written once for both of its ways to the store:
directly (no collector running) and through the collector's API (``judges._api``), so a run or
a gate gives the same result whichever process holds the store.

A request is plain JSON-able data (:class:`JudgeOptions`, :class:`RunRequest`,
:class:`CompareRequest`): the CLI builds it from its options and either runs it or posts it.
Errors: ``ValueError`` for an unusable option, :class:`~._errors.RubricError` for rubrics,
:class:`~._errors.JudgeError` when a comparison cannot be made.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from infersight.collector.store import Store

from ._budget import Budget, unpriced_judge_message
from ._client import JudgeClient
from ._compare import Comparison, compare, gate
from ._panels import load_panel
from ._rubrics import Rubric, load_rubrics, select_rubrics
from ._runner import JudgeRunner, RunReport
from ._sampler import Sampler, SamplingPolicy


@dataclass(frozen=True)
class JudgeOptions:
    """Which judge to call and how (the CLI's ``--base-url`` ... ``--concurrency``)."""

    base_url: str = "https://api.openai.com/v1"
    model: str = "gpt-4o-mini"
    api_key: str | None = None
    provider: str = "openai"
    price_input_mtok: float | None = None
    price_output_mtok: float | None = None
    timeout_s: float = 30.0
    max_retries: int = 3
    json_mode: bool = True
    rubrics_dir: str | None = None
    concurrency: int = 4

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> JudgeOptions:
        """The options among ``values`` (others ignored); rubrics_dir as text."""
        known = {f.name for f in fields(cls)}
        chosen = {k: v for k, v in values.items() if k in known}
        if chosen.get("rubrics_dir") is not None:
            chosen["rubrics_dir"] = str(Path(chosen["rubrics_dir"]).resolve())
        return cls(**chosen)

    def judge(self) -> JudgeClient:
        """A client of this judge (no request yet); ``ValueError`` for unusable options."""
        if (self.price_input_mtok is None) != (self.price_output_mtok is None):
            raise ValueError("give both --price-input-mtok and --price-output-mtok, or neither")
        prices = None
        if self.price_input_mtok is not None and self.price_output_mtok is not None:
            prices = {"input_mtok": self.price_input_mtok, "output_mtok": self.price_output_mtok}
        return JudgeClient(base_url=self.base_url, model=self.model, api_key=self.api_key, provider=self.provider,
                           timeout_s=self.timeout_s, max_retries=self.max_retries, prices=prices,
                           json_mode=self.json_mode)

    def rubrics(self, ids: tuple[str, ...] | list[str]) -> list[Rubric]:
        """The rubrics named ``ids``, built-in or from ``rubrics_dir``; :class:`RubricError` otherwise."""
        folder = Path(self.rubrics_dir) if self.rubrics_dir else None
        return select_rubrics(load_rubrics(folder), tuple(ids))


@dataclass(frozen=True)
class RunRequest:
    """``judge run``: the window and the sampling and budget it judges with."""

    since_ns: int
    until_ns: int
    rubric_ids: tuple[str, ...] = ("helpfulness",)
    rate: float = 0.02
    min_per_stratum: int = 3
    flagged_rate: float = 0.25
    negative_feedback_rate: float = 1.0
    max_calls: int | None = 2000
    max_usd: float | None = 5.0
    pace: bool = True


@dataclass(frozen=True)
class CompareRequest:
    """``judge compare`` and ``judge gate``: two app versions on one panel with one rubric."""

    panel_id: str
    baseline: str
    candidate: str
    rubric_id: str = "helpfulness"
    since_ns: int | None = None
    confidence: float = 0.95
    resamples: int = 10_000
    min_pairs: int = 10


def check_price(client: JudgeClient, max_usd: float | None) -> None:
    """``ValueError`` when a dollar cap cannot be counted because the judge's price is unknown."""
    if max_usd is not None and not client.price_known:
        raise ValueError(unpriced_judge_message(
            client.model, max_usd, give_price="--price-input-mtok and --price-output-mtok", no_cap="--max-usd none"))


def run_judging(store: Store, project: str, options: JudgeOptions, request: RunRequest, *,
                progress: bool = False) -> RunReport:
    """Sample ``project``'s spans of the window and judge them within the budget. Blocks until done."""
    rubrics = options.rubrics(request.rubric_ids)
    client = options.judge()
    try:
        check_price(client, request.max_usd)
        policy = SamplingPolicy(rate=request.rate, min_per_stratum=request.min_per_stratum,
                                flagged_rate=request.flagged_rate,
                                negative_feedback_rate=request.negative_feedback_rate)
        runner = JudgeRunner(store, client, rubrics, project=project, sampler=Sampler(store, policy),
                             budget=Budget(max_calls=request.max_calls, max_usd=request.max_usd, paced=request.pace),
                             concurrency=options.concurrency)
        return runner.run(request.since_ns, request.until_ns, progress=progress)
    finally:
        client.close()


def compare_versions(store: Store, project: str, options: JudgeOptions, request: CompareRequest) -> Comparison:
    """Both versions' outputs on the panel, scored with the rubric; :class:`JudgeError` when no
    result can be made (unknown panel, too few pairs, the judge unavailable). Blocks."""
    (rubric,) = options.rubrics((request.rubric_id,))
    client = options.judge()
    try:
        frozen = load_panel(store, project, request.panel_id)
        return compare(store, frozen, request.baseline, request.candidate, judge=client, rubric=rubric,
                       since_ns=request.since_ns, concurrency=options.concurrency, resamples=request.resamples,
                       confidence=request.confidence, min_pairs=request.min_pairs)
    finally:
        client.close()


def run_outcome(report: RunReport) -> dict[str, Any]:
    """What the CLI prints of a run, as the API answers it."""
    return {"summary": report.summary(), "stopped": report.stopped, "budget_refusal": report.budget_refusal,
            "report": asdict(report)}


def compare_outcome(result: Comparison, gate_rule: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the CLI prints of a comparison (and of its gate, with ``gate_rule``), as the API answers it."""
    out: dict[str, Any] = {"comparison": result.to_dict(), "description": result.describe()}
    if gate_rule is not None:
        verdict = gate(result, max_drop=gate_rule["max_drop"], rule=gate_rule["rule"])
        out["gate"] = {"passed": verdict.passed, "rule": gate_rule["rule"], "max_drop": gate_rule["max_drop"],
                       "message": verdict.message}
    return out

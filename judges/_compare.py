"""Compare two app versions on a panel with one judge and one rubric, and gate a rollout on it.

For every panel input answered by both versions (matched by input key; see ``_panels``), both
stored outputs are judged with the same judge and rubric version (a score this judge already
gave that span under that rubric version is reused). The difference of the means comes with a
paired bootstrap confidence interval: the per-input differences are resampled with
replacement, which keeps each input's baseline and candidate together, so the interval
reflects how much versions differ on the same inputs rather than how much inputs differ.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from infersight.collector.store import Store, usd_text

from . import _records
from ._client import Judge
from ._content import input_key
from ._errors import PanelError
from ._panels import Panel, route_spans
from ._rubrics import Rubric
from ._runner import Judgement, RunReport, execute
from ._types import SampledSpan

RULES = ("significant", "noninferior")


@dataclass(frozen=True, slots=True)
class PairedScore:
    """Both versions' scores on one panel input."""

    input_key: str
    baseline_span_id: str
    candidate_span_id: str
    baseline_score: int
    candidate_score: int


@dataclass(frozen=True)
class Comparison:
    """The result of :func:`compare`. ``mean_diff`` and the interval are candidate minus baseline."""

    panel_id: str
    route: str
    judge_model: str
    rubric_id: str
    rubric_version: int
    baseline_version: str
    candidate_version: str
    panel_size: int
    pairs: tuple[PairedScore, ...]
    baseline_mean: float
    candidate_mean: float
    mean_diff: float
    ci_low: float
    ci_high: float
    confidence: float
    resamples: int
    missing_baseline: int = 0
    missing_candidate: int = 0
    judge_failures: int = 0
    not_applicable: int = 0
    reused_scores: int = 0
    report: RunReport = field(default_factory=RunReport, compare=False)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["pairs"] = len(self.pairs)
        out.pop("report")
        return out

    def describe(self) -> str:
        pct = round(self.confidence * 100)
        lines = [
            f"panel {self.panel_id} (route {self.route}, {self.panel_size} inputs): {len(self.pairs)} paired; "
            f"without a baseline output {self.missing_baseline}, without a candidate output {self.missing_candidate}, "
            f"judge failures {self.judge_failures}, rubric not applicable {self.not_applicable}",
            f"judge {self.judge_model}, rubric {self.rubric_id} v{self.rubric_version}"
            f" ({self.reused_scores} scores reused, {self.report.scored} new, {usd_text(self.report.cost_usd)})",
            f"baseline {self.baseline_version}: mean {self.baseline_mean:.3f}    "
            f"candidate {self.candidate_version}: mean {self.candidate_mean:.3f}",
            f"difference (candidate - baseline): {self.mean_diff:+.3f}  "
            f"{pct}% CI [{self.ci_low:+.3f}, {self.ci_high:+.3f}]  (paired bootstrap, {self.resamples} resamples)",
        ]
        return "\n".join(lines)


def paired_bootstrap(baseline: Sequence[float], candidate: Sequence[float], *, resamples: int = 10_000,
                     confidence: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """``(mean difference, low, high)``: the percentile interval of the mean of ``candidate - baseline``
    over ``resamples`` resamplings of the pairs. Deterministic for a given ``seed``."""
    if len(baseline) != len(candidate) or not baseline:
        raise ValueError("paired_bootstrap needs two non-empty sequences of the same length.")
    if not 0 < confidence < 1:
        raise ValueError(f"The 'confidence' parameter of paired_bootstrap must be within (0, 1); got {confidence!r}.")
    if not isinstance(resamples, int) or resamples < 1:
        raise ValueError(
            f"The 'resamples' parameter of paired_bootstrap must be a positive integer; got {resamples!r}."
        )
    diffs = np.asarray(candidate, dtype=float) - np.asarray(baseline, dtype=float)
    n = diffs.size
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    # Resample in blocks so a large panel never needs a resamples x n index matrix at once.
    block = max(1, 2_000_000 // n)
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        means[start:stop] = diffs[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(diffs.mean()), float(low), float(high)


def _newest_by_key(spans: list[SampledSpan], keys: frozenset[str]) -> dict[str, SampledSpan]:
    out: dict[str, SampledSpan] = {}
    for span in spans:  # newest first
        key = input_key(span.messages)
        if key in keys:
            out.setdefault(key, span)
    return out


def compare(
    store: Store,
    panel: Panel,
    baseline_version: str,
    candidate_version: str,
    *,
    judge: Judge,
    rubric: Rubric,
    since_ns: int | None = None,
    concurrency: int = 4,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    min_pairs: int = 10,
    progress: bool = False,
) -> Comparison:
    """Judge both versions' outputs on ``panel`` and estimate the difference of mean scores.

    Outputs are the stored outputs of spans of ``panel.route`` since ``since_ns`` (90 days by
    default) whose ``service_version`` is the baseline or the candidate and whose input matches
    a panel item; the newest such span per input and version is used. Raises
    :class:`PanelError` when fewer than ``min_pairs`` inputs end with both scores. Judge calls
    are recorded in the ledger with purpose ``panel`` and are not capped by the daily budget.
    Blocking.
    """
    if baseline_version == candidate_version:
        raise ValueError("The baseline and candidate versions must differ.")
    if since_ns is None:
        since_ns = time.time_ns() - 90 * 86400 * 10**9
    keys = panel.keys
    # One scan per version, so a busy candidate cannot crowd the baseline out of the scan limit.
    base = _newest_by_key(route_spans(store, panel.project, panel.route, since_ns, (baseline_version,)), keys)
    cand = _newest_by_key(route_spans(store, panel.project, panel.route, since_ns, (candidate_version,)), keys)
    paired_keys = sorted(set(base) & set(cand))

    to_judge = [s for k in paired_keys for s in (base[k], cand[k])]
    not_applicable = {s.span_id for s in to_judge if not rubric.applies_to(s)}
    to_judge = [s for s in to_judge if s.span_id not in not_applicable]
    scores = {
        span_id: int(row["score"])
        for span_id, row in _records.existing_scores(
            store, panel.project, [s.span_id for s in to_judge], judge.model, rubric
        ).items()
    }
    reused = len(scores)

    def keep(judgement: Judgement) -> None:
        if judgement.verdict is not None:
            scores[judgement.span.span_id] = judgement.verdict.score

    tasks = [(s, rubric) for s in to_judge if s.span_id not in scores]
    report = execute(
        store, judge, tasks, purpose=_records.PURPOSE_PANEL, source=f"panel:{panel.panel_id}",
        concurrency=concurrency, progress=progress, on_judgement=keep,
    )
    pairs = tuple(
        PairedScore(k, base[k].span_id, cand[k].span_id, scores[base[k].span_id], scores[cand[k].span_id])
        for k in paired_keys
        if base[k].span_id in scores and cand[k].span_id in scores
    )
    inapplicable_pairs = sum(
        1 for k in paired_keys if base[k].span_id in not_applicable or cand[k].span_id in not_applicable
    )
    failures = len(paired_keys) - len(pairs) - inapplicable_pairs
    if report.stopped:
        raise PanelError(f"judging stopped early ({report.stopped}); {report.summary()}")
    if len(pairs) < min_pairs:
        raise PanelError(
            f"only {len(pairs)} panel inputs have scores for both {baseline_version!r} and {candidate_version!r} "
            f"(need {min_pairs}): {len(keys)} inputs, {len(keys) - len(base)} without a baseline output, "
            f"{len(keys) - len(cand)} without a candidate output, {failures} judge failures, "
            f"{inapplicable_pairs} where rubric {rubric.id} does not apply"
        )
    b = [p.baseline_score for p in pairs]
    c = [p.candidate_score for p in pairs]
    diff, low, high = paired_bootstrap(b, c, resamples=resamples, confidence=confidence, seed=seed)
    return Comparison(
        panel_id=panel.panel_id, route=panel.route, judge_model=judge.model, rubric_id=rubric.id,
        rubric_version=rubric.version, baseline_version=baseline_version, candidate_version=candidate_version,
        panel_size=len(panel.items), pairs=pairs, baseline_mean=float(np.mean(b)), candidate_mean=float(np.mean(c)),
        mean_diff=diff, ci_low=low, ci_high=high, confidence=confidence, resamples=resamples,
        missing_baseline=len(keys) - len(base), missing_candidate=len(keys) - len(cand),
        judge_failures=failures, not_applicable=inapplicable_pairs, reused_scores=reused, report=report,
    )


@dataclass(frozen=True, slots=True)
class GateResult:
    passed: bool
    message: str


def gate(comparison: Comparison, *, max_drop: float = 0.0, rule: str = "significant") -> GateResult:
    """Whether the candidate may roll out, given how much worse it may be (``max_drop`` score points).

    Rules, on the confidence interval of candidate minus baseline:

    - ``significant`` (default): fail when the whole interval lies below ``-max_drop``, i.e. the
      candidate is worse by more than ``max_drop`` beyond reasonable doubt. Noise never fails it;
      a small panel may let a real regression pass.
    - ``noninferior``: fail unless the whole interval lies above ``-max_drop``, i.e. the panel
      must show the candidate is not worse by more than ``max_drop``. Stricter: a small or
      noisy panel fails it.
    """
    if rule not in RULES:
        raise ValueError(f"The 'rule' parameter of gate must be one of {RULES}; got {rule!r}.")
    if not max_drop >= 0:
        raise ValueError(f"The 'max_drop' parameter of gate must be >= 0; got {max_drop!r}.")
    c = comparison
    pct = round(c.confidence * 100)
    where = (f"{c.candidate_version} vs {c.baseline_version}: {c.mean_diff:+.3f} "
             f"({pct}% CI [{c.ci_low:+.3f}, {c.ci_high:+.3f}], {len(c.pairs)} inputs, "
             f"{c.rubric_id} v{c.rubric_version}, judge {c.judge_model})")
    if rule == "significant":
        failed = c.ci_high < -max_drop
        why = f"worse by more than {max_drop:g}" if failed else f"not shown to be worse by more than {max_drop:g}"
    else:
        failed = c.ci_low < -max_drop
        why = f"{'not shown to be ' if failed else ''}within {max_drop:g} of the baseline"
    return GateResult(not failed, f"{'FAIL' if failed else 'PASS'} ({rule}): {where}; candidate {why}")

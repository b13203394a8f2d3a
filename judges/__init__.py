"""Sampled LLM-judge scoring with versioned rubrics, frozen panels and a regression gate.

    from infersight.judges import JudgeClient, JudgeRunner, Sampler, SamplingPolicy, load_rubrics

    rubrics = load_rubrics()                       # built-ins, checked against their lock file
    judge = JudgeClient(base_url="http://localhost:11434/v1", model="llama3.1:8b",
                        prices={"input_mtok": 0.0, "output_mtok": 0.0})
    runner = JudgeRunner(store, judge, [rubrics["helpfulness"]], project="default",
                         sampler=Sampler(store, SamplingPolicy(rate=0.02)))
    print(runner.run(since_ns).summary())

Scores land in ``judge_scores`` and every judge call in ``judge_calls`` (the judge's own
spend, which the daily :class:`Budget` is checked against). Scores are only comparable within
one judge model and one rubric version; :func:`compare` and :func:`gate` compare two app
versions on the same frozen :class:`Panel` with the same judge and rubric. ``router`` serves the
scores and the spend as JSON (``GET /api/v1/judge_scores``), and the ``infersight judge``
operations under ``/api/v1/judge/`` for a CLI whose data directory a running collector owns; the
collector app includes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._background import JudgeLoop, JudgeSettings, judge_loop_from
from ._breaker import CircuitBreaker
from ._budget import Budget
from ._cli import background_options, judge_settings
from ._cli import judge as judge_cli
from ._client import Judge, JudgeClient, parse_verdict
from ._compare import (
    Comparison,
    GateResult,
    PairedScore,
    compare,
    gate,
    paired_bootstrap,
)
from ._errors import (
    CircuitOpen,
    InvalidVerdict,
    JudgeCallError,
    JudgeError,
    JudgeRejected,
    PanelError,
    RubricError,
    RubricVersionError,
    TransientJudgeError,
)
from ._panels import Panel, PanelItem, create_panel, list_panels, load_panel
from ._records import judge_spend, recent_scores, scores_summary
from ._rubrics import Rubric, load_rubrics, lock_rubrics
from ._runner import Judgement, JudgeRunner, RunReport
from ._sampler import Sampler, SamplingPolicy, trace_fraction
from ._types import Message, SampledSpan, Verdict

if TYPE_CHECKING:
    from fastapi import APIRouter

    router: APIRouter

__all__ = [
    "Budget",
    "CircuitBreaker",
    "CircuitOpen",
    "Comparison",
    "GateResult",
    "InvalidVerdict",
    "Judge",
    "JudgeCallError",
    "JudgeClient",
    "JudgeError",
    "JudgeLoop",
    "JudgeRejected",
    "JudgeRunner",
    "JudgeSettings",
    "Judgement",
    "Message",
    "PairedScore",
    "Panel",
    "PanelError",
    "PanelItem",
    "Rubric",
    "RubricError",
    "RubricVersionError",
    "RunReport",
    "SampledSpan",
    "Sampler",
    "SamplingPolicy",
    "TransientJudgeError",
    "Verdict",
    "background_options",
    "compare",
    "create_panel",
    "gate",
    "judge_cli",
    "judge_loop_from",
    "judge_settings",
    "judge_spend",
    "list_panels",
    "load_panel",
    "load_rubrics",
    "lock_rubrics",
    "paired_bootstrap",
    "parse_verdict",
    "recent_scores",
    "router",
    "scores_summary",
    "trace_fraction",
]


def __getattr__(name: str) -> Any:
    # The route (``GET /api/v1/judge_scores``) loads FastAPI, which the CLI and the judge loop
    # do not need: it is imported when the collector app asks for it.
    if name == "router":
        from ._api import router

        return router
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

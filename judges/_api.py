"""The judges' routes under ``/api/v1``, scoped to the project of the caller's API key:
``GET judge_scores`` (recent scores and spend), and the operations of ``infersight judge`` for
a CLI whose data directory a running collector owns: ``GET judge/scores``, ``GET judge/spend``,
``GET``/``POST judge/panels``, ``POST judge/run`` and ``POST judge/compare`` (with ``gate``
for the rollout gate).

A run or comparison answers when it is done (a backfill can take minutes). A comparison that
cannot be made is a 422 whose body says ``cannot_evaluate``; an unusable option is a 400.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from infersight.collector.store import since_ns as since_ns_of
from infersight.collector.web import AdminProjectDep, NotCrossSiteDep, ReadProjectDep, StoreDep

from ._compare import RULES
from ._errors import JudgeError, PanelError, RubricError
from ._operations import (
    CompareRequest,
    JudgeOptions,
    RunRequest,
    compare_outcome,
    compare_versions,
    run_judging,
    run_outcome,
)
from ._panels import create_panel, list_panels
from ._records import judge_spend, recent_scores, scores_summary

# Nanosecond times are Int64 in the store: a larger one is refused here rather than wrapped there.
_MAX_NS = 2**63 - 1

router = APIRouter(prefix="/api/v1")


@router.get("/judge_scores")
async def judge_scores(
    store: StoreDep,
    project: ReadProjectDep,
    since: str = "24h",
    limit: int = Query(1000, ge=1, le=10_000),
) -> dict[str, Any]:
    """LLM-judge scores of spans since ``since``, newest first, and the judge's own spend per day.

    Scores are comparable only within one ``judge_model`` and one ``rubric_id``/``rubric_version``.
    """
    since_ns = since_ns_of(since)
    scores = await run_in_threadpool(recent_scores, store, project, since_ns, limit)
    spend = await run_in_threadpool(judge_spend, store, project, since_ns)
    return {"since": since, "scores": scores, "spend": spend}


@router.get("/judge/scores")
async def scores(store: StoreDep, project: ReadProjectDep, since_ns: int = Query(ge=0, le=_MAX_NS)) -> dict[str, Any]:
    """Mean judge score per route, app version, judge model and rubric version since ``since_ns``."""
    return {"project": project, "rows": await run_in_threadpool(scores_summary, store, project, since_ns)}


@router.get("/judge/spend")
async def spend(store: StoreDep, project: ReadProjectDep, since_ns: int = Query(ge=0, le=_MAX_NS)) -> dict[str, Any]:
    """The judge's own spend per day, model and purpose since ``since_ns``."""
    return {"project": project, "rows": await run_in_threadpool(judge_spend, store, project, since_ns)}


@router.get("/judge/panels")
async def panels(store: StoreDep, project: ReadProjectDep) -> dict[str, Any]:
    """The project's panels, newest first."""
    return {"project": project, "rows": await run_in_threadpool(list_panels, store, project)}


class _Panel(BaseModel):
    route: str
    size: int = Field(200, ge=1)
    since_ns: int = Field(ge=0, le=_MAX_NS)
    panel_id: str | None = None


@router.post("/judge/panels")
async def new_panel(body: _Panel, store: StoreDep, project: AdminProjectDep, _: NotCrossSiteDep) -> dict[str, Any]:
    """Freeze up to ``size`` distinct inputs of ``route`` into a new panel (``infersight judge panel create``)."""
    try:
        created = await run_in_threadpool(
            lambda: create_panel(store, project, body.route, body.size, since_ns=body.since_ns,
                                 panel_id=body.panel_id))
    except (PanelError, ValueError) as exc:
        raise HTTPException(400, str(exc)) from exc
    return {"project": project, "panel_id": created.panel_id, "items": len(created.items)}


class _Judge(BaseModel):
    base_url: str
    model: str
    api_key: str | None = None
    provider: str = "openai"
    price_input_mtok: float | None = None
    price_output_mtok: float | None = None
    timeout_s: float = Field(30.0, gt=0)
    max_retries: int = Field(3, ge=0)
    json_mode: bool = True
    rubrics_dir: str | None = None
    concurrency: int = Field(4, ge=1, le=64)


class _Run(BaseModel):
    judge: _Judge
    since_ns: int = Field(ge=0, le=_MAX_NS)
    until_ns: int = Field(ge=0, le=_MAX_NS)
    rubric_ids: list[str] = Field(min_length=1)
    rate: float = Field(0.02, ge=0, le=1)
    min_per_stratum: int = Field(3, ge=0)
    flagged_rate: float = Field(0.25, ge=0, le=1)
    negative_feedback_rate: float = Field(1.0, ge=0, le=1)
    max_calls: int | None = Field(2000, ge=0)
    max_usd: float | None = Field(5.0, ge=0)
    pace: bool = True


class _Gate(BaseModel):
    max_drop: float = Field(0.0, ge=0)
    rule: str = Field("significant", pattern="^(" + "|".join(RULES) + ")$")


class _Compare(BaseModel):
    judge: _Judge
    panel_id: str
    baseline: str
    candidate: str
    rubric_id: str = "helpfulness"
    since_ns: int | None = Field(None, ge=0, le=_MAX_NS)
    confidence: float = Field(0.95, ge=0.5, le=0.999)
    resamples: int = Field(10_000, ge=100)
    min_pairs: int = Field(10, ge=1)
    gate: _Gate | None = None


@router.post("/judge/run")
async def run(body: _Run, store: StoreDep, project: AdminProjectDep, _: NotCrossSiteDep) -> dict[str, Any]:
    """Sample the project's spans of the window and judge them, as ``infersight judge run`` does."""
    options = JudgeOptions.from_dict(body.judge.model_dump())
    request = RunRequest(**{**body.model_dump(exclude={"judge"}), "rubric_ids": tuple(body.rubric_ids)})
    try:
        report = await run_in_threadpool(run_judging, store, project, options, request)
    except (ValueError, RubricError) as exc:
        raise HTTPException(400, str(exc)) from exc
    return {"project": project, **run_outcome(report)}


@router.post("/judge/compare")
async def compare(body: _Compare, store: StoreDep, project: AdminProjectDep, _: NotCrossSiteDep) -> dict[str, Any]:
    """Two app versions on a panel (``infersight judge compare``); with ``gate``, its verdict too."""
    if body.baseline == body.candidate:
        raise HTTPException(400, "--baseline and --candidate must name different versions")
    options = JudgeOptions.from_dict(body.judge.model_dump())
    request = CompareRequest(**body.model_dump(exclude={"judge", "gate"}))
    try:
        result = await run_in_threadpool(compare_versions, store, project, options, request)
    except (ValueError, RubricError) as exc:
        raise HTTPException(400, str(exc)) from exc
    except JudgeError as exc:
        raise HTTPException(422, {"message": str(exc), "cannot_evaluate": True}) from exc
    rule = body.gate.model_dump() if body.gate is not None else None
    return {"project": project, **compare_outcome(result, rule)}

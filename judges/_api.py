"""``GET /api/v1/judge_scores``: the judges' own route, scoped to the project of the caller's API key."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from fastapi.concurrency import run_in_threadpool

from infersight.collector.store import since_ns as since_ns_of
from infersight.collector.web import ApiProjectDep, StoreDep

from ._records import judge_spend, recent_scores

router = APIRouter(prefix="/api/v1")


@router.get("/judge_scores")
async def judge_scores(
    store: StoreDep,
    project: ApiProjectDep,
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

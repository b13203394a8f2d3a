"""``GET /api/v1/...``: the JSON read API, scoped to the project of the caller's API key."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query
from fastapi.concurrency import run_in_threadpool

from . import _queries
from ._deps import ApiProjectDep, StoreDep
from ._errors import BadRequest
from ._timerange import since_to_unix_ns

router = APIRouter(prefix="/api/v1")


def _since_ns(since: str) -> int:
    try:
        return since_to_unix_ns(since)
    except BadRequest as exc:
        raise HTTPException(status_code=400, detail=str(exc)) from exc


@router.get("/summary")
async def summary(store: StoreDep, project: ApiProjectDep, since: str = "1h") -> dict[str, Any]:
    """Totals and latency percentiles since ``since`` (``15m``, ``24h``, ``7d`` or an ISO time)."""
    result = await run_in_threadpool(_queries.summary, store, project, _since_ns(since))
    result["since"] = since
    return result


@router.get("/spans")
async def spans(
    store: StoreDep,
    project: ApiProjectDep,
    since: str = "1h",
    limit: int = Query(100, ge=1, le=10_000),
) -> dict[str, Any]:
    """The newest GenAI spans (LLM, retrieval, rerank) with their typed columns, newest first."""
    rows = await run_in_threadpool(_queries.recent_spans, store, project, _since_ns(since), limit)
    return {"since": since, "spans": rows}

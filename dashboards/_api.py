"""``GET /api/v1/{latency,cost,quality,traces}``: each dashboard page's numbers as JSON.

Same functions, same views as the pages (``since`` instead of the page's ``range``; a
``since`` that is on the page menu gives exactly the page's window), scoped to the project of
the caller's API key.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query
from fastapi.concurrency import run_in_threadpool

from infersight.collector.errors import BadRequest
from infersight.collector.store import check_choice
from infersight.collector.web import ReadProjectDep, StoreDep

from ._filters import View, view_from_since, view_from_window
from ._quality import quality as quality_data
from ._queries import COST_BY, overview_series
from ._queries import cost as cost_data
from ._queries import latency as latency_data
from ._traces import AT_MAX_S, SEARCH_LIMIT, SEARCH_MAX, read_criteria, search, trace

router = APIRouter(prefix="/api/v1")
AtQuery = Query(None, ge=0, le=AT_MAX_S, description="A Unix time (seconds) near the trace, to read less.")


def _view(since: str, service: str | None, route: str | None, tenant: str | None, model: str | None) -> View:
    return view_from_since(since, {"service": service, "route": route, "tenant": tenant, "model": model})


@router.get("/latency")
async def latency(
    store: StoreDep, project: ReadProjectDep, since: str = "24h",
    service: str | None = None, route: str | None = None, tenant: str | None = None, model: str | None = None,
) -> dict[str, Any]:
    """LLM latency anatomy (percentiles of duration, TTFT, queue wait, prefill, ITL, TPOT),
    overall and per chart bucket; the slowest routes; retrieval and rerank steps."""
    view = _view(since, service, route, tenant, model)
    return await run_in_threadpool(latency_data, store, project, view)


@router.get("/cost")
async def cost(
    store: StoreDep, project: ReadProjectDep, since: str = "24h",
    by: str | None = None,
    service: str | None = None, route: str | None = None, tenant: str | None = None, model: str | None = None,
) -> dict[str, Any]:
    """Spend totals; per tenant, route and model; over time per ``by``; top users; cost findings."""
    view = _view(since, service, route, tenant, model)
    return await run_in_threadpool(cost_data, store, project, view, check_choice("by", by, COST_BY, "tenant"))


@router.get("/quality")
async def quality(
    store: StoreDep, project: ReadProjectDep, since: str = "24h",
    service: str | None = None, route: str | None = None, tenant: str | None = None, model: str | None = None,
) -> dict[str, Any]:
    """Soft-failure rates per detector and label, judge trends (like for like), drift findings."""
    view = _view(since, service, route, tenant, model)
    return await run_in_threadpool(quality_data, store, project, view)


@router.get("/overview")
async def overview(store: StoreDep, project: ReadProjectDep, since: str = "1h") -> dict[str, Any]:
    """The Overview's time series: LLM calls, errors, error rate, p95 TTFT and spend per bucket
    (buckets with calls; the bucket width follows ``since``)."""
    view = view_from_since(since, {})
    return await run_in_threadpool(overview_series, store, project, view)


@router.get("/traces")
async def traces(
    store: StoreDep, project: ReadProjectDep, since: str = "24h", start: str | None = None, end: str | None = None,
    service: str | None = None, route: str | None = None, tenant: str | None = None, model: str | None = None,
    user: str | None = None, session: str | None = None, tag: str | None = None, error_type: str | None = None,
    status: str | None = None, label: str | None = None, q: str | None = None,
    score_min: str | None = None, score_max: str | None = None, rubric: str | None = None,
    sort: str | None = Query(None, description="-time (newest first, the default), time (oldest first), "
                                               "duration, cost, tokens, errors (largest first)"),
    cursor: str | None = Query(None, description="next_cursor of the previous page: the same search, continued"),
    limit: int = Query(SEARCH_LIMIT, ge=1, le=SEARCH_MAX),
) -> dict[str, Any]:
    """A page of the traces matching every filter, with ``total`` (all matches in the window) and
    ``next_cursor`` (``null`` on the last page). ``start``/``end`` (ISO 8601) win over ``since``."""
    dims = {"service": service, "route": route, "tenant": tenant, "model": model}
    view = view_from_window(None, start, end, dims) if start or end else view_from_since(since, dims)
    criteria = read_criteria({
        "user": user, "session": session, "tag": tag, "error_type": error_type, "status": status, "label": label,
        "q": q, "score_min": score_min, "score_max": score_max, "rubric": rubric,
    })
    return await run_in_threadpool(
        lambda: search(store, project, view, criteria, sort=sort, cursor=cursor, limit=limit)
    )


@router.get("/traces/{trace_id}")
async def one_trace(
    store: StoreDep, project: ReadProjectDep, trace_id: str, at: int | None = AtQuery,
) -> dict[str, Any]:
    """Every span of one trace with its latency segments, content, detections, judge scores and feedback."""
    try:
        data = await run_in_threadpool(lambda: trace(store, project, trace_id, at_s=at))
    except BadRequest as exc:
        raise HTTPException(404, str(exc)) from exc
    if data is None:
        raise HTTPException(404, "no such trace in this project")
    return data

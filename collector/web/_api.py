"""``/api/v1/...``: the shared JSON read API over the store and the spool, scoped to the project of
the caller's API key: reads, and the one write, putting the project's dead letters back once
their cause is fixed. The stages above the web layer serve their own data (alerts and the digest
from ``alerts``, judge scores from ``judges``, the pages' twins from ``dashboards``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool

from ..spool import pending_dead_letters, replay_dead_letters
from ..store import check_text, recent_spans
from ..store import detections as detection_rows
from ..store import queues as queue_rows
from ..store import since_ns as _since_ns
from ..store import summary as summary_of
from ._deps import AdminProjectDep, ReadProjectDep, StoreDep
from ._origin import NotCrossSiteDep

router = APIRouter(prefix="/api/v1")


@router.get("/summary")
async def summary(store: StoreDep, project: ReadProjectDep, since: str = "1h") -> dict[str, Any]:
    """Totals and latency percentiles since ``since`` (``15m``, ``24h``, ``7d`` or an ISO time)."""
    result = await run_in_threadpool(summary_of, store, project, _since_ns(since))
    result["since"] = since
    return result


@router.get("/spans")
async def spans(
    store: StoreDep,
    project: ReadProjectDep,
    since: str = "1h",
    limit: int = Query(100, ge=1, le=10_000),
) -> dict[str, Any]:
    """The newest GenAI spans (LLM, retrieval, rerank) with their typed columns, newest first."""
    rows = await run_in_threadpool(recent_spans, store, project, _since_ns(since), limit)
    return {"since": since, "spans": rows}


@router.get("/detections")
async def detections(
    store: StoreDep,
    project: ReadProjectDep,
    since: str = "24h",
    detector: str | None = None,
    limit: int = Query(1000, ge=1, le=10_000),
) -> dict[str, Any]:
    """Soft failures found in LLM outputs (repetition, json, refusal, truncation), newest first."""
    detector = check_text("detector", detector)
    rows = await run_in_threadpool(detection_rows, store, project, _since_ns(since), detector, limit)
    return {"since": since, "detections": rows}


@router.get("/queues")
async def queues(store: StoreDep, project: ReadProjectDep, since: str = "1h") -> dict[str, Any]:
    """The queues the SDK's ``watch_queue`` reports: latest depth and oldest-item age."""
    rows = await run_in_threadpool(queue_rows, store, project, _since_ns(since))
    return {"since": since, "queues": rows}


@router.get("/dead_letters")
async def dead_letters(store: StoreDep, project: ReadProjectDep) -> dict[str, Any]:
    """Acknowledged requests the store refused and set aside, not replayed yet, oldest first."""
    return {"dead_letters": await run_in_threadpool(pending_dead_letters, store, project)}


@router.post("/dead_letters/replay")
async def replay(request: Request, store: StoreDep, project: AdminProjectDep, _: NotCrossSiteDep) -> dict[str, Any]:
    """Insert the project's dead letters again; those the store refuses again stay, with the reason."""
    outcome = await run_in_threadpool(replay_dead_letters, store, project, request.app.state.decoder.detect)
    return {"replayed_requests": outcome.requests, "replayed_spans": outcome.spans, "refused": outcome.refused}

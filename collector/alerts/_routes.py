"""The alerts' own routes: the digest as a page (what the digest notification links to) and as
JSON, and the alert history as JSON, each for the caller's project."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse

from ..store import day_or_yesterday, since_ns
from ..web import ApiProjectDep, PageProjectDep, StoreDep
from ._digest import build_digest
from ._evaluator import history

router = APIRouter()


@router.get("/digest", response_class=HTMLResponse)
async def digest_page(store: StoreDep, project: PageProjectDep, date: str | None = None) -> HTMLResponse:
    """Yesterday's digest (or ``date``'s, ``YYYY-MM-DD`` UTC) for the logged-in project."""
    digest = await run_in_threadpool(build_digest, store, project, day_or_yesterday(date))
    return HTMLResponse(digest.html())


@router.get("/api/v1/digest")
async def digest(store: StoreDep, project: ApiProjectDep, date: str | None = None) -> dict[str, Any]:
    """The daily digest of ``date`` (``YYYY-MM-DD``, UTC; default yesterday) as JSON."""
    result = await run_in_threadpool(build_digest, store, project, day_or_yesterday(date))
    return {**asdict(result), "day": result.day.isoformat(), "lines": result.lines()}


@router.get("/api/v1/alerts")
async def alerts(store: StoreDep, project: ApiProjectDep, since: str = "7d") -> dict[str, Any]:
    """Alerts firing now and every firing/repeat/resolved event since ``since``, newest first."""
    start = datetime.fromtimestamp(since_ns(since) / 1e9, tz=timezone.utc)
    result = await run_in_threadpool(history, store, project, start)
    return {"since": since, **result}

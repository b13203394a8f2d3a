"""``GET /digest``: the daily digest as a page (what the digest notification links to)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse

from ..errors import BadRequest
from ..store import day_or_yesterday
from ..web import PageProjectDep, StoreDep
from ._digest import build_digest

router = APIRouter()


@router.get("/digest", response_class=HTMLResponse)
async def digest_page(store: StoreDep, project: PageProjectDep, date: str | None = None) -> HTMLResponse:
    """Yesterday's digest (or ``date``'s, ``YYYY-MM-DD`` UTC) for the logged-in project."""
    try:
        day = day_or_yesterday(date)
    except BadRequest as exc:
        raise HTTPException(status_code=400, detail=str(exc)) from exc
    digest = await run_in_threadpool(build_digest, store, project, day)
    return HTMLResponse(digest.html())

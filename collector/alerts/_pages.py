"""``GET /digest``: the daily digest as a page (what the digest notification links to)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse

from ..store import day_or_yesterday
from ..web import PageProjectDep, StoreDep
from ._digest import build_digest

router = APIRouter()


@router.get("/digest", response_class=HTMLResponse)
async def digest_page(store: StoreDep, project: PageProjectDep, date: str | None = None) -> HTMLResponse:
    """Yesterday's digest (or ``date``'s, ``YYYY-MM-DD`` UTC) for the logged-in project."""
    digest = await run_in_threadpool(build_digest, store, project, day_or_yesterday(date))
    return HTMLResponse(digest.html())

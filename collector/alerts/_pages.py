"""``GET /digest``: the daily digest as a page (what the digest notification links to)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse

from .._deps import PageProjectDep, StoreDep
from ._digest import build_digest

router = APIRouter()


@router.get("/digest", response_class=HTMLResponse)
async def digest_page(store: StoreDep, project: PageProjectDep, date: str | None = None) -> HTMLResponse:
    """Yesterday's digest (or ``date``'s, ``YYYY-MM-DD`` UTC) for the logged-in project."""
    from .._api import _day

    digest = await run_in_threadpool(build_digest, store, project, _day(date))
    return HTMLResponse(digest.html())

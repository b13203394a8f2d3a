"""``/digest``: the daily digest as a dashboard page, with the navigation, a date picker and
links to the day before and after. The digest itself (its figures and tables) is the alerts'
(:func:`infersight.collector.alerts.build_digest`); this page frames it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse
from markupsafe import Markup

from infersight.collector.alerts import build_digest
from infersight.collector.store import day_or_yesterday
from infersight.collector.web import AuthenticatorDep, PageProjectDep, StoreDep

from ._render import html

router = APIRouter()


@router.get("/digest", response_class=HTMLResponse)
async def digest_page(
    store: StoreDep, project: PageProjectDep, auth: AuthenticatorDep, date: str | None = None,
) -> HTMLResponse:
    """The digest of ``date`` (``YYYY-MM-DD``, UTC); by default today so far, against the same
    hours of yesterday."""
    now = datetime.now(timezone.utc)
    today = now.date()
    day = day_or_yesterday(date) if date is not None else today
    digest = await run_in_threadpool(build_digest, store, project, day, now)
    return html(
        "digest.html", page="digest", project=project, logout=auth is not None, d=digest,
        body=Markup(digest.html()),  # escaped already: the alerts render it with autoescaping
        previous=day - timedelta(days=1), next=day + timedelta(days=1) if day < today else None, today=today,
    )

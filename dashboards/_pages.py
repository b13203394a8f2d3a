"""Dashboard pages, rendered on the server from the same queries as the JSON API."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse

from infersight.collector._deps import AuthenticatorDep, PageProjectDep, StoreDep
from infersight.collector._queries import summary
from infersight.collector._timerange import since_to_unix_ns

from . import _login
from ._templates import env

router = APIRouter()
router.include_router(_login.router)

RANGES = {"1h": "last hour", "24h": "last day", "7d": "last week"}


@router.get("/", response_class=HTMLResponse)
async def overview(
    request: Request, store: StoreDep, project: PageProjectDep, auth: AuthenticatorDep, range: str = "1h"
) -> HTMLResponse:
    """Spans, error rate, cost per tenant and latency percentiles of the session's project."""
    if range not in RANGES:
        range = "1h"
    data = await run_in_threadpool(summary, store, project, since_to_unix_ns(range))
    max_cost = max((t["cost_usd"] for t in data["tenants"]), default=0.0) or 1.0
    html = env.get_template("overview.html").render(
        data=data, range=range, ranges=RANGES, max_cost=max_cost, project=project, logout=auth is not None
    )
    return HTMLResponse(html)

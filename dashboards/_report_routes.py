"""The weekly report served by the collector: ``GET /report/weekly`` (a dashboard page) and
``GET /api/v1/report/weekly`` (its data as JSON, or with ``format=html`` the self-contained
file ``infersight report weekly`` writes), for the project of the session or API key.

A week without the project's LLM calls is a 404 that lists the weeks that have them.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.encoders import jsonable_encoder
from fastapi.responses import HTMLResponse, JSONResponse, Response

from infersight.collector.errors import BadRequest
from infersight.collector.store import Store, check_choice
from infersight.collector.web import AuthenticatorDep, PageProjectDep, ReadProjectDep, StoreDep

from ._cli import PROJECT_HEADER
from ._render import PAGES, html
from ._report import NoReportData, check_report_data, parse_week, render_weekly, render_weekly_page, weekly_data

router = APIRouter()
FORMATS = ("json", "html")


def _report(store: Store, project: str, week: str | None) -> dict[str, Any]:
    try:
        monday = parse_week(week)
    except ValueError as exc:
        raise BadRequest(str(exc)) from exc
    check_report_data(store, project, monday, all_projects=False)
    return weekly_data(store, project, monday)


@router.get("/api/v1/report/weekly", response_model=None)
async def weekly_api(
    store: StoreDep, project: ReadProjectDep, week: str | None = None, format: str | None = None
) -> Response:
    """The weekly report of ISO ``week`` (``2026-W48``; default the last complete week).

    JSON by default; ``format=html`` the self-contained HTML file. 404 with ``weeks_with_data``
    when the project has no LLM calls that week.
    """
    format = check_choice("format", format, FORMATS, "json")
    try:
        data = await run_in_threadpool(_report, store, project, week)
    except NoReportData as exc:
        return JSONResponse(exc.to_dict(), status_code=404)
    headers = {PROJECT_HEADER: project}
    if format == "html":
        return HTMLResponse(render_weekly(data), headers=headers)
    return JSONResponse(jsonable_encoder(data), headers=headers)


@router.get("/report/weekly", response_class=HTMLResponse)
async def weekly_page(
    store: StoreDep, project: PageProjectDep, auth: AuthenticatorDep, week: str | None = None,
    format: str | None = None,
) -> HTMLResponse:
    """The weekly report as a page with the navigation (``format=html``: the self-contained file,
    as a download, for the session's project); a week without data says which weeks have it."""
    format = check_choice("format", format, FORMATS, "json")
    context = {"page": "report", "project": project, "logout": auth is not None}
    try:
        data = await run_in_threadpool(_report, store, project, week)
    except NoReportData as exc:
        return html("base.html", 404, **context, error=str(exc))
    if format == "html":
        name = f"infersight-weekly-{data['week']}.html"
        return HTMLResponse(render_weekly(data), headers={"content-disposition": f'attachment; filename="{name}"'})
    return HTMLResponse(render_weekly_page(data, pages=PAGES, nav_qs="", **context))


"""Dashboard pages, rendered on the server from the same queries as the JSON API.

Every page reads the session's project (a login with a project key, or the ``--no-auth``
project) and takes the same filters: ``range`` from the menu and ``service``, ``route``,
``tenant``, ``model``. A value a page cannot use is answered 400 with what is wrong with it
(:class:`BadRequest`, rendered by the app's handler), never read as something else. Pages carry
no JavaScript and are served with a Content-Security-Policy that forbids it, so text from
spans can only ever be text.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse

from infersight.collector.alerts import AlertJob, silencing
from infersight.collector.errors import BadRequest
from infersight.collector.store import Lease, Store, check_choice, since_to_unix_ns, summary
from infersight.collector.store import queues as queue_table
from infersight.collector.web import AuthenticatorDep, PageNotAnalysedDep, PageProjectDep, PageRoleDep, StoreDep

from . import _api, _digest_page, _feedback_form, _login, _report_routes, _sessions
from ._api import AtQuery
from ._charts import waterfall
from ._figures import cost_figures, latency_figures, overview_figures, quality_figures, queue_figure
from ._filters import DIMENSIONS, RANGES, View, check_value, view_from_range, view_from_window
from ._quality import quality
from ._queries import COST_BY, alerts, cost, firing_alerts, latency, options, overview_series, queue_series
from ._render import html
from ._traces import SORT_LABELS, STATUSES, read_criteria, search, trace

router = APIRouter()
router.include_router(_login.router)
router.include_router(_api.router)
router.include_router(_report_routes.router)
router.include_router(_digest_page.router)
router.include_router(_sessions.router)
router.include_router(_feedback_form.router)

OVERVIEW_RANGES = {"1h": "last hour", "24h": "last day", "7d": "last week"}


def page_view(request: Request) -> View:
    """The view a page's query string asks for (a ``range``, or a ``start``/``end`` window as an
    alert links to it); :class:`BadRequest` for a value it cannot use."""
    query = request.query_params
    return view_from_window(query.get("range"), query.get("start"), query.get("end"),
                            {dim: query.get(dim) for dim in DIMENSIONS})


def _context(page: str, project: str, auth: Any, view: View, **extra: Any) -> dict[str, Any]:
    args = view.query_args()
    return {
        "page": page, "project": project, "logout": auth is not None, "view": view, "error": None,
        "ranges": RANGES, "nav_qs": "?" + urlencode(args) if args else "", **extra,
    }


@router.get("/", response_class=HTMLResponse)
async def overview(
    request: Request, store: StoreDep, project: PageProjectDep, auth: AuthenticatorDep,
    not_analysed: PageNotAnalysedDep, range: str | None = None,
) -> HTMLResponse:
    """The alerts firing now; calls, error rate, p95 TTFT and spend over the range as time series;
    spans, cost per tenant and latency percentiles of the session's project; and the outputs the
    inline detectors did not analyse since the collector started."""
    range = check_choice("range", range, OVERVIEW_RANGES, "1h")
    view = view_from_range(range, {})

    def load() -> tuple[Any, ...]:
        return (summary(store, project, since_to_unix_ns(range)), overview_series(store, project, view),
                firing_alerts(store, project))

    data, series, firing = await run_in_threadpool(load)
    max_cost = max((t["cost_usd"] or 0.0 for t in data["tenants"]), default=0.0) or 1.0
    return html(
        "overview.html", page="overview", data=data, range=range, ranges=OVERVIEW_RANGES, max_cost=max_cost,
        project=project, logout=auth is not None, not_analysed=not_analysed, firing=firing,
        figures=overview_figures(series), bucket_s=view.bucket_s,
    )


def _with_options(store: Store, project: str, view: View, fn: Any, *args: Any) -> tuple[Any, dict[str, list[str]]]:
    return fn(store, project, view, *args), options(store, project, view)


@router.get("/latency", response_class=HTMLResponse)
async def latency_page(
    request: Request, store: StoreDep, project: PageProjectDep, auth: AuthenticatorDep, queue: str | None = None
) -> HTMLResponse:
    """TTFT split into queue wait and prefill, ITL, TPOT and end-to-end percentiles over time;
    the slowest routes; retrieval and rerank next to generation; the reported queues."""
    view = page_view(request)
    queue = check_value("queue", queue)

    def load() -> tuple[Any, ...]:
        data, opts = _with_options(store, project, view, latency)
        queues = queue_table(store, project, view.start_ns)
        if "service" in view.filters:
            queues = [q for q in queues if q["service"] == view.filters["service"]]
        depth = queue_series(store, project, view, queue) if queues else []
        return data, opts, queues, depth

    data, opts, queues, depth = await run_in_threadpool(load)
    return html(
        "latency.html", **_context("latency", project, auth, view), data=data, options=opts,
        figures=latency_figures(data), queues=queues, queue=queue,
        queue_chart=queue_figure(depth) if depth else None,
    )


@router.get("/cost", response_class=HTMLResponse)
async def cost_page(
    request: Request, store: StoreDep, project: PageProjectDep, auth: AuthenticatorDep, by: str | None = None
) -> HTMLResponse:
    """Spend per tenant, route and model over time; top spenders; cost per 1k calls; cost
    loops and context stuffing found."""
    view = page_view(request)
    by = check_choice("by", by, COST_BY, "tenant")
    data, opts = await run_in_threadpool(_with_options, store, project, view, cost, by)
    return html(
        "cost.html", **_context("cost", project, auth, view), data=data, options=opts,
        figures=cost_figures(data), by_choices=COST_BY,
    )


@router.get("/quality", response_class=HTMLResponse)
async def quality_page(
    request: Request, store: StoreDep, project: PageProjectDep, auth: AuthenticatorDep
) -> HTMLResponse:
    """Soft-failure rates over time and per label, judge scores by week and app version (like
    for like), and drift findings with their explanations."""
    view = page_view(request)
    data, opts = await run_in_threadpool(_with_options, store, project, view, quality)
    return html(
        "quality.html", **_context("quality", project, auth, view), data=data, options=opts,
        figures=quality_figures(data),
    )


@router.get("/alerts", response_class=HTMLResponse)
async def alerts_page(
    request: Request, store: StoreDep, project: PageProjectDep, auth: AuthenticatorDep, role: PageRoleDep
) -> HTMLResponse:
    """Alerts firing now, each marked silenced or acknowledged (who, why, until), with, for an
    admin session, a form to silence it (its labels as matchers) and one to acknowledge it; the
    project's silences (an admin may expire each); the history, each event linked to the view
    that explains it; and which collector's evaluator holds the lease now."""
    view = page_view(request)

    def load() -> tuple[Any, ...]:
        data, opts = _with_options(store, project, view, alerts)
        evaluator = Lease(store, AlertJob.name, "", wall=time.time).current()
        return (data, opts, silencing(store, project, data["firing"], datetime.now(timezone.utc), data["history"]),
                evaluator)

    data, opts, silenced, evaluator = await run_in_threadpool(load)
    return html("alerts.html", **_context("alerts", project, auth, view), data=data, options=opts,
                silenced=silenced, admin=role == "admin", evaluator=evaluator)


@router.get("/traces", response_class=HTMLResponse)
async def traces_page(
    request: Request, store: StoreDep, project: PageProjectDep, auth: AuthenticatorDep,
    sort: str | None = None, cursor: str | None = None,
) -> HTMLResponse:
    """Trace search for an incident: by service, route, tenant, model, user, session, tag, status,
    error type, detector label, judge score and text, over a range or a ``start``/``end`` window;
    sorted, counted and paged."""
    view = page_view(request)
    criteria = read_criteria(request.query_params)

    def load() -> tuple[Any, ...]:
        found = search(store, project, view, criteria, sort=sort, cursor=cursor)
        return found, options(store, project, view)

    data, opts = await run_in_threadpool(load)
    given = {k: (repr(v) if isinstance(v, float) else v) for k, v in criteria.items() if v is not None}
    search_args = {**view.query_args(), **given}
    if data["sort"] != "-time":
        search_args["sort"] = data["sort"]
    ctx = _context("traces", project, auth, view)
    return html("traces.html", **ctx, data=data, options=opts, criteria=criteria, statuses=STATUSES,
                sorts=SORT_LABELS, search_args=search_args, search_qs=urlencode(search_args),
                first_page=not cursor)


@router.get("/traces/{trace_id}", response_class=HTMLResponse)
async def trace_page(
    request: Request, trace_id: str, store: StoreDep, project: PageProjectDep, auth: AuthenticatorDep,
    role: PageRoleDep, at: int | None = AtQuery,
) -> HTMLResponse:
    """One trace as a waterfall; each LLM call with its queue wait, prefill and decode, prompt,
    output, detections and judge scores."""
    view = page_view(request)
    ctx = _context("traces", project, auth, view, admin=role == "admin")
    try:
        data = await run_in_threadpool(lambda: trace(store, project, trace_id, at_s=at))
    except BadRequest as exc:
        return html("trace.html", 404, **{**ctx, "error": str(exc)}, data=None, trace_id=trace_id)
    if data is None:
        ctx["error"] = "No such trace in this project."
        return html("trace.html", 404, **ctx, data=None, trace_id=trace_id)
    return html("trace.html", **ctx, data=data, trace_id=trace_id,
                chart=waterfall(data["spans"], data["duration_s"]))

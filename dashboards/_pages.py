"""Dashboard pages, rendered on the server from the same queries as the JSON API."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, select_autoescape

from infersight.collector._deps import SettingsDep, StoreDep
from infersight.collector._queries import summary

router = APIRouter()

_env = Environment(
    loader=PackageLoader("infersight.dashboards", "templates"),
    autoescape=select_autoescape(["html"], default_for_string=True, default=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
RANGES = {"1h": "last hour", "24h": "last day", "7d": "last week"}


def _ms(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds * 1000:,.0f} ms"


_env.filters["ms"] = _ms


@router.get("/", response_class=HTMLResponse)
async def overview(request: Request, store: StoreDep, settings: SettingsDep, range: str = "1h") -> HTMLResponse:
    """Spans, error rate, cost per tenant and latency percentiles over the chosen range."""
    from infersight.collector._timerange import since_to_unix_ns

    if range not in RANGES:
        range = "1h"
    data = await run_in_threadpool(summary, store, settings.project, since_to_unix_ns(range))
    max_cost = max((t["cost_usd"] for t in data["tenants"]), default=0.0) or 1.0
    html = _env.get_template("overview.html").render(
        data=data, range=range, ranges=RANGES, max_cost=max_cost, project=settings.project
    )
    return HTMLResponse(html)

"""Server-rendered dashboards (jinja2, autoescaped, inline SVG, no JavaScript) and the weekly
quality report (``infersight report weekly``, :data:`report_cli`).

``router`` holds the pages (``/``, ``/latency``, ``/cost``, ``/quality``, ``/alerts``,
``/traces``), the login form and their JSON twins under ``/api/v1``; the collector app includes
it. It is imported on first use, so the CLI does not pay for FastAPI when it only writes a report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._cli import report_cli
from ._headers import SECURITY_HEADERS

if TYPE_CHECKING:
    from fastapi import APIRouter
    from fastapi.responses import HTMLResponse

    router: APIRouter

    def error_page(message: str, status_code: int) -> HTMLResponse: ...

    def store_unavailable(message: str) -> HTMLResponse: ...

__all__ = ["SECURITY_HEADERS", "error_page", "report_cli", "router", "store_unavailable"]


def __getattr__(name: str) -> Any:
    if name == "router":
        from ._pages import router

        return router
    if name in ("error_page", "store_unavailable"):
        from . import _render

        return getattr(_render, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

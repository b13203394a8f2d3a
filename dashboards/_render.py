"""Rendering a page: the template and the shared navigation.

The security headers (``_headers.SECURITY_HEADERS``) are added to every response by the
collector app, pages included.
"""

from __future__ import annotations

from typing import Any

from fastapi.responses import HTMLResponse

from ._templates import env

PAGES = (
    ("overview", "Overview", "/"),
    ("latency", "Latency", "/latency"),
    ("cost", "Cost", "/cost"),
    ("quality", "Quality", "/quality"),
    ("alerts", "Alerts", "/alerts"),
    ("traces", "Traces", "/traces"),
    ("sessions", "Sessions", "/sessions"),
    ("users", "Users", "/users"),
    ("digest", "Digest", "/digest"),
    ("report", "Weekly report", "/report/weekly"),
)


def html(template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """Render ``template`` into a response.

    Pages get the shared navigation unless ``pages=None`` is passed (the login form).
    """
    context.setdefault("pages", PAGES)
    context.setdefault("nav_qs", "")
    if context["pages"] is None:
        del context["pages"]
    return HTMLResponse(env.get_template(template).render(**context), status_code)


def error_page(message: str, status_code: int) -> HTMLResponse:
    """The page for a request no page can answer: the status and why (a refused parameter, a
    refused cross-site form, a read the store refused), with the navigation to carry on."""
    return html("base.html", status_code, error=message, page=None, project=None)


def store_unavailable(message: str) -> HTMLResponse:
    """The page for any dashboard while the store cannot answer: 503, the reason, and a retry hint."""
    response = error_page(f"The store is unavailable, so this page cannot show data: {message}. "
                          "Spans keep arriving in the spool; reload in a moment.", 503)
    response.headers["retry-after"] = "5"
    return response

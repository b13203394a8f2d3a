"""Rendering a page: the template, the shared navigation and the security headers."""

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
    ("digest", "Digest", "/digest"),
)
# No script may run on these pages, whatever a span's text says: styles are inline, charts are
# inline SVG, forms only submit back here.
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {"content-security-policy": CSP, "x-content-type-options": "nosniff", "referrer-policy": "same-origin"}


def html(template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """Render ``template`` into a response with the dashboards' security headers.

    Pages get the shared navigation unless ``pages=None`` is passed (the login form).
    """
    context.setdefault("pages", PAGES)
    context.setdefault("nav_qs", "")
    if context["pages"] is None:
        del context["pages"]
    return HTMLResponse(env.get_template(template).render(**context), status_code, headers=HEADERS)

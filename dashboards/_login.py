"""``/login`` and ``/logout``: a dashboard session from a project API key, in a signed cookie.

Only read and admin keys log in. An ingest key, the one in every app's configuration, is refused
with a page that says which kind of key to use: whoever can read an app's config must not
thereby read the project's prompts.

Both forms are refused unless the browser shows they were posted from the collector's own
pages (``SameOriginDep``): another site must neither log this browser into its project nor log
it out. Logging out ends the session on the server, not only in this browser's cookie jar.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from infersight.collector.errors import Forbidden, Unauthorized
from infersight.collector.web import SESSION_COOKIE, SESSION_MAX_AGE_S, AuthenticatorDep, SameOriginDep

from ._render import html

router = APIRouter()
_FORM_MAX_BYTES = 8192
_INGEST_KEY = (
    "That is an ingest key: apps send telemetry with it, but it cannot open the dashboards. Log in with a "
    "read key (or an admin key); make one with 'infersight keys create --project NAME --role read'."
)


def _safe_next(target: str) -> str:
    # Only a path on this site: "//evil.example" or "/\evil.example" would leave it.
    if not target.startswith("/") or target.startswith(("//", "/\\")):
        return "/"
    return target


def _login_page(next_path: str, error: str | None, status_code: int = 200) -> HTMLResponse:
    return html("login.html", status_code, pages=None, next=next_path, error=error, project=None)


@router.get("/login", response_class=HTMLResponse)
async def login_form(auth: AuthenticatorDep, next: str = "/") -> Response:
    """The login form: paste a read or admin key of the project (it says so, and how to make one)."""
    if auth is None:
        return RedirectResponse("/", 303)
    return _login_page(_safe_next(next), None)


@router.post("/login")
async def login(request: Request, auth: AuthenticatorDep, _: SameOriginDep) -> Response:
    """Check the key and set the session cookie (HttpOnly, SameSite=Lax, signed, 12 h)."""
    if auth is None:
        return RedirectResponse("/", 303)
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > _FORM_MAX_BYTES:
            return Response("form too large", 413)
    form = parse_qs(body.decode("utf-8", "replace"), max_num_fields=10)
    key = form.get("key", [""])[0].strip()
    next_path = _safe_next(form.get("next", ["/"])[0])
    try:
        cookie = await run_in_threadpool(auth.session_cookie, key)
    except Unauthorized:
        return _login_page(next_path, "That key is unknown or revoked.", 401)
    except Forbidden:
        return _login_page(next_path, _INGEST_KEY, 403)
    response = RedirectResponse(next_path, 303)
    response.set_cookie(
        SESSION_COOKIE,
        cookie,
        max_age=SESSION_MAX_AGE_S,
        path="/",
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/logout")
async def logout(request: Request, auth: AuthenticatorDep, _: SameOriginDep) -> Response:
    """End the session (a copy of its cookie no longer works), forget the cookie, and go back
    to the login form."""
    if auth is not None:
        await run_in_threadpool(auth.end_session, request.cookies.get(SESSION_COOKIE))
    response = RedirectResponse("/login", 303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response

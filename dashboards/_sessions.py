"""Sessions and users: the conversations of a range with their figures, one conversation turn by
turn, and the application's end users by (tenant, user); pages and their ``/api/v1`` twins.

Pages and API read the same store functions (``store.find_sessions``, ``store.session_turns``,
``store.find_users``) over the same :class:`View`, so both show the same numbers, and a session's
figures are its traces' as the Traces page shows them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse

from infersight.collector.store import (
    Store,
    check_text,
    find_sessions,
    find_users,
    session_json,
    session_turns,
)
from infersight.collector.web import AuthenticatorDep, PageProjectDep, ReadProjectDep, StoreDep

from ._filters import DIMENSIONS, RANGES, View, check_value, view_from_since, view_from_window
from ._queries import options, window
from ._render import html

router = APIRouter()
PAGE_LIMIT = 50
PAGE_MAX = 500
CURSOR_MAX_CHARS = 1024
_SPAN_FILTERS = {"service": "service", "route": "route", "tenant": "tenant", "model": "model", "user": "user_id"}


def _columns(view: View, user: str | None) -> dict[str, str]:
    given = {**{dim: view.filters.get(dim) for dim in DIMENSIONS}, "user": user}
    return {column: value for param, column in _SPAN_FILTERS.items() if (value := given.get(param))}


def sessions(store: Store, project: str, view: View, user: str | None, *, cursor: str | None = None,
             limit: int = PAGE_LIMIT) -> dict[str, Any]:
    """The sessions over ``view`` (and ``user``), most recently active first, one page: the window,
    ``total``, ``next_cursor`` and ``sessions`` (``store.find_sessions``)."""
    cursor = check_text("cursor", cursor, max_chars=CURSOR_MAX_CHARS)
    found = find_sessions(store, project, view.start_ns, view.end_ns, columns=_columns(view, user), cursor=cursor,
                          limit=limit)
    return {**_window(view, found), "total": found["total"], "next_cursor": found["next_cursor"],
            "sessions": [session_json(s) for s in found["sessions"]]}


def one_session(store: Store, project: str, view: View, session_id: str) -> dict[str, Any] | None:
    """One session over ``view``'s window, its turns in time order (``store.session_turns``);
    ``None`` when it has no turn there."""
    found = session_turns(store, project, _session_id(session_id), view.start_ns, view.end_ns)
    return None if found is None else {**window(view), **session_json(found)}


def users(store: Store, project: str, view: View, user: str | None, *, cursor: str | None = None,
          limit: int = PAGE_LIMIT) -> dict[str, Any]:
    """The (tenant, user) pairs over ``view``, most recently active first, one page
    (``store.find_users``)."""
    cursor = check_text("cursor", cursor, max_chars=CURSOR_MAX_CHARS)
    found = find_users(store, project, view.start_ns, view.end_ns, columns=_columns(view, user), cursor=cursor,
                       limit=limit)
    return {**_window(view, found), "total": found["total"], "next_cursor": found["next_cursor"],
            "users": found["users"]}


def session_path(session_id: str) -> str:
    """The session view's path: any text (slashes, quotes, markup) as one path segment."""
    return "/sessions/" + quote(session_id, safe="")


def _window(view: View, found: Mapping[str, Any]) -> dict[str, Any]:
    return window(replace(view, start_ns=found["start_ns"], end_ns=found["end_ns"]))


def _session_id(session_id: str) -> str:
    return check_text("session", session_id) or ""


def _page_view(request: Request) -> tuple[View, str | None]:
    query = request.query_params
    view = view_from_window(query.get("range"), query.get("start"), query.get("end"),
                            {dim: query.get(dim) for dim in DIMENSIONS})
    return view, check_value("user", query.get("user"))


def _context(page: str, project: str, auth: Any, view: View, user: str | None) -> dict[str, Any]:
    args = view.query_args()
    search = {**args, **({"user": user} if user else {})}
    return {"page": page, "project": project, "logout": auth is not None, "view": view, "error": None,
            "ranges": RANGES, "nav_qs": "?" + urlencode(args) if args else "", "user": user,
            "search_args": search, "search_qs": urlencode(search)}


@router.get("/sessions", response_class=HTMLResponse)
async def sessions_page(
    request: Request, store: StoreDep, project: PageProjectDep, auth: AuthenticatorDep, cursor: str | None = None,
) -> HTMLResponse:
    """The conversations of the range, most recently active first: turns, LLM calls, errors,
    latency, cost, detector hits, judge score means and feedback, each linked to its turns and
    traces."""
    view, user = _page_view(request)

    def load() -> tuple[Any, ...]:
        return sessions(store, project, view, user, cursor=cursor), options(store, project, view)

    data, opts = await run_in_threadpool(load)
    for row in data["sessions"]:
        row["path"] = session_path(row["session_id"])
    return html("sessions.html", **_context("sessions", project, auth, view, user), data=data, options=opts,
                first_page=not cursor)


@router.get("/sessions/{session_id:path}", response_class=HTMLResponse)
async def session_page(
    request: Request, session_id: str, store: StoreDep, project: PageProjectDep, auth: AuthenticatorDep,
) -> HTMLResponse:
    """One conversation turn by turn: each trace's input and answer, with its cost, latency,
    errors, detector labels, judge scores, feedback and a link to the trace."""
    view, user = _page_view(request)
    ctx = _context("sessions", project, auth, view, user)
    data = await run_in_threadpool(one_session, store, project, view, session_id)
    if data is None:
        ctx["error"] = f"No turn of this session in {view.label}: widen the range, or check the session id."
        return html("session.html", 404, **ctx, data=None, session_id=session_id)
    return html("session.html", **ctx, data=data, session_id=session_id,
                traces_qs=urlencode({**view.query_args(), "session": session_id}))


@router.get("/users", response_class=HTMLResponse)
async def users_page(
    request: Request, store: StoreDep, project: PageProjectDep, auth: AuthenticatorDep, cursor: str | None = None,
) -> HTMLResponse:
    """The application's end users by (tenant, user), most recently active first: LLM calls,
    errors, cost, sessions, last seen and feedback, each linked to their sessions and traces."""
    view, user = _page_view(request)

    def load() -> tuple[Any, ...]:
        return users(store, project, view, user, cursor=cursor), options(store, project, view)

    data, opts = await run_in_threadpool(load)
    return html("users.html", **_context("users", project, auth, view, user), data=data, options=opts,
                first_page=not cursor)


def _api_view(since: str, start: str | None, end: str | None, dims: dict[str, str | None]) -> View:
    return view_from_window(None, start, end, dims) if start or end else view_from_since(since, dims)


_CURSOR = Query(None, description="next_cursor of the previous page: the same search, continued")
_LIMIT = Query(PAGE_LIMIT, ge=1, le=PAGE_MAX)


@router.get("/api/v1/sessions")
async def sessions_api(
    store: StoreDep, project: ReadProjectDep, since: str = "24h", start: str | None = None, end: str | None = None,
    service: str | None = None, route: str | None = None, tenant: str | None = None, model: str | None = None,
    user: str | None = None, cursor: str | None = _CURSOR, limit: int = _LIMIT,
) -> dict[str, Any]:
    """A page of the sessions with a span in the window matching every filter, most recently
    active first, with ``total`` and ``next_cursor``. ``start``/``end`` (ISO 8601) win over ``since``."""
    view = _api_view(since, start, end, {"service": service, "route": route, "tenant": tenant, "model": model})
    checked = check_value("user", user)
    return await run_in_threadpool(lambda: sessions(store, project, view, checked, cursor=cursor, limit=limit))


@router.get("/api/v1/sessions/{session_id:path}")
async def session_api(
    store: StoreDep, project: ReadProjectDep, session_id: str, since: str = "24h", start: str | None = None,
    end: str | None = None,
) -> dict[str, Any]:
    """One session's totals and its turns in time order, each with its input and output text."""
    view = _api_view(since, start, end, {})
    data = await run_in_threadpool(one_session, store, project, view, session_id)
    if data is None:
        raise HTTPException(404, "no turn of this session in the window")
    return data


@router.get("/api/v1/users")
async def users_api(
    store: StoreDep, project: ReadProjectDep, since: str = "24h", start: str | None = None, end: str | None = None,
    service: str | None = None, route: str | None = None, tenant: str | None = None, model: str | None = None,
    user: str | None = None, cursor: str | None = _CURSOR, limit: int = _LIMIT,
) -> dict[str, Any]:
    """A page of the (tenant, user) pairs with spans in the window, most recently active first."""
    view = _api_view(since, start, end, {"service": service, "route": route, "tenant": tenant, "model": model})
    checked = check_value("user", user)
    return await run_in_threadpool(lambda: users(store, project, view, checked, cursor=cursor, limit=limit))

"""Shared FastAPI dependencies: what the app opened at startup, and the caller's project.

The accessors are ``async def`` although they never await: FastAPI runs a plain ``def``
dependency in its thread pool, a hop per dependency per request. (The OTLP receivers use no
dependencies at all, see :mod:`._ingest`.)
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import Depends, HTTPException, Request

from .._counters import not_analysed
from ..errors import Unauthorized
from ..store import Store
from ._auth import SESSION_COOKIE, Authenticator


# app.state is an untyped namespace: each read below names the type create_app stored there.
async def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


async def _authenticator(request: Request) -> Authenticator | None:
    auth: Authenticator | None = request.app.state.authenticator
    return auth


def key_project(request: Request) -> str:
    """The project of the request's API key (:class:`~infersight.collector.errors.Unauthorized` without a valid
    one), or the dev mode's single project."""
    auth: Authenticator | None = request.app.state.authenticator
    if auth is None:
        return _dev_project(request)
    return auth.project_for_authorization(request.headers.get("authorization"))


def _dev_project(request: Request) -> str:
    """Without API keys (``--no-auth``), every request is the settings' one project."""
    project: str = request.app.state.settings.project
    return project


def _api_project(request: Request) -> str:
    """The project of the request's API key, or 401 with a JSON ``detail``."""
    try:
        return key_project(request)
    except Unauthorized as exc:
        raise HTTPException(401, str(exc), headers={"WWW-Authenticate": "Bearer"}) from exc


def _page_project(request: Request) -> str:
    """The project of the dashboard session; without one, a redirect to the login page."""
    auth: Authenticator | None = request.app.state.authenticator
    if auth is None:
        return _dev_project(request)
    project = auth.project_for_session(request.cookies.get(SESSION_COOKIE))
    if project is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise HTTPException(303, "log in first", headers={"Location": f"/login?next={quote(target, safe='')}"})
    return project


async def _page_not_analysed(request: Request, project: Annotated[str, Depends(_page_project)]) -> dict[str, int]:
    """The session's project's LLM outputs not analysed by the inline detectors since this
    collector started, by reason (only reasons that occurred)."""
    counts = not_analysed(request.app.state.counters.snapshot(), project)
    return {reason: value for reason, value in counts.items() if value}


StoreDep = Annotated[Store, Depends(_store)]
AuthenticatorDep = Annotated[Authenticator | None, Depends(_authenticator)]
ApiProjectDep = Annotated[str, Depends(_api_project)]
PageProjectDep = Annotated[str, Depends(_page_project)]
PageNotAnalysedDep = Annotated[dict[str, int], Depends(_page_not_analysed)]

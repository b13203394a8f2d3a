"""Shared FastAPI dependencies: what the app opened at startup, and the caller's project.

Every route that serves or changes a project's data states the role it needs by the dependency
that gives it the project (:mod:`._roles`): :data:`ReadProjectDep` and :data:`AdminProjectDep`
for API clients (a key in ``Authorization``), :data:`PageProjectDep` and
:data:`AdminPageProjectDep` for the dashboards (a session cookie), :data:`IngestProjectDep` for
what apps send through FastAPI routes. The OTLP receivers call :func:`key_project` themselves.
A key whose role does not reach the route gets 403 naming the role it needs.

The accessors are ``async def`` although they never await: FastAPI runs a plain ``def``
dependency in its thread pool, a hop per dependency per request. (The OTLP receivers use no
dependencies at all, see :mod:`._ingest`.)
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import Depends, HTTPException, Request

from .._counters import not_analysed
from ..errors import Forbidden, Unauthorized
from ..store import Store
from ._auth import SESSION_COOKIE, Authenticator
from ._roles import Role, refusal


# app.state is an untyped namespace: each read below names the type create_app stored there.
async def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


async def _authenticator(request: Request) -> Authenticator | None:
    auth: Authenticator | None = request.app.state.authenticator
    return auth


def key_project(request: Request, needed: Role = "ingest") -> str:
    """The project of the request's API key if its role allows ``needed``
    (:class:`~infersight.collector.errors.Unauthorized` without a valid key,
    :class:`~infersight.collector.errors.Forbidden` for one of another role), or the dev mode's
    single project."""
    auth: Authenticator | None = request.app.state.authenticator
    if auth is None:
        return _dev_project(request)
    return auth.project_for_authorization(request.headers.get("authorization"), needed)


def _dev_project(request: Request) -> str:
    """Without API keys (``--no-auth``), every request is the settings' one project."""
    project: str = request.app.state.settings.project
    return project


class _ApiProject:
    """A dependency: the project of the request's API key, or 401 with a JSON ``detail`` (and
    403 from the error handlers when the key's role does not allow :attr:`role`)."""

    def __init__(self, role: Role) -> None:
        self.role = role

    async def __call__(self, request: Request) -> str:
        try:
            return key_project(request, self.role)
        except Unauthorized as exc:
            raise HTTPException(401, str(exc), headers={"WWW-Authenticate": "Bearer"}) from exc


class _PageProject:
    """A dependency: the project of the dashboard session if its key's role allows :attr:`role`
    (403 otherwise); without a session, a redirect to the login page."""

    def __init__(self, role: Role) -> None:
        self.role = role

    async def __call__(self, request: Request) -> str:
        auth: Authenticator | None = request.app.state.authenticator
        if auth is None:
            return _dev_project(request)
        grant = auth.grant_for_session(request.cookies.get(SESSION_COOKIE))
        if grant is None:
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            raise HTTPException(303, "log in first", headers={"Location": f"/login?next={quote(target, safe='')}"})
        if not grant.allows(self.role):
            raise Forbidden(refusal(grant.role, self.role))
        return grant.project


_read_page_project = _PageProject("read")


def route_role(dependency: object) -> Role | None:
    """The role that ``dependency`` requires if it is one of the project dependencies, else ``None``."""
    return dependency.role if isinstance(dependency, _ApiProject | _PageProject) else None


async def _page_role(request: Request, _: Annotated[str, Depends(_read_page_project)]) -> Role:
    """The role of the dashboard session, for pages that offer a form only to the role its POST
    needs. Without API keys (``--no-auth``) every route is open, so the pages offer every form."""
    auth: Authenticator | None = request.app.state.authenticator
    if auth is None:
        return "admin"
    grant = auth.grant_for_session(request.cookies.get(SESSION_COOKIE))
    # The session passed the page's check a moment ago; if it ended since, offer no form.
    return "read" if grant is None else grant.role


async def _page_not_analysed(request: Request, project: Annotated[str, Depends(_read_page_project)]) -> dict[str, int]:
    """The session's project's LLM outputs not analysed by the inline detectors since this
    collector started, by reason (only reasons that occurred)."""
    counts = not_analysed(request.app.state.counters.snapshot(), project)
    return {reason: value for reason, value in counts.items() if value}


StoreDep = Annotated[Store, Depends(_store)]
AuthenticatorDep = Annotated[Authenticator | None, Depends(_authenticator)]
IngestProjectDep = Annotated[str, Depends(_ApiProject("ingest"))]
ReadProjectDep = Annotated[str, Depends(_ApiProject("read"))]
AdminProjectDep = Annotated[str, Depends(_ApiProject("admin"))]
PageProjectDep = Annotated[str, Depends(_read_page_project)]
AdminPageProjectDep = Annotated[str, Depends(_PageProject("admin"))]
PageNotAnalysedDep = Annotated[dict[str, int], Depends(_page_not_analysed)]
PageRoleDep = Annotated[Role, Depends(_page_role)]

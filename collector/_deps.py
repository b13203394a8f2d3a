"""Shared FastAPI dependencies: what the app opened at startup, and the caller's project.

The accessors are ``async def`` although they never await: FastAPI runs a plain ``def``
dependency in its thread pool, and six such hops per OTLP request cost the server process
about a third of its CPU at 20k spans/s.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import Depends, HTTPException, Request

from ._auth import SESSION_COOKIE, Authenticator
from ._errors import Unauthorized
from ._metrics import Counters
from ._decode import Decoder
from ._settings import Settings
from ._spool import Spool
from ._store import Store
from ._writer import SpoolWriter


async def _store(request: Request) -> Store:
    return request.app.state.store


async def _settings(request: Request) -> Settings:
    return request.app.state.settings


async def _spool(request: Request) -> Spool:
    return request.app.state.spool


async def _writer(request: Request) -> SpoolWriter:
    return request.app.state.writer


async def _decoder(request: Request) -> Decoder:
    return request.app.state.decoder


async def _counters(request: Request) -> Counters:
    return request.app.state.counters


async def _authenticator(request: Request) -> Authenticator | None:
    return request.app.state.authenticator


def _api_project(request: Request) -> str:
    """The project of the request's API key, or 401 with a JSON ``detail``."""
    auth: Authenticator | None = request.app.state.authenticator
    if auth is None:
        return request.app.state.settings.project
    try:
        return auth.project_for_authorization(request.headers.get("authorization"))
    except Unauthorized as exc:
        raise HTTPException(401, str(exc), headers={"WWW-Authenticate": "Bearer"}) from exc


def _page_project(request: Request) -> str:
    """The project of the dashboard session; without one, a redirect to the login page."""
    auth: Authenticator | None = request.app.state.authenticator
    if auth is None:
        return request.app.state.settings.project
    project = auth.project_for_session(request.cookies.get(SESSION_COOKIE))
    if project is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise HTTPException(303, "log in first", headers={"Location": f"/login?next={quote(target, safe='')}"})
    return project


StoreDep = Annotated[Store, Depends(_store)]
SettingsDep = Annotated[Settings, Depends(_settings)]
SpoolDep = Annotated[Spool, Depends(_spool)]
WriterDep = Annotated[SpoolWriter, Depends(_writer)]
DecoderDep = Annotated[Decoder, Depends(_decoder)]
CountersDep = Annotated[Counters, Depends(_counters)]
AuthenticatorDep = Annotated[Authenticator | None, Depends(_authenticator)]
ApiProjectDep = Annotated[str, Depends(_api_project)]
PageProjectDep = Annotated[str, Depends(_page_project)]

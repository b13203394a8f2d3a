"""The web layer's shared parts: API keys, dashboard sessions, the FastAPI dependencies that
routes (the read API here, the dashboards, the digest page) use to reach the store and the
caller's project, the origin checks of routes that change state, and the checks of query
parameters. The routers themselves are mounted by the app factory."""

from __future__ import annotations

from ._auth import SESSION_COOKIE, SESSION_MAX_AGE_S, Authenticator
from ._deps import ApiProjectDep, AuthenticatorDep, PageNotAnalysedDep, PageProjectDep, StoreDep, key_project
from ._keys import ProjectKeys
from ._origin import NotCrossSiteDep, SameOriginDep

__all__ = [
    "ApiProjectDep",
    "Authenticator",
    "AuthenticatorDep",
    "NotCrossSiteDep",
    "PageNotAnalysedDep",
    "PageProjectDep",
    "ProjectKeys",
    "SESSION_COOKIE",
    "SESSION_MAX_AGE_S",
    "SameOriginDep",
    "StoreDep",
    "key_project",
]

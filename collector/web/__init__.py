"""The web layer's shared parts: API keys, dashboard sessions and the FastAPI dependencies
that routes (the read API here, the dashboards, the digest page) use to reach the store and
the caller's project. The routers themselves are mounted by the app factory."""

from __future__ import annotations

from ._auth import SESSION_COOKIE, SESSION_MAX_AGE_S, Authenticator
from ._deps import ApiProjectDep, AuthenticatorDep, PageNotAnalysedDep, PageProjectDep, StoreDep, key_project
from ._keys import ProjectKeys

__all__ = [
    "ApiProjectDep",
    "Authenticator",
    "AuthenticatorDep",
    "PageNotAnalysedDep",
    "PageProjectDep",
    "ProjectKeys",
    "SESSION_COOKIE",
    "SESSION_MAX_AGE_S",
    "StoreDep",
    "key_project",
]

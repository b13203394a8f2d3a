"""The web layer: what every route stands on, and the shared read API.

API keys, dashboard sessions, the FastAPI dependencies that every stage's routes (the OTLP
receivers, the alerts' and judges' routes, the dashboards) use to reach the store and the
caller's project, the origin checks of routes that change state, the security headers, the
error answers (:class:`ErrorPages` brings the pages of whoever serves them) and the body drain;
and the CLI's way to a data directory: its store, or the collector that owns it
(:func:`store_or_collector`).
Its own routes are the shared read API over the store and the spool (``api_router``), apps'
feedback on traces (``feedback_router``) and the
collector's health in Prometheus text (``metrics_router``). The app factory mounts them all.
"""

from __future__ import annotations

from ._api import router as api_router
from ._auth import SESSION_COOKIE, SESSION_MAX_AGE_S, Authenticator
from ._body import UnreadBodyDrain
from ._client import (
    CollectorAnswer,
    CollectorClient,
    CollectorUnreachable,
    collector_url,
    record_collector_url,
    store_or_collector,
)
from ._deps import ApiProjectDep, AuthenticatorDep, PageNotAnalysedDep, PageProjectDep, StoreDep, key_project
from ._error_pages import ErrorPages
from ._feedback import router as feedback_router
from ._keys import ProjectKeys
from ._metrics import router as metrics_router
from ._origin import NotCrossSiteDep, SameOriginDep
from ._security import SecurityHeaders, error_handlers

__all__ = [
    "ApiProjectDep",
    "Authenticator",
    "AuthenticatorDep",
    "CollectorAnswer",
    "CollectorClient",
    "CollectorUnreachable",
    "ErrorPages",
    "NotCrossSiteDep",
    "PageNotAnalysedDep",
    "PageProjectDep",
    "ProjectKeys",
    "SESSION_COOKIE",
    "SESSION_MAX_AGE_S",
    "SameOriginDep",
    "SecurityHeaders",
    "StoreDep",
    "UnreadBodyDrain",
    "api_router",
    "collector_url",
    "error_handlers",
    "feedback_router",
    "key_project",
    "metrics_router",
    "record_collector_url",
    "store_or_collector",
]

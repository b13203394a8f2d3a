"""The web layer: what every route stands on, and the shared read API.

API keys and their roles (kept in the data directory's key file, or in the store for every
collector of a deployment), dashboard sessions, the FastAPI dependencies that every stage's
routes (the OTLP receivers, the alerts' and judges' routes, the dashboards) use to reach the
store and the caller's project with the role each route needs, the origin checks of routes that
change state, the security headers, the error answers (:class:`ErrorPages` brings the pages
of whoever serves them) and the body drain; and the CLI's way to a data directory: its store,
or the collector that owns it (:func:`store_or_collector`).
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
from ._deps import (
    AdminPageProjectDep,
    AdminProjectDep,
    AuthenticatorDep,
    IngestProjectDep,
    PageNotAnalysedDep,
    PageProjectDep,
    PageRoleDep,
    ReadProjectDep,
    StoreDep,
    key_project,
    route_role,
)
from ._error_pages import ErrorPages
from ._feedback import router as feedback_router
from ._keys import KEYS_FILE, KeyBook, KeyInfo, ProjectKeys
from ._metrics import router as metrics_router
from ._origin import NotCrossSiteDep, SameOriginDep
from ._roles import ROLES, Role
from ._security import SecurityHeaders, error_handlers
from ._store_keys import StoreKeys, open_key_book

__all__ = [
    "AdminPageProjectDep",
    "AdminProjectDep",
    "Authenticator",
    "AuthenticatorDep",
    "CollectorAnswer",
    "CollectorClient",
    "CollectorUnreachable",
    "ErrorPages",
    "IngestProjectDep",
    "KEYS_FILE",
    "KeyBook",
    "KeyInfo",
    "NotCrossSiteDep",
    "PageNotAnalysedDep",
    "PageProjectDep",
    "PageRoleDep",
    "ProjectKeys",
    "ROLES",
    "ReadProjectDep",
    "Role",
    "SESSION_COOKIE",
    "SESSION_MAX_AGE_S",
    "SameOriginDep",
    "SecurityHeaders",
    "StoreDep",
    "StoreKeys",
    "UnreadBodyDrain",
    "api_router",
    "collector_url",
    "error_handlers",
    "feedback_router",
    "key_project",
    "metrics_router",
    "open_key_book",
    "record_collector_url",
    "route_role",
    "store_or_collector",
]

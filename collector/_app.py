"""``create_app(settings)``: routes, middleware and the store's lifetime, declared in one place."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import logging

from fastapi import FastAPI

from . import _api, _ingest
from ._settings import Settings
from ._store import ChdbStore, Store

logger = logging.getLogger("infersight.collector")


def create_app(settings: Settings, *, store: Store | None = None) -> FastAPI:
    """The collector's ASGI app.

    Opens the embedded store at startup unless ``store`` is given; either way the app owns the
    store from then on and closes it at shutdown.
    """
    from infersight.dashboards import router as dashboards_router

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.store = ChdbStore(settings.data_dir) if store is None else store
        try:
            yield
        finally:
            app.state.store.close()
            logger.info("infersight collector stopped; store closed")

    app = FastAPI(title="infersight collector", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.settings = settings

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    app.include_router(_ingest.router)
    app.include_router(_api.router)
    app.include_router(dashboards_router)
    return app

"""``create_app(settings)``: routes, middleware and the lifetime of what they use, in one place."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from fastapi import FastAPI

from ._counters import Counters
from ._jobs import Scheduler
from ._settings import Settings
from .alerts import AlertJob
from .alerts import router as alerts_router
from .ingest import Decoder, default_workers
from .ingest import router as ingest_router
from .spool import Spool, SpoolWriter
from .store import LEASE_TTL_S, ChdbStore, ClickHouseStore, Store
from .web import (
    KEYS_FILE,
    Authenticator,
    ErrorPages,
    KeyBook,
    ProjectKeys,
    SecurityHeaders,
    StoreKeys,
    UnreadBodyDrain,
    api_router,
    error_handlers,
    feedback_router,
    metrics_router,
)

logger = logging.getLogger("infersight.collector")

SPOOL_FILE = "spool.db"


def create_app(settings: Settings, *, store: Store | None = None) -> FastAPI:
    """The collector's ASGI app.

    At startup it opens the embedded store (unless ``store`` is given), the spool, the key file
    (unless ``settings.auth`` is off) and starts the spool writer, which first drains whatever a
    previous run left in the spool. Either way the app owns the store from then on: at shutdown
    the writer stops (after a short drain) and everything is closed.
    """
    from infersight import dashboards, judges

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # uvicorn re-raises SIGTERM after its graceful shutdown, so cleanup lives here, not in
        # a ``finally`` around uvicorn.run.
        async with AsyncExitStack() as stack:
            app.state.store = open_store(settings) if store is None else store
            stack.callback(_closed, app.state.store)
            app.state.spool = Spool(settings.data_dir / SPOOL_FILE, max_bytes=settings.spool_max_bytes)
            stack.callback(app.state.spool.close)
            app.state.authenticator = None
            if settings.auth:
                keys = open_keys(settings, app.state.store)
                stack.callback(keys.close)
                app.state.authenticator = Authenticator(keys)
            app.state.decoder = Decoder(
                default_workers() if settings.decode_workers is None else settings.decode_workers,
                limit_bytes=settings.max_body_bytes,
                window=settings.ingest_window,
                detect_deadline_s=settings.detect_deadline_s,
            )
            stack.callback(app.state.decoder.close)
            app.state.writer = SpoolWriter(
                app.state.spool, app.state.store, app.state.counters, detect=app.state.decoder.detect
            )
            app.state.writer.start()
            # the writer stops first (its drain), cutting short a detector run under way
            stack.callback(app.state.writer.stop, interrupt=app.state.decoder.close)
            # One evaluator and one judge per deployment, whichever collector holds the lease.
            jobs = app.state.jobs = Scheduler(app.state.counters, store=app.state.store,
                                             lease_ttl_s=settings.lease_ttl_s or LEASE_TTL_S)
            if settings.alerts:
                alert_job = AlertJob(settings, app.state.store, app.state.spool)
                jobs.add(AlertJob.name, settings.evaluation_interval_s, alert_job.run, setup=alert_job.setup,
                         exclusive=True)
            if settings.judge is not None:
                judge_loop = judges.judge_loop_from(settings.judge, app.state.store)
                stack.callback(judge_loop.close)
                jobs.add("judge", settings.judge.every_s, judge_loop.run_once, first_after_s=0.0,
                         interrupt=judge_loop.interrupt, exclusive=True)
            jobs.start()
            stack.callback(jobs.stop, 5.0)  # within the server's stop bound
            yield

    # FastAPI traces itself once a global OTel provider exists. In a process that also runs the
    # SDK (the demo, an app embedding the collector), its spans of POST /v1/traces would be
    # exported back to /v1/traces, and each export would create more: a feedback loop that keeps
    # force_flush() from ever returning. The collector never traces itself.
    app = FastAPI(
        title="infersight collector", lifespan=lifespan, docs_url=None, redoc_url=None,
        telemetry={"tracing": False, "metrics": False, "logs": False, "auto_configure": False},
    )
    app.state.settings = settings
    app.state.counters = Counters()
    app.add_middleware(UnreadBodyDrain)
    app.add_middleware(SecurityHeaders, headers=dashboards.SECURITY_HEADERS)
    pages = ErrorPages(error=dashboards.error_page, store_unavailable=dashboards.store_unavailable)
    for error, handler in error_handlers(pages).items():
        app.add_exception_handler(error, handler)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    # Each stage serves its own data; no two routers share a path.
    app.include_router(ingest_router)
    app.include_router(api_router)
    app.include_router(feedback_router)
    app.include_router(metrics_router)
    app.include_router(alerts_router)
    app.include_router(judges.router)
    app.include_router(dashboards.router)
    return app


def open_store(settings: Settings) -> Store:
    """The ClickHouse server at ``settings.clickhouse_url``, else the embedded store in the data dir."""
    if settings.clickhouse_url:
        return ClickHouseStore(settings.clickhouse_url, cluster=settings.cluster)
    return ChdbStore(settings.data_dir)


def open_keys(settings: Settings, store: Store) -> KeyBook:
    """The deployment's keys: in the store with ``settings.clickhouse_url`` (shared by every
    collector on that server; a key file left in the data directory by a collector of this
    deployment is copied in once, so its keys keep working), else the data directory's key file."""
    if not settings.clickhouse_url:
        keys: KeyBook = ProjectKeys(settings.data_dir)
        where = f"--data-dir {settings.data_dir}"
    else:
        keys = StoreKeys(store)
        where = "--clickhouse-url URL"
        if (settings.data_dir / KEYS_FILE).is_file():
            key_file = ProjectKeys(settings.data_dir, create=False)
            try:
                copied = keys.adopt(key_file.stored(), key_file.session_secrets())
            finally:
                key_file.close()
            if copied:
                logger.warning("copied %d API keys from %s into the store, where every collector of this "
                               "deployment reads them; manage them with 'infersight keys ... --clickhouse-url'",
                               copied, settings.data_dir / KEYS_FILE)
    if not keys.has_active_keys():
        logger.warning("no active API keys: every request gets 401; create one with "
                       "'infersight keys create --project NAME %s'", where)
    return keys


def _closed(store: Store) -> None:
    store.close()
    logger.info("infersight collector stopped; store closed")

"""The FastAPI application: wiring of runtime, routers and lifecycle."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from alertrouter import __version__
from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest import routes as ingest_routes
from alertrouter.ingest.auth import Authenticator
from alertrouter.maintenance import Maintenance, TouchBuffer
from alertrouter.metrics import Metrics
from alertrouter.processor import Ingestor
from alertrouter.ruleset import Ruleset
from alertrouter.ruleset.build import build_pipeline
from alertrouter.runtime import Runtime
from alertrouter.settings import Settings
from alertrouter.store import STORE_ERRORS, Database, describe_error
from alertrouter.store.migrate import head_revision, upgrade
from alertrouter.web import api, incidents, ops

__all__ = ["build_runtime", "create_app"]

log = logging.getLogger(__name__)


def build_runtime(settings: Settings, ruleset: Ruleset) -> Runtime:
    db = Database(
        settings.database_url,
        sqlite_synchronous=settings.sqlite_synchronous,
        pool_size=settings.db_pool_size,
        busy_timeout=max(0.1, settings.store_timeout.total_seconds() * 0.8),
    )
    touches = TouchBuffer()
    metrics = Metrics()
    metrics.config_hash.labels(hash=ruleset.config_hash).set(1)
    maintenance = Maintenance(
        db,
        touches,
        interval=settings.touch_flush_interval,
        retention=settings.raw_event_retention,
        on_expired=metrics.expired.inc,
    )
    return Runtime(
        settings=settings,
        ruleset=ruleset,
        db=db,
        ingestor=Ingestor(db, touches),
        maintenance=maintenance,
        engine=EngineRunner(db, build_pipeline(ruleset), metrics, interval=settings.engine_interval),
        metrics=metrics,
        auth=Authenticator(settings),
        head_revision=head_revision(),
    )


def create_app(settings: Settings, ruleset: Ruleset) -> FastAPI:
    """An app whose lifespan migrates (if enabled), starts maintenance, and flushes on shutdown."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.auto_migrate:
            await asyncio.to_thread(upgrade, settings.database_url)
        runtime = build_runtime(settings, ruleset)
        app.state.runtime = runtime
        runtime.maintenance.start()
        runtime.engine.start()
        log.info(
            "alertrouter %s ready: store %s, rules %s (hash %s)",
            __version__,
            runtime.db.dialect,
            ", ".join(ruleset.sources) or "defaults",
            ruleset.config_hash,
        )
        try:
            yield
        finally:
            await runtime.engine.stop()
            await runtime.maintenance.stop()
            await runtime.db.dispose()

    app = FastAPI(
        title="alertrouter",
        version=__version__,
        summary="Cuts Alertmanager noise for GPU clusters before anyone is paged.",
        lifespan=lifespan,
    )

    async def store_unavailable(request: Request, exc: Exception) -> JSONResponse:
        """Any endpoint whose store call fails answers like ingest does: 503, retry later, never a 500."""
        runtime = getattr(request.app.state, "runtime", None)
        if runtime is not None:
            runtime.metrics.db_errors.labels(operation=request.url.path).inc()
        log.error("store unavailable for %s %s: %s", request.method, request.url.path, describe_error(exc))
        return JSONResponse(
            {"error": "store unavailable, retry later"},
            status_code=503,
            headers={"Retry-After": ingest_routes.RETRY_AFTER_SECONDS},
        )

    for error in STORE_ERRORS:
        app.add_exception_handler(error, store_unavailable)
    app.include_router(ingest_routes.router)
    app.include_router(api.router)
    app.include_router(incidents.router)
    app.include_router(ops.router)
    return app

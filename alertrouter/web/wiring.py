"""The HTTP surface of an app: every router, and how any endpoint answers a store outage or a bad parameter."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from alertrouter.store import STORE_ERRORS, describe_error
from alertrouter.web import (
    alerts,
    amv2,
    console,
    gpus,
    health,
    heartbeats,
    incidents,
    jobs,
    maintenance,
    nodes,
    notifications,
    receive,
    writes,
)
from alertrouter.web.apidocs import install_api_docs
from alertrouter.web.params import NO_NUL, BadParameter, is_console, problem_of

__all__ = ["install"]

log = logging.getLogger(__name__)


def install(app: FastAPI) -> None:
    """The error answers first, then the routers (the console adds its own error page as it is installed)."""
    for error in STORE_ERRORS:
        app.add_exception_handler(error, store_unavailable)
    app.add_exception_handler(RequestValidationError, bad_parameter)
    app.add_exception_handler(BadParameter, bad_parameter)
    app.include_router(receive.router)  # no parameters; a payload's U+0000 is ingest's (`ingest.payloads`)
    routers = (alerts, incidents, nodes, gpus, jobs, heartbeats, notifications)
    for module in routers:
        app.include_router(module.router, dependencies=NO_NUL)
    app.include_router(health.router)
    app.include_router(writes.router, dependencies=NO_NUL)
    app.include_router(maintenance.router, dependencies=NO_NUL)
    amv2.install(app)  # Alertmanager's API v2 for amtool and Grafana
    console.install(app)
    install_api_docs(app)


async def store_unavailable(request: Request, exc: Exception) -> JSONResponse:
    """Any endpoint whose store call fails answers like ingest does: 503, retry later, never a 500."""
    runtime = getattr(request.app.state, "runtime", None)
    if runtime is not None:
        runtime.metrics.db_errors.labels(operation=request.url.path).inc()
    log.error("store unavailable for %s %s: %s", request.method, request.url.path, describe_error(exc))
    return JSONResponse(
        {"error": "store unavailable, retry later"},
        status_code=503,
        headers={"Retry-After": receive.RETRY_AFTER_SECONDS},
    )


async def bad_parameter(request: Request, exc: Exception) -> Response:
    """A parameter that cannot be read is a 400 naming it, as the API's own checks answer (FastAPI's
    default is a 422); a console page answers with a page."""
    bad = problem_of(exc) if isinstance(exc, RequestValidationError) else exc
    assert isinstance(bad, BadParameter)
    if is_console(request):
        return await console.bad_request(request, bad)
    return JSONResponse({"detail": str(bad)}, status_code=400)

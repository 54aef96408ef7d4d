"""The parts of Alertmanager's API v2 that amtool and Grafana's Alertmanager data source use, on
alertrouter's own alerts, decisions and silences (`POST /api/v2/alerts`, what Prometheus sends, is
ingest's: `alertrouter.web.receive`). Reads need a reader, writes a writer, as the rest of the API."""

from __future__ import annotations

from fastapi import FastAPI

from alertrouter.model import utcnow
from alertrouter.web.amv2 import alerts, silences, status
from alertrouter.web.amv2.errors import AmError, am_error_response
from alertrouter.web.params import NO_NUL

__all__ = ["install"]


def install(app: FastAPI) -> None:
    """Adds the routes and the handler of Alertmanager's error shapes; the status's `uptime` counts from here."""
    app.state.amv2_started = utcnow()
    app.add_exception_handler(AmError, am_error_response)
    for router in (alerts.router, silences.router, status.router):
        app.include_router(router, dependencies=NO_NUL)

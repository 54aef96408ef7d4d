"""`GET /api/v2/status` and `GET /api/v2/receivers`: what amtool asks before every command, and what
Grafana's Alertmanager data source tests and shows.

`config.original` is an Alertmanager configuration written from alertrouter's route tree: its routes
(receiver, matchers, `continue`, time intervals) and receivers by name only, so that a client that
parses it (Grafana shows the routing tree) reads alertrouter's routing. It never holds a channel's
settings: no address, token or key of any receiver reaches it.
"""

from __future__ import annotations

import platform
from datetime import datetime
from typing import Any

import yaml
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from alertrouter import __version__
from alertrouter.pipeline.route import Route
from alertrouter.runtime import Runtime, RuntimeDep
from alertrouter.web.access import ReadPrincipal
from alertrouter.web.amv2.models import (
    AlertmanagerConfig,
    AlertmanagerStatus,
    ClusterStatus,
    Receiver,
    VersionInfo,
    wire,
)

__all__ = ["config_yaml", "receiver_names", "router"]

router = APIRouter(prefix="/api/v2", tags=["alertmanager-v2"])


def _route(route: Route, *, root: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if route.receiver is not None:
        out["receiver"] = route.receiver
    if route.matchers and not root:
        out["matchers"] = [str(m) for m in route.matchers]
    if route.continue_:
        out["continue"] = True
    if route.mute_time_intervals:
        out["mute_time_intervals"] = list(route.mute_time_intervals)
    if route.active_time_intervals:
        out["active_time_intervals"] = list(route.active_time_intervals)
    if route.routes:
        out["routes"] = [_route(child, root=False) for child in route.routes]
    return out


def receiver_names(runtime: Runtime) -> list[str]:
    """The receivers configured, in the rules' order, then any the route tree names besides (sorted)."""
    names = [r.name for r in runtime.ruleset.receivers]
    routed: set[str] = set()
    stack = [runtime.engine.pipeline.route]
    while stack:
        route = stack.pop()
        if route.receiver is not None:
            routed.add(route.receiver)
        stack.extend(route.routes)
    return names + sorted(routed - set(names))


def config_yaml(runtime: Runtime) -> str:
    config = {
        "route": _route(runtime.engine.pipeline.route, root=True),
        "receivers": [{"name": name} for name in receiver_names(runtime)],
    }
    return yaml.safe_dump(config, sort_keys=False, allow_unicode=True)


@router.get("/status", summary="Alertmanager API v2: status (amtool asks it first; Grafana's data source test)")
async def status(request: Request, runtime: RuntimeDep, principal: ReadPrincipal) -> JSONResponse:
    started: datetime = request.app.state.amv2_started
    answer = AlertmanagerStatus(
        cluster=ClusterStatus(status="disabled", peers=[]),
        version_info=VersionInfo(
            version=__version__,
            revision=f"alertrouter-{__version__}",
            branch="alertrouter",
            build_user="alertrouter",
            build_date="",
            go_version=f"python{platform.python_version()}",  # the schema's field; there is no Go here
        ),
        config=AlertmanagerConfig(original=config_yaml(runtime)),
        uptime=started,
    )
    return JSONResponse(wire(answer))


@router.get("/receivers", summary="Alertmanager API v2: receivers")
async def receivers(runtime: RuntimeDep, principal: ReadPrincipal) -> JSONResponse:
    return JSONResponse(wire([Receiver(name=name) for name in receiver_names(runtime)]))

"""`POST /api/v1/heartbeats/{name}`: a source says it is alive (with the webhook's credentials);
`GET /api/v1/heartbeats`: every configured heartbeat, when it was last heard from and whether it is lost."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from alertrouter.liveness.monitor import HeartbeatState, HeartbeatStatus
from alertrouter.runtime import RuntimeDep
from alertrouter.web.alerts import AuthorizedRuntime
from alertrouter.web.receive import unauthorized

__all__ = ["HeartbeatList", "HeartbeatRead", "heartbeat_read", "router"]

router = APIRouter(prefix="/api/v1", tags=["heartbeats"])


class HeartbeatRead(BaseModel):
    """One configured heartbeat. `state`: `ok` (heard within its timeout), `missing` (heard, then silent:
    its `AlertrouterHeartbeatMissing` alert is raised) or `waiting` (never heard from: nothing is raised,
    unless `warn_if_never_heard` raised its one warning, `missing_since` then being when it was first
    watched); `last_seen` is null until it is first heard from, `seen_via` says how (`alert`: a matching
    alert, `http`: this API); `missing_since`: when it fell silent, while missing; `deadline`: when it is
    lost unless heard from before (waiting: when its warning is raised, or null)."""

    name: str
    state: HeartbeatState
    matchers: list[str]
    timeout_seconds: float
    labels: dict[str, str]
    description: str
    watched_since: datetime
    last_seen: datetime | None
    seen_via: str | None
    missing_since: datetime | None
    deadline: datetime | None


class HeartbeatList(BaseModel):
    heartbeats: list[HeartbeatRead]


def heartbeat_read(status: HeartbeatStatus) -> HeartbeatRead:
    config, record = status.config, status.record
    return HeartbeatRead(
        name=config.name,
        state=status.state,
        matchers=[str(m) for m in config.matchers],
        timeout_seconds=config.timeout.total_seconds(),
        labels=dict(config.labels),
        description=config.description,
        watched_since=record.watched_since,
        last_seen=record.last_seen,
        seen_via=record.seen_via,
        missing_since=record.missing_since,
        deadline=status.deadline,
    )


@router.get("/heartbeats", response_model=HeartbeatList)
async def list_heartbeats(runtime: AuthorizedRuntime) -> HeartbeatList:
    statuses = await runtime.heartbeats.statuses() if runtime.heartbeats is not None else []
    return HeartbeatList(heartbeats=[heartbeat_read(s) for s in statuses])


@router.post("/heartbeats/{name}", summary="A source is alive: refresh its heartbeat (webhook credentials)")
async def beat(name: str, request: Request, runtime: RuntimeDep) -> JSONResponse:
    """Authenticated as the Alertmanager webhook is (a cron job or a pushing exporter holds the same
    credential); the body is ignored. Answered once the sighting is committed."""
    if not runtime.auth.check(request.headers.get("authorization")):
        return unauthorized(runtime)
    monitor = runtime.heartbeats
    if monitor is None or name not in monitor.configs:
        known = ", ".join(sorted(monitor.configs)) if monitor is not None else ""
        return JSONResponse(
            {"error": f"no heartbeat named {name!r} in the rules' heartbeats section (configured: {known or 'none'})"},
            status_code=404,
        )
    await monitor.seen([name], via="http")
    return JSONResponse({"status": "ok", "heartbeat": name})

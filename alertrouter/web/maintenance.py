"""`/api/v1/maintenance`: nodes in maintenance, started and ended by people (the CLI writes the same
rows). Reads need a read credential; writes a console session (with `X-CSRF-Token`) or an API token
with write access, as the silences API. Bad input answers 400 naming the field."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from alertrouter.durations import parse_duration
from alertrouter.maintenance import service
from alertrouter.maintenance.requests import RequestError, start_request
from alertrouter.model import utcnow
from alertrouter.runtime import RuntimeDep
from alertrouter.store.tables import MaintenanceRow
from alertrouter.web.access import ReadPrincipal, WritePrincipal
from alertrouter.web.writes import field_error, json_body

__all__ = ["MaintenanceCreate", "MaintenanceRead", "router", "window_state"]

router = APIRouter(prefix="/api/v1", tags=["maintenance"])


class MaintenanceCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    nodes: list[str] = Field(description='the nodes, as alerts name them or by an address: ["gpu-node-07"]')
    duration: str = Field(description="how long, e.g. 4h, 2d (at most 90 days)")
    reason: str = Field("", description="why, shown beside the node's alerts (at most 500 characters)")


class MaintenanceRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    node: str
    source: str
    reason: str
    starts_at: datetime
    ends_at: datetime
    created_by: str
    ended_by: str | None
    state: str = Field("", description="active, pending or ended")


def window_state(row: MaintenanceRow, now: datetime) -> str:
    if row.ends_at <= now:
        return "ended"
    return "pending" if row.starts_at > now else "active"


def _read(row: MaintenanceRow, now: datetime) -> MaintenanceRead:
    return MaintenanceRead.model_validate(row).model_copy(update={"state": window_state(row, now)})


@router.get("/maintenance", response_model=list[MaintenanceRead])
async def list_maintenance(
    runtime: RuntimeDep,
    principal: ReadPrincipal,
    recent: Annotated[str, Query(description="also the windows that ended this long ago, e.g. 7d")] = "7d",
) -> list[MaintenanceRead]:
    try:
        since = parse_duration(recent)
    except ValueError as exc:
        raise HTTPException(400, f"recent: {exc}") from None
    now = utcnow()
    rows = await service.listed(runtime.db, now=now, recent=since)
    return [_read(r, now) for r in rows]


@router.post("/maintenance", response_model=list[MaintenanceRead], status_code=201)
async def start_maintenance(request: Request, runtime: RuntimeDep, principal: WritePrincipal) -> list[MaintenanceRead]:
    """One window per node, from now; a node already in maintenance keeps its window and gets another."""
    try:
        body = MaintenanceCreate.model_validate(await json_body(request))
    except ValidationError as exc:
        raise field_error(exc) from None
    now = utcnow()
    try:
        wanted = start_request(body.nodes, body.duration, body.reason, principal.name, now=now)
    except RequestError as exc:
        raise HTTPException(400, str(exc)) from None
    rows = await service.start(runtime.db, wanted)
    runtime.engine.nudge(force=True)
    return [_read(r, now) for r in rows]


@router.delete("/maintenance/{node}")
async def end_maintenance(node: str, runtime: RuntimeDep, principal: WritePrincipal) -> dict[str, Any]:
    """End a node's maintenance now; 404 when it has none in force or to come. Its alerts that still
    fire are told at once."""
    try:
        ended = await service.end(runtime.db, [node], by=principal.name, now=utcnow())
    except RequestError as exc:
        raise HTTPException(400, str(exc)) from None
    if not ended:
        raise HTTPException(404, f"node {node!r} is not in maintenance")
    runtime.engine.nudge(force=True)
    return {"node": node, "state": "ended"}

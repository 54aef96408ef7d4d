"""JSON API writes: acknowledge an incident, silences, dead letters. Each needs a console session (with
`X-CSRF-Token`) or an API token; 401 without a credential, 403 when read-only or not allowed to write."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from alertrouter.durations import parse_duration
from alertrouter.model import AlertStatus, DeliveryStatus, utcnow
from alertrouter.runtime import RuntimeDep
from alertrouter.store import actions
from alertrouter.store import console as store
from alertrouter.web import operations
from alertrouter.web.access import ReadPrincipal, WritePrincipal
from alertrouter.web.console.views import silence_state
from alertrouter.web.ids import DeliveryId, IncidentId
from alertrouter.web.schemas import IncidentRead

__all__ = ["SilenceCreate", "SilenceRead", "field_error", "json_body", "router"]

router = APIRouter(prefix="/api/v1", tags=["writes"])


class SilenceCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    matchers: list[str] = Field(description='Alertmanager matchers, e.g. ["node=\\"gpu-node-07\\""]')
    duration: str | None = Field(None, description="e.g. 2h; or give ends_at")
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    comment: str = Field("", max_length=1000)


class SilenceRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    matchers: list[str]
    starts_at: datetime
    ends_at: datetime
    created_by: str
    comment: str
    created_at: datetime
    updated_at: datetime
    state: str = ""
    muting: int = Field(0, description="firing alerts it mutes, as of the engine's last pass")


def field_error(exc: ValidationError) -> HTTPException:
    """A 400 naming the first invalid field of a write's body (`nodes: ...`), as every write API answers."""
    err = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(p) for p in err["loc"]) or "body"
    return HTTPException(400, f"{where}: {err['msg']}")


async def json_body(request: Request) -> Any:
    """A write's body as JSON, or a 400 saying it is not."""
    try:
        return json.loads(await request.body())
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise HTTPException(400, "body: invalid JSON") from None


@router.post("/incidents/{incident_id}/ack", response_model=IncidentRead)
async def acknowledge(runtime: RuntimeDep, principal: WritePrincipal, incident_id: IncidentId) -> IncidentRead:
    row = await operations.acknowledge(runtime, incident_id=incident_id, by=principal.name)
    if row is None:
        raise HTTPException(404, f"no incident {incident_id}")
    if row.status != AlertStatus.FIRING:
        raise HTTPException(409, f"incident {incident_id} is resolved")
    return IncidentRead.model_validate(row)


@router.get("/silences", response_model=list[SilenceRead])
async def list_silences(
    runtime: RuntimeDep,
    principal: ReadPrincipal,
    expired: Annotated[bool, Query(description="include expired silences")] = False,
) -> list[SilenceRead]:
    now = utcnow()
    async with runtime.db.read() as session:
        rows = await actions.list_silences(session, now=now, include_expired=expired)
        effect = await store.silenced_counts(session)
    return [
        SilenceRead.model_validate(r).model_copy(update={"state": silence_state(r, now), "muting": effect.get(r.id, 0)})
        for r in rows
    ]


@router.post("/silences", response_model=SilenceRead, status_code=201)
async def create_silence(request: Request, runtime: RuntimeDep, principal: WritePrincipal) -> SilenceRead:
    try:
        body = SilenceCreate.model_validate(await json_body(request))
    except ValidationError as exc:
        raise field_error(exc) from None
    try:
        duration = parse_duration(body.duration) if body.duration else None
    except OverflowError:
        raise HTTPException(400, f"duration: at most {operations.MAX_SILENCE.days} days") from None
    except ValueError as exc:
        raise HTTPException(400, f"duration: {exc}") from None
    if duration is None and body.ends_at is None:
        raise HTTPException(400, "duration: give a duration (e.g. 2h) or ends_at")
    try:
        row = await operations.create_silence(
            runtime,
            matchers=body.matchers,
            duration=duration,
            starts_at=body.starts_at,
            ends_at=body.ends_at,
            comment=body.comment,
            by=principal.name,
        )
    except operations.InputError as exc:
        raise HTTPException(400, str(exc)) from None
    return SilenceRead.model_validate(row).model_copy(update={"state": silence_state(row, utcnow())})


@router.delete("/silences/{silence_id}")
async def expire_silence(silence_id: str, runtime: RuntimeDep, principal: WritePrincipal) -> dict[str, str]:
    if not await operations.expire_silence(runtime, silence_id=silence_id, by=principal.name):
        raise HTTPException(404, f"no active or pending silence {silence_id!r}")
    return {"id": silence_id, "state": "expired"}


@router.post("/deliveries/{delivery_id}/{action}")
async def dead_letter(
    runtime: RuntimeDep, principal: WritePrincipal, delivery_id: DeliveryId, action: str
) -> dict[str, Any]:
    """`retry` a dead letter (pending again, due now) or `discard` it; 409 if it is not a dead letter."""
    if action == operations.DeadLetterAction.RETRY:
        done = await operations.retry_dead_letter(runtime, delivery_id=delivery_id, by=principal.name)
    elif action == operations.DeadLetterAction.DISCARD:
        done = await operations.discard_dead_letter(runtime, delivery_id=delivery_id, by=principal.name)
    else:
        raise HTTPException(404, "action: retry or discard")
    if not done:
        async with runtime.db.read() as session:
            exists = await store.delivery_status(session, delivery_id=delivery_id)
        if exists is None:
            raise HTTPException(404, f"no delivery {delivery_id}")
        raise HTTPException(409, f"delivery {delivery_id} is {exists}, not a dead letter")
    return {
        "id": delivery_id,
        "status": DeliveryStatus.PENDING if action == operations.DeadLetterAction.RETRY else DeliveryStatus.DISCARDED,
    }

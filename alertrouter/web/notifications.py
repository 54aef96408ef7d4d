"""`GET /api/v1/notifications[/{id}]` (every delivery and its attempts), `GET /api/v1/channels` and
`GET /api/v1/outbox/quarantined` (outbox rows whose expansion into deliveries raised)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel, ConfigDict

from alertrouter.model import DeliveryStatus, OutboxStatus
from alertrouter.store import delivery as store
from alertrouter.web.alerts import AuthorizedRuntime
from alertrouter.web.ids import Limit, NotificationId, Offset, OptionalIncidentQuery

__all__ = ["router"]

router = APIRouter(tags=["notifications"])

_STATUSES = f"^({'|'.join(DeliveryStatus)})$"


class _Read(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class DeliveryRead(_Read):
    id: int
    channel: str
    receiver: str
    incident_key: str | None
    incident_id: int | None
    kind: str
    severity: str
    status: str
    attempts: int
    created_at: datetime
    next_attempt_at: datetime
    sent_at: datetime | None
    last_error: str | None
    parent_id: int | None
    unexpected_failures: int  # failures that were not the vendor's; a dead letter at delivery.policy.MAX_UNEXPECTED


class AttemptRead(_Read):
    started_at: datetime
    finished_at: datetime | None
    worker: str
    outcome: str
    error: str | None


class DeliveryList(BaseModel):
    notifications: list[DeliveryRead]
    total: int
    limit: int
    offset: int


class DeliveryDetail(BaseModel):
    notification: DeliveryRead
    attempts: list[AttemptRead]
    message: dict[str, Any]


class ChannelRead(BaseModel):
    name: str
    type: str
    configured: bool
    healthy: bool
    blocked_until: datetime | None
    retry_at: datetime | None
    consecutive_failures: int
    last_error: str | None
    last_ok_at: datetime | None
    pending: int
    dead_letters: int


class OutboxRead(_Read):
    id: int
    incident_key: str
    receiver: str
    reason: str
    status: str
    created_at: datetime
    last_error: str | None


class OutboxList(BaseModel):
    outbox: list[OutboxRead]
    total: int


@router.get("/api/v1/notifications", response_model=DeliveryList)
async def list_notifications(
    runtime: AuthorizedRuntime,
    status: Annotated[str | None, Query(pattern=_STATUSES)] = None,
    channel: str | None = None,
    receiver: str | None = None,
    incident: OptionalIncidentQuery = None,
    limit: Limit = 100,
    offset: Offset = 0,
) -> DeliveryList:
    """Deliveries newest first: one per incident message and channel, and the coalesced ones that
    stood for several (`parent_id` of the members). `status=dead` lists the dead letters."""
    wanted = None if status is None else DeliveryStatus(status)  # the pattern admits only its values
    async with runtime.db.read() as session:
        rows, total = await store.list_deliveries(
            session, status=wanted, channel=channel, receiver=receiver, incident_id=incident, limit=limit, offset=offset
        )
    return DeliveryList(
        notifications=[DeliveryRead.model_validate(r) for r in rows], total=total, limit=limit, offset=offset
    )


@router.get("/api/v1/notifications/{delivery_id}", response_model=DeliveryDetail)
async def get_notification(delivery_id: NotificationId, runtime: AuthorizedRuntime) -> DeliveryDetail:
    async with runtime.db.read() as session:
        rows = await store.deliveries_by_id(session, [delivery_id])
        if not rows:
            raise HTTPException(404, f"no notification {delivery_id}")
        attempts = await store.delivery_attempts(session, delivery_id=delivery_id)
    return DeliveryDetail(
        notification=DeliveryRead.model_validate(rows[0]),
        attempts=[AttemptRead.model_validate(a) for a in attempts],
        message=rows[0].message,
    )


@router.get("/api/v1/outbox/quarantined", response_model=OutboxList)
async def quarantined_outbox(runtime: AuthorizedRuntime, limit: Limit = 100) -> OutboxList:
    """Outbox rows the delivery loop could not turn into deliveries (their expansion raised), newest
    first, each with its error; they are never tried again (`alertrouter_quarantined{kind="delivery"}`)."""
    async with runtime.db.read() as session:
        rows, total = await store.list_outbox(session, status=OutboxStatus.QUARANTINED, limit=limit)
    return OutboxList(outbox=[OutboxRead.model_validate(r) for r in rows], total=total)


@router.get("/api/v1/channels", response_model=list[ChannelRead])
async def list_channels(runtime: AuthorizedRuntime) -> list[ChannelRead]:
    """Every configured channel: health, rate-limit block, backlog and dead letters. Never a secret.

    `healthy` is false after a permanent failure and while one of its messages fails for an unexpected
    reason (see `alertrouter.delivery.policy`), until a later send succeeds with none failing."""
    async with runtime.db.read() as session:
        states = await store.channel_states(session)
        pending = await store.count_by_channel(session, status=DeliveryStatus.PENDING)
        dead = await store.count_by_channel(session, status=DeliveryStatus.DEAD)
    out = []
    unconfigured = set(runtime.delivery.unconfigured) if runtime.delivery else set()
    for cfg in runtime.ruleset.channels:
        state = states.get(cfg.name)
        out.append(
            ChannelRead(
                name=cfg.name,
                type=cfg.type,
                configured=cfg.name not in unconfigured,
                healthy=state.healthy if state else True,
                blocked_until=state.blocked_until if state else None,
                retry_at=state.retry_at if state else None,
                consecutive_failures=state.consecutive_failures if state else 0,
                last_error=state.last_error if state else None,
                last_ok_at=state.last_ok_at if state else None,
                pending=pending.get(cfg.name, 0),
                dead_letters=dead.get(cfg.name, 0),
            )
        )
    return out

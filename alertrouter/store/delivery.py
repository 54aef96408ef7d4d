"""Reads and writes of the delivery loop: outbox expansion, per-channel leases, deliveries, attempts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Row, Select, and_, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.model import AttemptOutcome, DeliveryStatus, OutboxStatus
from alertrouter.store import bulk
from alertrouter.store.handles import (
    alerts_t,
    attempts_t,
    channels_t,
    deliveries_t,
    incidents_t,
    insert_for,
    outbox_t,
    sends_t,
)
from alertrouter.store.tables import ChannelStateRow, DeliveryRow, OutboxRow

__all__ = [
    "alert_details",
    "attempts_since",
    "channel_failed",
    "channel_states",
    "claim_outbox",
    "count_by_channel",
    "count_outbox",
    "deliveries_by_id",
    "delivery_attempts",
    "due_channels",
    "due_deliveries",
    "failing_deliveries",
    "finish_attempt",
    "incident_ids",
    "insert_deliveries",
    "list_deliveries",
    "list_outbox",
    "pending_outbox",
    "quarantine_outbox",
    "recipient_counts",
    "record_recipient_sends",
    "recover_stale",
    "release_channel",
    "start_attempt",
    "take_channel",
    "update_channel",
    "update_deliveries",
]


_Row = TypeVar("_Row")


def _fresh(stmt: Select[_Row]) -> Select[_Row]:
    """Rows read as mapped objects, current even when the session already holds them: the writes here
    are UPDATE statements, which do not refresh objects a session loaded before them."""
    return stmt.execution_options(populate_existing=True)


async def pending_outbox(session: AsyncSession, *, limit: int) -> Sequence[OutboxRow]:
    stmt = select(OutboxRow).where(OutboxRow.status == OutboxStatus.PENDING).order_by(OutboxRow.id).limit(limit)
    return (await session.scalars(_fresh(stmt))).all()


async def claim_outbox(session: AsyncSession, ids: Sequence[int], *, status: OutboxStatus) -> set[int]:
    """Mark outbox rows as worked; returns the ids this caller won (another replica may have taken some)."""
    if not ids:
        return set()
    stmt = (
        update(outbox_t)
        .where(outbox_t.c.id.in_(ids), outbox_t.c.status == OutboxStatus.PENDING)
        .values(status=status)
        .returning(outbox_t.c.id)
    )
    return {r[0] for r in (await session.execute(stmt)).all()}


async def quarantine_outbox(session: AsyncSession, errors: Mapping[int, str]) -> None:
    """Outbox rows whose expansion raised: marked with their error, never expanded again."""
    for outbox_id, error in errors.items():
        await session.execute(
            update(outbox_t).where(outbox_t.c.id == outbox_id).values(status=OutboxStatus.QUARANTINED, last_error=error)
        )


async def list_outbox(
    session: AsyncSession, *, status: OutboxStatus, limit: int = 100
) -> tuple[Sequence[Row[Any]], int]:
    """Outbox rows of one status newest first (the quarantined ones, for the API), and how many in all."""
    where = outbox_t.c.status == status
    stmt = select(outbox_t).where(where).order_by(outbox_t.c.id.desc()).limit(limit)
    total = (await session.execute(select(func.count()).select_from(outbox_t).where(where))).scalar_one()
    return (await session.execute(stmt)).all(), int(total)


async def count_outbox(session: AsyncSession, *, status: OutboxStatus) -> int:
    stmt = select(func.count()).select_from(outbox_t).where(outbox_t.c.status == status)
    return int((await session.execute(stmt)).scalar_one())


async def alert_details(
    session: AsyncSession, fingerprints: Iterable[str]
) -> dict[str, tuple[dict[str, str], datetime]]:
    """fingerprint -> (annotations, starts_at), for messages that say what the alert says."""
    wanted = sorted(set(fingerprints))
    out: dict[str, tuple[dict[str, str], datetime]] = {}
    for chunk in bulk.slices(wanted):
        stmt = select(alerts_t.c.fingerprint, alerts_t.c.annotations, alerts_t.c.starts_at).where(
            alerts_t.c.fingerprint.in_(chunk)
        )
        for fp, notes, starts_at in (await session.execute(stmt)).all():
            out[fp] = (dict(notes or {}), starts_at)
    return out


async def incident_ids(session: AsyncSession, keys: Iterable[str]) -> dict[str, int]:
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    stmt = select(incidents_t.c.key, incidents_t.c.id).where(incidents_t.c.key.in_(wanted))
    return {k: i for k, i in (await session.execute(stmt)).all()}


async def insert_deliveries(session: AsyncSession, rows: Sequence[Mapping[str, Any]]) -> list[int]:
    ids: list[int] = []
    for row in rows:  # one by one for the ids (coalesced rows need theirs); batches here are small
        result = await session.execute(deliveries_t.insert().values(**row).returning(deliveries_t.c.id))
        ids.append(result.scalar_one())
    return ids


async def recover_stale(session: AsyncSession, *, now: datetime) -> int:
    """Deliveries claimed by a worker that died mid-send go back to pending; their attempt is `lost`
    (it may or may not have reached the vendor: the one message that can arrive twice)."""
    stale = select(deliveries_t.c.id).where(
        deliveries_t.c.status == DeliveryStatus.SENDING, deliveries_t.c.claimed_until < now
    )
    ids = [r[0] for r in (await session.execute(stale)).all()]
    if not ids:
        return 0
    await session.execute(
        update(attempts_t)
        .where(attempts_t.c.delivery_id.in_(ids), attempts_t.c.outcome == AttemptOutcome.IN_FLIGHT)
        .values(outcome=AttemptOutcome.LOST, finished_at=now, error="worker stopped during the send")
    )
    result = await session.execute(
        update(deliveries_t)
        .where(deliveries_t.c.id.in_(ids), deliveries_t.c.status == DeliveryStatus.SENDING)
        .values(status=DeliveryStatus.PENDING, claimed_until=None, next_attempt_at=now)
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def due_channels(session: AsyncSession, *, now: datetime) -> list[str]:
    stmt = (
        select(deliveries_t.c.channel)
        .where(deliveries_t.c.status == DeliveryStatus.PENDING, deliveries_t.c.next_attempt_at <= now)
        .distinct()
    )
    return sorted(r[0] for r in (await session.execute(stmt)).all())


async def take_channel(session: AsyncSession, *, name: str, holder: str, now: datetime, until: datetime) -> bool:
    """Take (or renew) the lease on one channel: only its holder sends through it, so the rate budget
    counted from the attempts is exact across replicas."""
    await session.execute(
        insert_for(session, channels_t)
        .values(name=name, coalesce_backlog=False, healthy=True, consecutive_failures=0)
        .on_conflict_do_nothing(index_elements=["name"])  # type: ignore[attr-defined]
    )
    result = await session.execute(
        update(channels_t)
        .where(
            channels_t.c.name == name,
            or_(channels_t.c.holder.is_(None), channels_t.c.holder == holder, channels_t.c.lease_until < now),
        )
        .values(holder=holder, lease_until=until)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def release_channel(session: AsyncSession, *, name: str, holder: str) -> None:
    await session.execute(
        update(channels_t)
        .where(channels_t.c.name == name, channels_t.c.holder == holder)
        .values(holder=None, lease_until=None)
    )


async def update_channel(session: AsyncSession, name: str, **values: Any) -> None:
    await session.execute(update(channels_t).where(channels_t.c.name == name).values(**values))


async def channel_failed(
    session: AsyncSession, name: str, *, error: str, now: datetime, retry_at: datetime, unhealthy: bool
) -> None:
    values: dict[str, Any] = {
        "consecutive_failures": channels_t.c.consecutive_failures + 1,
        "last_error": error,
        "last_failure_at": now,
        "retry_at": retry_at,
    }
    if unhealthy:
        values["healthy"] = False
    await session.execute(update(channels_t).where(channels_t.c.name == name).values(**values))


async def channel_states(session: AsyncSession, names: Sequence[str] | None = None) -> dict[str, ChannelStateRow]:
    stmt = select(ChannelStateRow)
    if names is not None:
        stmt = stmt.where(ChannelStateRow.name.in_(names))
    return {r.name: r for r in (await session.scalars(_fresh(stmt))).all()}


async def attempts_since(session: AsyncSession, *, channel: str, since: datetime) -> int:
    """Requests made to a channel since `since`, failed ones included: the vendor counts them too."""
    stmt = select(func.count()).where(attempts_t.c.channel == channel, attempts_t.c.started_at > since)
    return int((await session.execute(stmt)).scalar_one())


async def due_deliveries(
    session: AsyncSession, *, channel: str, now: datetime | None, limit: int, critical_rank: int | None = None
) -> Sequence[DeliveryRow]:
    """Due deliveries of a channel (all pending ones when `now` is None), worst severity first, then
    oldest; only those up to `critical_rank` when given (for failover)."""
    d = DeliveryRow
    stmt = select(d).where(d.channel == channel, d.status == DeliveryStatus.PENDING)
    if now is not None:
        stmt = stmt.where(d.next_attempt_at <= now)
    if critical_rank is not None:
        stmt = stmt.where(d.severity_rank <= critical_rank)
    stmt = stmt.order_by(d.severity_rank, d.created_at, d.id).limit(limit)
    return (await session.scalars(_fresh(stmt))).all()


async def failing_deliveries(session: AsyncSession, *, channel: str) -> int:
    """Deliveries of a channel still failing for a reason of their own: pending or in flight after an
    unexpected failure (what keeps the channel unhealthy, see `delivery.policy`)."""
    stmt = select(func.count()).where(
        deliveries_t.c.channel == channel,
        deliveries_t.c.status.in_((DeliveryStatus.PENDING, DeliveryStatus.SENDING)),
        deliveries_t.c.unexpected_failures > 0,
    )
    return int((await session.execute(stmt)).scalar_one())


async def deliveries_by_id(session: AsyncSession, ids: Sequence[int]) -> list[DeliveryRow]:
    stmt = select(DeliveryRow).where(DeliveryRow.id.in_(ids))
    rows = {r.id: r for r in (await session.scalars(_fresh(stmt))).all()}
    return [rows[i] for i in ids if i in rows]


async def update_deliveries(
    session: AsyncSession, ids: Sequence[int], *, only_status: DeliveryStatus | None, **values: Any
) -> int:
    if not ids:
        return 0
    stmt = update(deliveries_t).where(deliveries_t.c.id.in_(ids))
    if only_status is not None:
        stmt = stmt.where(deliveries_t.c.status == only_status)
    result = await session.execute(stmt.values(**values))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


async def start_attempt(
    session: AsyncSession, *, delivery_id: int, channel: str, worker: str, now: datetime, claimed_until: datetime
) -> int | None:
    """Claim a pending delivery and record the attempt before the request is made; None if another
    worker claimed it first."""
    result = await session.execute(
        update(deliveries_t)
        .where(deliveries_t.c.id == delivery_id, deliveries_t.c.status == DeliveryStatus.PENDING)
        .values(status=DeliveryStatus.SENDING, claimed_until=claimed_until, attempts=deliveries_t.c.attempts + 1)
    )
    if not result.rowcount:  # type: ignore[attr-defined]
        return None
    inserted = await session.execute(
        attempts_t.insert()
        .values(
            delivery_id=delivery_id, channel=channel, worker=worker, started_at=now, outcome=AttemptOutcome.IN_FLIGHT
        )
        .returning(attempts_t.c.id)
    )
    return int(inserted.scalar_one())


async def finish_attempt(
    session: AsyncSession, *, attempt_id: int, outcome: AttemptOutcome, error: str | None, now: datetime
) -> None:
    await session.execute(
        update(attempts_t).where(attempts_t.c.id == attempt_id).values(outcome=outcome, error=error, finished_at=now)
    )


async def recipient_counts(
    session: AsyncSession, *, channel: str, recipients: Sequence[str], since: datetime
) -> dict[str, int]:
    if not recipients:
        return {}
    stmt = (
        select(sends_t.c.recipient, func.count())
        .where(and_(sends_t.c.channel == channel, sends_t.c.recipient.in_(recipients), sends_t.c.sent_at > since))
        .group_by(sends_t.c.recipient)
    )
    return {r: int(n) for r, n in (await session.execute(stmt)).all()}


async def record_recipient_sends(
    session: AsyncSession, *, channel: str, recipients: Sequence[str], now: datetime
) -> None:
    if recipients:
        await session.execute(
            sends_t.insert(), [{"channel": channel, "recipient": r, "sent_at": now} for r in recipients]
        )


async def list_deliveries(
    session: AsyncSession,
    *,
    status: DeliveryStatus | None = None,
    channel: str | None = None,
    receiver: str | None = None,
    incident_id: int | None = None,
    limit: int = 100,
    offset: int = 0,
) -> tuple[Sequence[Row[Any]], int]:
    """Deliveries newest first, with the filters the API offers; and how many match in all."""
    conditions = []
    if status is not None:
        conditions.append(deliveries_t.c.status == status)
    if channel is not None:
        conditions.append(deliveries_t.c.channel == channel)
    if receiver is not None:
        conditions.append(deliveries_t.c.receiver == receiver)
    if incident_id is not None:
        conditions.append(deliveries_t.c.incident_id == incident_id)
    stmt = select(deliveries_t).where(*conditions).order_by(deliveries_t.c.id.desc()).limit(limit).offset(offset)
    total = (await session.execute(select(func.count()).select_from(deliveries_t).where(*conditions))).scalar_one()
    return (await session.execute(stmt)).all(), int(total)


async def delivery_attempts(session: AsyncSession, *, delivery_id: int) -> Sequence[Row[Any]]:
    stmt = select(attempts_t).where(attempts_t.c.delivery_id == delivery_id).order_by(attempts_t.c.id)
    return (await session.execute(stmt)).all()


async def count_by_channel(session: AsyncSession, *, status: DeliveryStatus) -> dict[str, int]:
    stmt = (
        select(deliveries_t.c.channel, func.count())
        .where(deliveries_t.c.status == status)
        .group_by(deliveries_t.c.channel)
    )
    return {c: int(n) for c, n in (await session.execute(stmt)).all()}

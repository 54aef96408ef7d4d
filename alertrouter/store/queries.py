"""Reads for the API, readiness and metrics."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from sqlalchemy import func, inspect, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.model import AlertStatus, IncidentKind
from alertrouter.pipeline.types import Decision
from alertrouter.store.tables import (
    AlertEpisodeRow,
    AlertEventRow,
    AlertRow,
    IncidentRow,
    NotifyStateRow,
    OutboxRow,
    RawEventRow,
)

__all__ = [
    "count_alerts_by_status",
    "count_quarantined_alerts",
    "count_raw_events",
    "get_alert",
    "get_episodes",
    "get_events",
    "get_incident",
    "get_raw_event",
    "incident_alerts",
    "incident_members",
    "incident_notifications",
    "incident_notify_states",
    "iter_alerts",
    "list_incidents",
    "list_raw_events",
    "migration_version",
]


async def iter_alerts(
    session: AsyncSession, *, status: AlertStatus | None = None, chunk: int = 500
) -> AsyncIterator[AlertRow]:
    """Alerts newest-updated first, streamed in chunks so label filters can run in Python."""
    stmt = select(AlertRow).order_by(AlertRow.updated_at.desc(), AlertRow.fingerprint)
    if status is not None:
        stmt = stmt.where(AlertRow.status == status)
    result = await session.stream_scalars(stmt.execution_options(yield_per=chunk))
    async for row in result:
        yield row


async def get_alert(session: AsyncSession, *, fingerprint: str) -> AlertRow | None:
    return await session.get(AlertRow, fingerprint)


async def get_episodes(session: AsyncSession, *, fingerprint: str, limit: int = 100) -> Sequence[AlertEpisodeRow]:
    stmt = (
        select(AlertEpisodeRow)
        .where(AlertEpisodeRow.fingerprint == fingerprint)
        .order_by(AlertEpisodeRow.starts_at.desc())
        .limit(limit)
    )
    return (await session.scalars(stmt)).all()


async def get_events(session: AsyncSession, *, fingerprint: str, limit: int = 200) -> Sequence[AlertEventRow]:
    stmt = (
        select(AlertEventRow)
        .where(AlertEventRow.fingerprint == fingerprint)
        .order_by(AlertEventRow.at.desc(), AlertEventRow.id.desc())
        .limit(limit)
    )
    return (await session.scalars(stmt)).all()


async def list_raw_events(session: AsyncSession, *, limit: int, before_id: int | None = None) -> Sequence[RawEventRow]:
    stmt = select(RawEventRow).order_by(RawEventRow.id.desc()).limit(limit)
    if before_id is not None:
        stmt = stmt.where(RawEventRow.id < before_id)
    return (await session.scalars(stmt)).all()


async def get_raw_event(session: AsyncSession, *, event_id: int) -> RawEventRow | None:
    return await session.get(RawEventRow, event_id)


async def count_alerts_by_status(session: AsyncSession) -> dict[str, int]:
    rows = await session.execute(select(AlertRow.status, func.count()).group_by(AlertRow.status))
    return {status: int(n) for status, n in rows}


async def count_quarantined_alerts(session: AsyncSession) -> int:
    """Alerts the engine leaves out after their processing failed on its own (decision `quarantined`)."""
    stmt = select(func.count()).select_from(AlertRow).where(AlertRow.decision == Decision.QUARANTINED)
    return int(await session.scalar(stmt) or 0)


async def count_raw_events(session: AsyncSession) -> int:
    return int(await session.scalar(select(func.count()).select_from(RawEventRow)) or 0)


async def migration_version(session: AsyncSession) -> Any:
    """The Alembic revision the database is at, or None before the first migration."""
    conn = await session.connection()
    if not await conn.run_sync(lambda c: inspect(c).has_table("alembic_version")):
        return None
    return await session.scalar(text("SELECT version_num FROM alembic_version"))


async def list_incidents(
    session: AsyncSession, *, status: AlertStatus | None, kind: IncidentKind | None, limit: int, offset: int
) -> tuple[Sequence[IncidentRow], int]:
    stmt = select(IncidentRow)
    if status is not None:
        stmt = stmt.where(IncidentRow.status == status)
    if kind is not None:
        stmt = stmt.where(IncidentRow.kind == kind)
    total = int(await session.scalar(select(func.count()).select_from(stmt.subquery())) or 0)
    page = await session.scalars(
        stmt.order_by(IncidentRow.updated_at.desc(), IncidentRow.id.desc()).limit(limit).offset(offset)
    )
    return page.all(), total


async def get_incident(session: AsyncSession, *, incident_id: int) -> IncidentRow | None:
    return await session.get(IncidentRow, incident_id)


async def incident_alerts(session: AsyncSession, *, key: str, limit: int = 500) -> Sequence[AlertRow]:
    stmt = select(AlertRow).where(AlertRow.incident_key == key).order_by(AlertRow.fingerprint).limit(limit)
    return (await session.scalars(stmt)).all()


async def incident_members(session: AsyncSession, *, key: str, limit: int = 1000) -> Sequence[IncidentRow]:
    stmt = select(IncidentRow).where(IncidentRow.parent_key == key).order_by(IncidentRow.key).limit(limit)
    return (await session.scalars(stmt)).all()


async def incident_notify_states(session: AsyncSession, *, key: str) -> Sequence[NotifyStateRow]:
    stmt = select(NotifyStateRow).where(NotifyStateRow.incident_key == key).order_by(NotifyStateRow.receiver)
    return (await session.scalars(stmt)).all()


async def incident_notifications(session: AsyncSession, *, key: str, limit: int = 200) -> Sequence[OutboxRow]:
    stmt = select(OutboxRow).where(OutboxRow.incident_key == key).order_by(OutboxRow.id.desc()).limit(limit)
    return (await session.scalars(stmt)).all()

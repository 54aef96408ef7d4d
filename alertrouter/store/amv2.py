"""The reads of Alertmanager's API v2 (`alertrouter.web.amv2`): firing alerts, and silences as
Alertmanager lists them (in force, pending, and expired within a retention window)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.model import AlertStatus
from alertrouter.store.tables import AlertRow, SilenceRow

__all__ = ["firing_alerts", "silences_since"]


async def firing_alerts(session: AsyncSession, *, chunk: int = 500) -> AsyncIterator[AlertRow]:
    """Firing alerts by fingerprint (Alertmanager's order), streamed: label filters run in Python.
    Alertmanager lists only alerts that have not ended; a resolved row is never one."""
    stmt = (
        select(AlertRow)
        .where(AlertRow.status == AlertStatus.FIRING)
        .order_by(AlertRow.fingerprint)
        .execution_options(yield_per=chunk)
    )
    result = await session.stream_scalars(stmt)
    async for row in result:
        yield row


async def silences_since(session: AsyncSession, *, ended_after: datetime, limit: int = 5000) -> Sequence[SilenceRow]:
    """Silences that end after `ended_after`: those in force or pending, and those that expired since
    (Alertmanager keeps an expired silence for its retention and lists it). Latest end first, at most
    `limit`, so that a store full of old silences cannot make one answer unbounded."""
    stmt = select(SilenceRow).where(SilenceRow.ends_at > ended_after).order_by(SilenceRow.ends_at.desc(), SilenceRow.id)
    return (await session.scalars(stmt.limit(limit))).all()

"""Maintenance windows in the store: start for some nodes, end, list. Functions never commit."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.pipeline.maintenance import MANUAL, Window
from alertrouter.store.handles import maintenance_t
from alertrouter.store.tables import MaintenanceRow

__all__ = ["end_maintenance", "list_maintenance", "load_windows", "start_maintenance"]


async def start_maintenance(
    session: AsyncSession,
    *,
    nodes: Sequence[str],
    starts_at: datetime,
    ends_at: datetime,
    reason: str,
    by: str,
    now: datetime,
    source: str = MANUAL,
) -> list[MaintenanceRow]:
    """One window per node (already checked by the caller: `maintenance.requests`). A node already in
    maintenance gets a second window: the first to start is the one its alerts name."""
    rows = [
        MaintenanceRow(
            id=str(uuid.uuid4()),
            node=node,
            source=source,
            reason=reason,
            starts_at=starts_at,
            ends_at=ends_at,
            created_by=by,
            ended_by=None,
            created_at=now,
            updated_at=now,
        )
        for node in nodes
    ]
    session.add_all(rows)
    await session.flush()
    return rows


async def end_maintenance(session: AsyncSession, *, nodes: Sequence[str], by: str, now: datetime) -> list[str]:
    """End now every window of `nodes` that is in force or still to come; the nodes that had one."""
    ended = (
        await session.execute(
            select(maintenance_t.c.node).where(maintenance_t.c.node.in_(list(nodes)), maintenance_t.c.ends_at > now)
        )
    ).scalars()
    found = sorted(set(ended))
    if found:
        await session.execute(
            update(maintenance_t)
            .where(maintenance_t.c.node.in_(found), maintenance_t.c.ends_at > now)
            .values(ends_at=now, ended_by=by, updated_at=now)
        )
    return found


async def list_maintenance(
    session: AsyncSession, *, now: datetime, ended_after: datetime | None = None, limit: int = 500
) -> Sequence[MaintenanceRow]:
    """Windows in force or to come, and those that ended after `ended_after` (None: none of those);
    the latest to end first, at most `limit`."""
    clause = maintenance_t.c.ends_at > now
    if ended_after is not None:
        clause = or_(clause, maintenance_t.c.ends_at > ended_after)
    stmt = select(MaintenanceRow).where(clause).order_by(MaintenanceRow.ends_at.desc(), MaintenanceRow.node)
    return (await session.scalars(stmt.limit(limit))).all()


async def load_windows(session: AsyncSession, *, now: datetime) -> list[Window]:
    """The engine's view: the windows in force now or later, in a stable order."""
    rows = (await session.execute(select(maintenance_t).where(maintenance_t.c.ends_at > now))).all()
    return sorted(
        (Window(r.id, r.node, r.starts_at, r.ends_at, r.reason, r.created_by, r.source) for r in rows),
        key=lambda w: (w.starts_at, w.id),
    )

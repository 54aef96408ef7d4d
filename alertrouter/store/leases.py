"""Leases: which replica does a singleton job (the engine's passes, the scheduler, a channel's sends)
until when. One row per lease; taking it is a conditional write, so two replicas never both hold it."""

from __future__ import annotations

import socket
import uuid
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.store.bulk import sqlite_rows
from alertrouter.store.handles import insert_for, leases_t
from alertrouter.store.sqlvalues import sqlite_datetime

__all__ = ["hold_lease", "lease_held_by_other", "new_holder", "release_lease"]


def new_holder() -> str:
    """A name for this process as a lease holder: the host (to find it) and a random part (two
    processes on one host are two holders)."""
    return f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"


async def lease_held_by_other(session: AsyncSession, *, name: str, holder: str, now: datetime) -> bool:
    """A plain read: whether someone else holds an unexpired lease (so this replica need not work)."""
    row = (
        await session.execute(select(leases_t.c.holder, leases_t.c.expires_at).where(leases_t.c.name == name))
    ).first()
    return row is not None and row.holder != holder and row.expires_at > now


async def hold_lease(session: AsyncSession, *, name: str, holder: str, now: datetime, until: datetime) -> bool:
    """Take or renew a lease; True if `holder` has it until `until`. The row stays locked (on PostgreSQL)
    until the caller's transaction ends, so the work done under it commits only while it is held.

    One statement when the lease is this holder's or has run out (every pass of a leader): an update
    on that condition, which PostgreSQL checks again on the row as it stands once any other writer's
    lock is gone. Otherwise (no row yet, or held by another) the row is made if missing and read."""
    c = leases_t.c
    if session.get_bind().dialect.name == "sqlite":
        # At driver speed (`bulk.sqlite_rows`): through SQLAlchemy's execution this update cost an engine pass
        # several trips to the connection's thread, against one here.
        params = (holder, sqlite_datetime(until), name, holder, sqlite_datetime(now))
        if await sqlite_rows(session, _RENEW, params):
            return True
    else:
        renewed = await session.execute(
            update(leases_t)
            .where(c.name == name, or_(c.holder == holder, c.expires_at <= now))
            .values(holder=holder, expires_at=until)
        )
        if int(cast(CursorResult[Any], renewed).rowcount) == 1:
            return True
    await session.execute(
        insert_for(session, leases_t)
        .values(name=name, holder=holder, expires_at=until)
        .on_conflict_do_nothing(index_elements=["name"])  # type: ignore[attr-defined]
    )
    row = (
        await session.execute(
            select(leases_t.c.holder, leases_t.c.expires_at).where(leases_t.c.name == name).with_for_update()
        )
    ).one()
    if row.holder != holder and row.expires_at > now:
        return False
    await session.execute(update(leases_t).where(leases_t.c.name == name).values(holder=holder, expires_at=until))
    return True


_RENEW = "UPDATE leases SET holder = ?, expires_at = ? WHERE name = ? AND (holder = ? OR expires_at <= ?) RETURNING 1"


async def release_lease(session: AsyncSession, *, name: str, holder: str, now: datetime) -> bool:
    """Let a lease go on shutdown, so another replica takes over at once rather than at its expiry."""
    result = await session.execute(
        update(leases_t).where(leases_t.c.name == name, leases_t.c.holder == holder).values(expires_at=now)
    )
    return int(cast(CursorResult[Any], result).rowcount) == 1

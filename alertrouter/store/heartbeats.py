"""Heartbeats (`heartbeats`): when each configured source was last heard from, and since when its
alert is raised; written by whichever replica hears it, read by all."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, not_, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.store.handles import heartbeats_t, insert_for
from alertrouter.store.tables import HeartbeatRow

__all__ = ["HeartbeatRecord", "load_heartbeats", "mark_missing", "record_seen", "watch_heartbeats"]


@dataclass(frozen=True, slots=True)
class HeartbeatRecord:
    name: str
    watched_since: datetime
    last_seen: datetime | None = None
    seen_via: str | None = None
    missing_since: datetime | None = None
    alert_labels: dict[str, str] | None = None


async def watch_heartbeats(session: AsyncSession, names: Collection[str], now: datetime) -> None:
    """A row for each name that has none yet, watched from `now`."""
    if names:
        await session.execute(
            insert_for(session, heartbeats_t)
            .values([{"name": name, "watched_since": now} for name in sorted(names)])
            .on_conflict_do_nothing(index_elements=["name"])  # type: ignore[attr-defined]
        )


async def record_seen(session: AsyncSession, names: Collection[str], now: datetime, *, via: str) -> None:
    """`names` were heard from at `now`; a later sighting already stored (another replica's clock) stays.
    So does the first sighting after a raised silence until the alert is resolved: it is when monitoring
    stopped being blind (the resolve's end), however many sightings come before the next check."""
    if not names:
        return
    await watch_heartbeats(session, names, now)
    t = heartbeats_t
    back = and_(t.c.missing_since.is_not(None), t.c.last_seen > t.c.missing_since)
    await session.execute(
        update(t)
        .where(t.c.name.in_(sorted(names)), or_(t.c.last_seen.is_(None), and_(t.c.last_seen < now, not_(back))))
        .values(last_seen=now, seen_via=via)
    )


async def load_heartbeats(session: AsyncSession) -> dict[str, HeartbeatRecord]:
    rows = (await session.scalars(select(HeartbeatRow))).all()
    return {
        r.name: HeartbeatRecord(r.name, r.watched_since, r.last_seen, r.seen_via, r.missing_since, r.alert_labels)
        for r in rows
    }


async def mark_missing(
    session: AsyncSession, name: str, since: datetime | None, labels: dict[str, str] | None = None
) -> None:
    """Its alert (with `labels`) raised, silent since `since`; or resolved (None)."""
    values = {"missing_since": since, "alert_labels": labels if since is not None else None}
    await session.execute(update(heartbeats_t).where(heartbeats_t.c.name == name).values(**values))

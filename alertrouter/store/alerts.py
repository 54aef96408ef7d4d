"""Writes to alerts, episodes, events and the raw log; batched, dialect-aware, never committing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Insert, Table, and_, bindparam, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.model import AlertState, AlertStatus, ResolvedBy
from alertrouter.store.tables import AlertEpisodeRow, AlertEventRow, AlertRow, RawEventRow

__all__ = [
    "alerts_t",
    "close_episodes",
    "episodes_t",
    "events_t",
    "expire_alerts",
    "insert_alerts",
    "insert_episodes",
    "insert_events",
    "insert_raw_event",
    "load_states",
    "prune_raw_events",
    "raw_events_t",
    "reopen_episodes",
    "touch_alerts",
    "update_alerts",
]

alerts_t = cast(Table, AlertRow.__table__)
episodes_t = cast(Table, AlertEpisodeRow.__table__)
events_t = cast(Table, AlertEventRow.__table__)
raw_events_t = cast(Table, RawEventRow.__table__)

# Columns an update may change; the fingerprint is bound as b_fingerprint to keep names apart.
_ALERT_MUTABLE = (
    "status",
    "starts_at",
    "ends_at",
    "resolved_by",
    "annotations",
    "generator_url",
    "episodes",
    "last_seen",
    "updated_at",
    "fired_at",
)


def _insert(session: AsyncSession, table: Table) -> Insert:
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        return postgresql.insert(table)
    if dialect == "sqlite":
        return sqlite.insert(table)
    raise RuntimeError(f"unsupported database dialect {dialect!r}")


async def insert_raw_event(session: AsyncSession, row: Mapping[str, Any]) -> int | None:
    """Log a payload once per digest; None when an identical payload is already logged."""
    stmt = _insert(session, raw_events_t).values(**row)
    stmt = stmt.on_conflict_do_nothing(index_elements=["digest"]).returning(raw_events_t.c.id)  # type: ignore[attr-defined]
    result = await session.execute(stmt)
    return result.scalar_one_or_none()


async def load_states(session: AsyncSession, fingerprints: Sequence[str]) -> dict[str, AlertState]:
    """Current state of each fingerprint, row-locked on PostgreSQL in a fixed order (no deadlocks)."""
    if not fingerprints:
        return {}
    c = alerts_t.c
    stmt = (
        select(c.fingerprint, c.status, c.starts_at, c.ends_at, c.annotations, c.resolved_by, c.episodes, c.fired_at)
        .where(c.fingerprint.in_(sorted(fingerprints)))
        .order_by(c.fingerprint)
        .with_for_update()
    )
    states: dict[str, AlertState] = {}
    for fp, status, starts_at, ends_at, notes, resolved_by, episodes, fired_at in await session.execute(stmt):
        states[fp] = AlertState(
            fingerprint=fp,
            status=AlertStatus(status),
            starts_at=starts_at,
            ends_at=ends_at,
            annotations=notes,
            resolved_by=ResolvedBy(resolved_by) if resolved_by else None,
            episodes=episodes,
            fired_at=fired_at,
        )
    return states


async def insert_alerts(session: AsyncSession, rows: Sequence[Mapping[str, Any]]) -> set[str]:
    """Insert new alerts; returns the fingerprints actually inserted (others raced in concurrently)."""
    if not rows:
        return set()
    stmt = _insert(session, alerts_t).on_conflict_do_nothing(index_elements=["fingerprint"])  # type: ignore[attr-defined]
    result = await session.execute(stmt.returning(alerts_t.c.fingerprint), list(rows))
    return set(result.scalars())


async def update_alerts(session: AsyncSession, rows: Sequence[Mapping[str, Any]]) -> None:
    if not rows:
        return
    stmt = (
        update(alerts_t)
        .where(alerts_t.c.fingerprint == bindparam("b_fingerprint"))
        .values({name: bindparam(name) for name in _ALERT_MUTABLE})
    )
    params = [{"b_fingerprint": r["fingerprint"], **{k: r[k] for k in _ALERT_MUTABLE}} for r in rows]
    await session.execute(stmt, params)


async def insert_episodes(session: AsyncSession, rows: Sequence[Mapping[str, Any]]) -> None:
    if rows:
        stmt = _insert(session, episodes_t).on_conflict_do_nothing(  # type: ignore[attr-defined]
            index_elements=["fingerprint", "starts_at"]
        )
        await session.execute(stmt, list(rows))


async def close_episodes(session: AsyncSession, rows: Sequence[Mapping[str, Any]]) -> None:
    """Rows: fingerprint, starts_at, ends_at, resolved_by, closed_at."""
    if not rows:
        return
    stmt = (
        update(episodes_t)
        .where(
            and_(
                episodes_t.c.fingerprint == bindparam("b_fingerprint"),
                episodes_t.c.starts_at == bindparam("b_starts_at"),
            )
        )
        .values(
            ends_at=bindparam("ends_at"),
            resolved_by=bindparam("resolved_by"),
            closed_at=bindparam("closed_at"),
        )
    )
    params = [
        {
            "b_fingerprint": r["fingerprint"],
            "b_starts_at": r["starts_at"],
            "ends_at": r["ends_at"],
            "resolved_by": r["resolved_by"],
            "closed_at": r["closed_at"],
        }
        for r in rows
    ]
    await session.execute(stmt, params)


async def reopen_episodes(session: AsyncSession, keys: Sequence[tuple[str, datetime]]) -> None:
    if keys:
        await close_episodes(
            session,
            [
                {"fingerprint": fp, "starts_at": s, "ends_at": None, "resolved_by": None, "closed_at": None}
                for fp, s in keys
            ],
        )


async def insert_events(session: AsyncSession, rows: Sequence[Mapping[str, Any]]) -> None:
    if rows:
        await session.execute(events_t.insert(), list(rows))


async def touch_alerts(
    session: AsyncSession,
    seen: Iterable[tuple[str, datetime]],
    extended: Iterable[tuple[str, datetime, datetime]],
) -> None:
    """Write batched refreshes: `last_seen` for any alert; `ends_at` only if that episode still fires.

    The guard on status and `starts_at` keeps a refresh buffered before a resolve from
    re-extending the resolved alert when the buffer is flushed after it.
    """
    seen_rows = [{"b_fingerprint": fp, "last_seen": at} for fp, at in seen]
    if seen_rows:
        stmt = update(alerts_t).where(alerts_t.c.fingerprint == bindparam("b_fingerprint"))
        await session.execute(stmt.values(last_seen=bindparam("last_seen")), seen_rows)
    ext_rows = [{"b_fingerprint": fp, "b_starts_at": s, "ends_at": e} for fp, s, e in extended]
    if ext_rows:
        stmt = update(alerts_t).where(
            and_(
                alerts_t.c.fingerprint == bindparam("b_fingerprint"),
                alerts_t.c.starts_at == bindparam("b_starts_at"),
                alerts_t.c.status == AlertStatus.FIRING.value,
            )
        )
        await session.execute(stmt.values(ends_at=bindparam("ends_at")), ext_rows)


async def expire_alerts(session: AsyncSession, now: datetime) -> list[tuple[str, datetime, datetime]]:
    """Resolve firing alerts whose `endsAt` passed unrefreshed; returns (fingerprint, starts_at, ends_at)."""
    c = alerts_t.c
    due = (
        await session.execute(
            select(c.fingerprint, c.starts_at, c.ends_at)
            .where(c.status == AlertStatus.FIRING.value, c.ends_at.is_not(None), c.ends_at <= now)
            .order_by(c.fingerprint)
            .with_for_update(skip_locked=True)
        )
    ).all()
    if not due:
        return []
    expired = [(fp, starts, ends) for fp, starts, ends in due]
    await session.execute(
        update(alerts_t)
        .where(c.fingerprint.in_([fp for fp, _, _ in expired]))
        .values(status=AlertStatus.RESOLVED.value, resolved_by=ResolvedBy.TIMEOUT.value, updated_at=now)
    )
    await close_episodes(
        session,
        [
            {
                "fingerprint": fp,
                "starts_at": s,
                "ends_at": e,
                "resolved_by": ResolvedBy.TIMEOUT.value,
                "closed_at": now,
            }
            for fp, s, e in expired
        ],
    )
    await insert_events(
        session,
        [
            {
                "fingerprint": fp,
                "kind": "expired",
                "at": now,
                "episode_starts_at": s,
                "raw_event_id": None,
                "detail": None,
            }
            for fp, s, _ in expired
        ],
    )
    return expired


async def prune_raw_events(session: AsyncSession, before: datetime) -> int:
    result = await session.execute(delete(raw_events_t).where(raw_events_t.c.received_at < before))
    return int(result.rowcount)  # type: ignore[attr-defined]

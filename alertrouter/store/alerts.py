"""Writes to alerts, episodes, events and the raw log; batched, dialect-aware, never committing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import asyncpg
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.model import AlertStatus
from alertrouter.store import bulk, keyed
from alertrouter.store.db import Database
from alertrouter.store.handles import alerts_t, episodes_t, events_t, raw_events_t
from alertrouter.transitions import AlertState, ResolvedBy

__all__ = [
    "close_episodes",
    "expire_alerts",
    "insert_events",
    "insert_fresh",
    "insert_new",
    "insert_raw_events",
    "load_states",
    "load_states_now",
    "prune_raw_events",
    "read_states",
    "reopen_episodes",
    "touch_alerts",
    "update_alerts",
    "with_change_seq",
]


async def insert_raw_events(session: AsyncSession, rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Log payloads once per digest, in one statement; returns digest -> id of the rows inserted now
    (a digest already logged is absent). Rows go in digest order, so concurrent transactions on
    PostgreSQL wait for each other's digests in one order and never deadlock."""
    if not rows:
        return {}
    ordered = sorted(rows, key=lambda r: str(r["digest"]))
    written = await bulk.insert_returning(
        session, raw_events_t, ordered, on_conflict_do_nothing=["digest"], returning=["digest", "id"]
    )
    return {digest: id_ for digest, id_ in written}


async def prune_raw_events(session: AsyncSession, before: datetime, *, limit: int) -> int:
    """Delete the oldest raw events received before `before`, at most `limit`, and clear the links
    history events have to them (the history stays); how many were deleted. The link has no foreign
    key to do that (see migration 0006)."""
    ids = await bulk.delete_oldest(session, raw_events_t.c.received_at, before, limit=limit)
    if ids:
        await session.execute(update(events_t).where(events_t.c.raw_event_id.in_(ids)).values(raw_event_id=None))
    return len(ids)


_STATE_COLUMNS = ("fingerprint", "status", "starts_at", "ends_at", "annotations", "resolved_by", "episodes", "fired_at")
_STATUSES = {s.value: s for s in AlertStatus}


async def load_states(
    session: AsyncSession, fingerprints: Sequence[str], *, lock: bool = True
) -> dict[str, AlertState]:
    """Current state of each fingerprint; with `lock`, row-locked on PostgreSQL in a fixed order (no
    deadlocks) until the transaction ends. Read at driver speed (`keyed.select_in`): every payload
    reads the state of all its alerts, and a re-sent one does nothing else."""
    keys = sorted(fingerprints)
    return _states(await keyed.select_in(session, alerts_t, _STATE_COLUMNS, key="fingerprint", values=keys, lock=lock))


async def read_states(db: Database, fingerprints: Sequence[str]) -> dict[str, AlertState]:
    """`load_states` without a lock or a transaction, the cheapest way the store allows: on SQLite in a
    file on the event loop's own connection (`load_states_now`), on PostgreSQL on the driver's
    connection (`Database.read_driver`), else (SQLite in memory, or busy) through a session."""
    if (states := load_states_now(db, fingerprints)) is not None:
        return states
    if db.is_sqlite:
        async with db.read_single() as session:
            return await load_states(session, fingerprints, lock=False)
    keys = sorted(fingerprints)
    async with db.read_driver() as connection:
        rows = await keyed.select_in_driver(connection, alerts_t, _STATE_COLUMNS, key="fingerprint", values=keys)
    return _states(rows)


def load_states_now(db: Database, fingerprints: Sequence[str]) -> dict[str, AlertState] | None:
    """`load_states` without a lock, read on the event loop itself (`Database.run_now`); None when it
    cannot be (PostgreSQL, SQLite in memory, a busy or failing store): read with `load_states` then."""
    rows = db.run_now(
        lambda connection: keyed.select_in_now(
            connection, alerts_t, _STATE_COLUMNS, key="fingerprint", values=fingerprints
        )
    )
    return None if rows is None else _states(rows)


def _states(rows: Iterable[tuple[Any, ...]]) -> dict[str, AlertState]:
    # Positional, in the record's field order (`_STATE_COLUMNS`'s): keywords cost twice as much.
    return {
        fp: AlertState(
            fp,
            _STATUSES[status],
            starts_at,
            ends_at,
            notes,
            ResolvedBy(resolved_by) if resolved_by else None,
            episodes,
            fired_at,
        )
        for fp, status, starts_at, ends_at, notes, resolved_by, episodes, fired_at in rows
    }


async def insert_new(
    session: AsyncSession,
    alerts: Sequence[dict[str, Any]],
    episodes: Sequence[Mapping[str, Any]],
    events: Sequence[Mapping[str, Any]],
) -> int:
    """New rows, together (one round trip on PostgreSQL): alerts (one whose fingerprint is already
    stored is skipped: another writer raced in), episodes (likewise by fingerprint and start) and
    history events (rows: fingerprint, kind, at, episode_starts_at, raw_event_id, detail). Returns
    how many alerts were inserted."""
    written = await bulk.insert_together(
        session,
        [
            (alerts_t, await with_change_seq(session, alerts), ["fingerprint"]),
            (episodes_t, episodes, ["fingerprint", "starts_at"]),
            (events_t, events, None),
        ],
    )
    return written[0]


# The division fails (SQLSTATE 22012, a data error) when the alerts inserted are fewer than those given:
# another transaction inserted one of them since the statement's snapshot, and everything is undone.
# The payloads go in before the alerts (the alerts' condition reads `r`, which runs it first), the order
# of the transaction's way (`insert_raw_events`, then `insert_new`): HA twins of one webhook, one each
# way at once, wait for each other's payload and never hold an alert the other waits for (a deadlock).
_FRESH_SQL = """WITH stored AS (SELECT 1 FROM alerts WHERE fingerprint = ANY($1::TEXT[]) LIMIT 1),
r AS ({raws} RETURNING digest, id),
a AS ({alerts} RETURNING 1),
e AS ({episodes} RETURNING 1),
h AS ({events} RETURNING 1)
SELECT EXISTS (SELECT 1 FROM stored),
    (SELECT CASE WHEN EXISTS (SELECT 1 FROM stored) THEN 0 ELSE 1 / ((SELECT count(*) FROM a) = $2)::INT END),
    (SELECT array_agg(digest) FROM r), (SELECT array_agg(id) FROM r)"""
_NONE_STORED = "NOT EXISTS (SELECT 1 FROM stored)"
_AFTER_RAWS = "NOT EXISTS (SELECT 1 FROM stored) AND (SELECT count(*) FROM r) >= 0"


async def insert_fresh(
    db: Database,
    raws: Sequence[Mapping[str, Any]],
    alerts: Sequence[Mapping[str, Any]],
    episodes: Sequence[Mapping[str, Any]],
    events: Sequence[Mapping[str, Any]],
) -> dict[str, int] | None:
    """PostgreSQL: alerts none of which is stored yet, with their episodes, history events and the
    payloads that carried them (`raws`, one per digest), in one statement outside a transaction: it
    commits on its own, one round trip where ingest's transaction takes five (BEGIN, the states read
    with their locks, the raw log, the rows, COMMIT). Each event row names its payload by the extra
    field `raw_digest`, which becomes its `raw_event_id`.

    All or nothing: if any of the alerts is stored (or is inserted by another transaction meanwhile),
    nothing is written and None is returned, for the caller to go the transaction's way. Otherwise
    digest -> id of the payloads logged (a digest already in the log is absent, as `insert_raw_events`)."""
    if not (alerts and raws and episodes and events):
        raise ValueError("insert_fresh: every new alert has a payload, an episode and an event")
    params: list[Any] = [[row["fingerprint"] for row in alerts], len(alerts)]
    parts: dict[str, str] = {}
    events_raw = "(SELECT r.id FROM r WHERE r.digest = v.raw_digest)"
    for name, table, rows, conflict, where, extra, computed in (
        ("raws", raw_events_t, raws, ["digest"], _NONE_STORED, [], []),
        ("alerts", alerts_t, alerts, ["fingerprint"], _AFTER_RAWS, [], []),
        ("episodes", episodes_t, episodes, ["fingerprint", "starts_at"], _NONE_STORED, [], []),
        ("events", events_t, events, None, _NONE_STORED, [("raw_digest", "TEXT")], [("raw_event_id", events_raw)]),
    ):
        sql, values = bulk.pg_insert(
            table,
            rows,
            param=len(params) + 1,
            on_conflict_do_nothing=conflict,
            extra=extra,
            computed=computed,
            where=where,
        )
        parts[name] = sql
        params += values
    async with db.autocommit() as connection:
        try:
            stored, _, digests, ids = await connection.fetchrow(_FRESH_SQL.format(**parts), *params)
        except asyncpg.DivisionByZeroError:  # raced: see _FRESH_SQL (the statement is undone, the connection idle)
            return None
    if stored:
        return None
    return dict(zip(digests or (), ids or (), strict=True))


async def update_alerts(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Rows: fingerprint and the state columns (status, starts_at, ends_at, resolved_by, annotations,
    generator_url, episodes, last_seen, updated_at, fired_at); labels never change."""
    await bulk.update(session, alerts_t, await with_change_seq(session, rows), key=["fingerprint"])


_DRAW = "UPDATE alert_change_counter SET value = value + 1 WHERE id = 1 RETURNING value"


async def with_change_seq(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> Sequence[dict[str, Any]]:
    """`rows`, given their `change_seq` on SQLite: one value of the counter for all of them, drawn in one
    statement (every alert this transaction writes is one change for the engine's next read); on
    PostgreSQL as they are, the trigger sets it from the transaction's id. See migration 0015. The rows
    are changed in place: they are the ingest plan's own."""
    if not rows or session.get_bind().dialect.name != "sqlite":
        return rows
    # At driver speed (`bulk.sqlite_rows`): through SQLAlchemy's execution, a cursor opened, run, read
    # and closed, this draw was four trips to the connection's thread per commit, each a wake-up of the loop.
    ((value,),) = await bulk.sqlite_rows(session, _DRAW)
    for row in rows:
        row["change_seq"] = value
    return rows


async def insert_episodes(session: AsyncSession, rows: Sequence[Mapping[str, Any]]) -> None:
    await bulk.insert(session, episodes_t, rows, on_conflict_do_nothing=["fingerprint", "starts_at"])


async def close_episodes(session: AsyncSession, rows: Sequence[Mapping[str, Any]]) -> None:
    """Rows: fingerprint, starts_at (the episode), ends_at, resolved_by, closed_at."""
    await bulk.update(session, episodes_t, rows, key=["fingerprint", "starts_at"])


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
    """Rows: fingerprint, kind, at, episode_starts_at, raw_event_id, detail."""
    await bulk.insert(session, events_t, rows)


async def touch_alerts(
    session: AsyncSession,
    seen: Iterable[tuple[str, datetime]],
    extended: Iterable[tuple[str, datetime, datetime]],
) -> None:
    """Write batched refreshes: `last_seen` for any alert; `ends_at` only if that episode still fires.

    The guard on status and `starts_at` keeps a refresh buffered before a resolve from
    re-extending the resolved alert when the buffer is flushed after it.
    """
    firing = AlertStatus.FIRING.value
    await bulk.update(session, alerts_t, [{"fingerprint": fp, "last_seen": at} for fp, at in seen], key=["fingerprint"])
    await bulk.update(
        session,
        alerts_t,
        [{"fingerprint": fp, "starts_at": s, "status": firing, "ends_at": e} for fp, s, e in extended],
        key=["fingerprint", "starts_at", "status"],
    )


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

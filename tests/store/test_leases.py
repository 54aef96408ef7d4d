"""Leases on both stores: taken when free or run out, renewed by their holder, refused to another holder
while they run, and (on PostgreSQL) held by a transaction until it ends, so two replicas never both
work under one."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from alertrouter.store import Database
from alertrouter.store.handles import leases_t
from alertrouter.store.leases import hold_lease, lease_held_by_other

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
TTL = timedelta(seconds=15)


async def _hold(db: Database, holder: str, now: datetime) -> bool:
    async with db.write() as session:
        held = await hold_lease(session, name="engine", holder=holder, now=now, until=now + TTL)
        await session.commit()
    return held


async def _row(db: Database) -> tuple[str, datetime]:
    async with db.read() as session:
        row = (await session.execute(select(leases_t.c.holder, leases_t.c.expires_at))).one()
    return row.holder, row.expires_at


async def test_a_lease_is_taken_renewed_refused_while_it_runs_and_taken_over_once_it_ran_out(db: Database) -> None:
    assert await _hold(db, "a", T0)  # no row yet
    assert await _row(db) == ("a", T0 + TTL)
    assert await _hold(db, "a", T0 + timedelta(seconds=5))  # renewed: runs 15 s from now
    assert await _row(db) == ("a", T0 + timedelta(seconds=20))
    assert not await _hold(db, "b", T0 + timedelta(seconds=19))
    assert await _row(db) == ("a", T0 + timedelta(seconds=20))  # a refusal changes nothing
    async with db.read() as session:
        assert await lease_held_by_other(session, name="engine", holder="b", now=T0 + timedelta(seconds=19))
    assert await _hold(db, "b", T0 + timedelta(seconds=20))  # ran out at that instant
    assert await _row(db) == ("b", T0 + timedelta(seconds=35))
    assert not await _hold(db, "a", T0 + timedelta(seconds=21))


async def test_a_lease_taken_in_an_open_transaction_is_not_taken_by_another_until_it_ends(
    db: Database, database_url: str
) -> None:
    """Replica a takes the run-out lease in a transaction it has not committed; b, trying meanwhile, must
    see a's lease once a commits (PostgreSQL: b waits on the row; SQLite: one writer at a time)."""
    assert await _hold(db, "b", T0)
    later = T0 + TTL  # b's lease ran out
    other = Database(database_url)
    try:
        async with db.write() as session:
            assert await hold_lease(session, name="engine", holder="a", now=later, until=later + TTL)
            b_tries = asyncio.ensure_future(_hold(other, "b", later))
            await asyncio.sleep(0.2)  # b is waiting for a's transaction (not a timing assertion: b must wait)
            assert not b_tries.done()
            await session.commit()
        assert not await b_tries
    finally:
        await other.dispose()
    assert await _row(db) == ("a", later + TTL)

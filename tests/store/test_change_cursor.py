"""The engine reads alert changes by `alerts.change_seq`, set by the database (migration 0015), from a
cursor taken before each read: exactly what changed since, whatever the writers' clocks say and however
late a transaction commits after stamping its rows, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from alertrouter.store import Database, bulk
from alertrouter.store.alerts import insert_new, update_alerts
from alertrouter.store.handles import alerts_t
from alertrouter.store.incidents import change_cursor, load_live_alerts
from support.rows import T0, alert

RECENT = T0 - timedelta(hours=1)


async def seqs(db: Database) -> dict[str, int | None]:
    async with db.read() as s:
        return dict((await s.execute(select(alerts_t.c.fingerprint, alerts_t.c.change_seq))).all())


async def read_from(db: Database, since: int) -> tuple[list[str], int]:
    async with db.read() as s:
        rows, cursor = await load_live_alerts(s, since=since, resolved_since=RECENT)
    return sorted(live.fingerprint for live, *_ in rows), cursor


def exactly_or_also_earlier(db: Database, seen: list[str], changed: list[str], earlier: list[str]) -> None:
    """SQLite: a read from a cursor holds exactly what changed after it. PostgreSQL: also what changed
    in transactions that were in progress anywhere on the server when the cursor was taken (its
    transaction ids are server-wide: another database's open transaction holds the cursor back), never
    less; the engine leaves those out by their `updated_at`."""
    if db.dialect == "sqlite":
        assert seen == sorted(changed)
    else:
        assert set(changed) <= set(seen) <= set(changed) | set(earlier)


async def test_every_insert_and_update_of_updated_at_gets_a_later_sequence(db: Database) -> None:
    a, b = "a" * 16, "b" * 16
    async with db.write() as s:
        await insert_new(s, [alert(a), alert(b)], [], [])
        await s.commit()
    first = await seqs(db)
    assert None not in first.values()
    async with db.write() as s:  # a decision is not a change of the alert: no new sequence
        await bulk.update(s, alerts_t, [{"fingerprint": a, "decision": "notified"}], key=["fingerprint"])
        await s.commit()
    assert await seqs(db) == first
    async with db.write() as s:  # not through ingest (as the timeout resolves): the trigger gives it one
        await bulk.update(
            s, alerts_t, [{"fingerprint": a, "status": "resolved", "updated_at": T0}], key=["fingerprint"]
        )
        await s.commit()
    after = await seqs(db)
    assert (after[a] or 0) > max(v or 0 for v in first.values())
    assert after[b] == first[b]


async def test_a_read_from_the_cursor_returns_only_what_changed_after_a_burst(db: Database) -> None:
    burst = [f"{i:016x}" for i in range(300)]
    async with db.write() as s:
        await insert_new(s, [alert(fp) for fp in burst], [], [])
        await s.commit()
    everything, cursor = await read_from(db, 0)
    assert everything == burst
    # One alert changes a second later: the read holds it alone, not the 300 stamped within 30 s of it.
    async with db.write() as s:
        await bulk.update(
            s,
            alerts_t,
            [{"fingerprint": burst[7], "status": "resolved", "updated_at": T0 + timedelta(seconds=1)}],
            key=["fingerprint"],
        )
        await s.commit()
    changed, later = await read_from(db, cursor)
    exactly_or_also_earlier(db, changed, [burst[7]], burst)
    exactly_or_also_earlier(db, (await read_from(db, later))[0], [], burst)


async def test_a_change_stamped_by_a_slow_clock_is_still_read(db: Database) -> None:
    a, b = "a" * 16, "b" * 16
    async with db.write() as s:
        await insert_new(s, [alert(a, updated_at=T0 + timedelta(minutes=5))], [], [])
        await s.commit()
    _, cursor = await read_from(db, 0)
    # A replica whose clock is 10 minutes behind (or a commit long after its stamp): the old watermark
    # (the latest updated_at seen, minus 30 s) would never have read it.
    async with db.write() as s:
        await insert_new(s, [alert(b, updated_at=T0 - timedelta(minutes=5))], [], [])
        await s.commit()
    exactly_or_also_earlier(db, (await read_from(db, cursor))[0], [b], [a])


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_transaction_that_commits_after_a_read_is_in_the_next_read(db: Database) -> None:
    """PostgreSQL's writers run concurrently: one that stamped its rows before another but commits
    after a read has taken the other's rows is read the next time."""
    early, late = "e" * 16, "f" * 16
    async with db.write() as s:
        await insert_new(s, [alert(early)], [], [])
        await s.commit()
    _, cursor = await read_from(db, 0)
    async with db.write() as slow:
        await bulk.update(
            slow,
            alerts_t,
            [{"fingerprint": early, "status": "resolved", "updated_at": T0 + timedelta(seconds=1)}],
            key=["fingerprint"],
        )  # in progress, not committed
        async with db.write() as fast:
            await insert_new(fast, [alert(late, updated_at=T0 + timedelta(seconds=2))], [], [])
            await fast.commit()
        seen, next_cursor = await read_from(db, cursor)
        assert late in seen
        await slow.commit()
    seen_after, _ = await read_from(db, next_cursor)
    assert early in seen_after


async def test_the_cursor_only_moves_forward(db: Database) -> None:
    async with db.read() as s:
        before = await change_cursor(s)
    async with db.write() as s:
        await insert_new(s, [alert("c" * 16)], [], [])
        await s.commit()
    async with db.read() as s:
        after = await change_cursor(s)
    # PostgreSQL's stays where it is while any transaction that began before the insert is still open.
    assert after > before if db.dialect == "sqlite" else after >= before


async def test_ingest_writes_and_other_writes_draw_from_one_sequence(db: Database) -> None:
    """Ingest gives its rows their sequence itself (on SQLite, one value drawn for the whole transaction);
    any other update of `updated_at` gets one from the database's trigger; later transactions, larger."""
    a, b, c = "a" * 16, "b" * 16, "c" * 16
    async with db.write() as s:
        await insert_new(s, [alert(a), alert(b)], [], [])
        await s.commit()
    async with db.write() as s:  # not through ingest, as the timeout resolves: the trigger fills it in
        await bulk.update(
            s, alerts_t, [{"fingerprint": b, "status": "resolved", "updated_at": T0}], key=["fingerprint"]
        )
        await s.commit()
    mid = await seqs(db)
    async with db.write() as s:
        await update_alerts(s, [{"fingerprint": a, "status": "resolved", "updated_at": T0 + timedelta(seconds=1)}])
        await s.commit()
    async with db.write() as s:
        await insert_new(s, [alert(c)], [], [])
        await s.commit()
    after = await seqs(db)
    assert None not in after.values()
    assert (mid[a] or 0) < (after[b] or 0) < (after[a] or 0) < (after[c] or 0)
    if db.dialect == "sqlite":  # PostgreSQL's cursor waits for every older transaction on the server
        async with db.read() as s:
            assert await change_cursor(s) > (after[c] or 0)

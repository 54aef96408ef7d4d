"""SQLite: a rollback is sent to aiosqlite's thread only when the connection has a transaction open
(`connections.skip_idle_rollbacks`); every transaction left open is still rolled back as before."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from sqlalchemy import func, select, text

from alertrouter.store import Database, bulk
from alertrouter.store import alerts as store
from alertrouter.store.handles import alerts_t
from alertrouter.store.migrate import upgrade
from support.rows import alert


@pytest.fixture
async def sqlite_db(tmp_path: Path) -> AsyncIterator[Database]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'alertrouter.db'}"
    upgrade(url)
    db = Database(url)
    try:
        yield db
    finally:
        await db.dispose()


@pytest.fixture
def rollbacks(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each rollback that reached aiosqlite, with whether its connection had a transaction open."""
    sent: list[bool] = []
    original = aiosqlite.Connection.rollback

    async def rollback(self: aiosqlite.Connection) -> Any:
        sent.append(self.in_transaction)
        return await original(self)

    monkeypatch.setattr(aiosqlite.Connection, "rollback", rollback)
    return sent


async def count(db: Database) -> int:
    async with db.read() as s:
        return int(await s.scalar(select(func.count()).select_from(alerts_t)) or 0)


async def test_reads_and_commits_send_no_rollback(sqlite_db: Database, rollbacks: list[bool]) -> None:
    async with sqlite_db.write() as s:  # warm the pool: its first connection is opened here
        await bulk.insert(s, alerts_t, [alert("a" * 16)])
        await s.commit()
    rollbacks.clear()
    for _ in range(3):
        async with sqlite_db.read() as s:
            assert set(await store.load_states(s, ["a" * 16, "b" * 16], lock=False)) == {"a" * 16}
    async with sqlite_db.write() as s:
        await bulk.insert(s, alerts_t, [alert("b" * 16)])
        await s.commit()
    assert rollbacks == []  # before: two per read (the session's, the pool's) and one after the commit
    assert await count(sqlite_db) == 2


async def test_a_transaction_left_open_is_still_rolled_back(sqlite_db: Database, rollbacks: list[bool]) -> None:
    # A writer that fails between its statements closes its session without committing: its rows must
    # be gone, and SQLite's write lock released for the next writer (one connection is reused here).
    async with sqlite_db.write() as s:
        await bulk.insert(s, alerts_t, [alert("a" * 16)])
        await store.with_change_seq(s, [alert("b" * 16)])
    assert rollbacks == [True]
    assert await count(sqlite_db) == 0
    async with sqlite_db.write() as s:
        assert await bulk.sqlite_rows(s, "SELECT value FROM alert_change_counter") == [(0,)]
        await bulk.insert(s, alerts_t, [alert("c" * 16)])
        await s.commit()
    assert await count(sqlite_db) == 1


async def test_an_explicit_rollback_undoes_the_writes(sqlite_db: Database, rollbacks: list[bool]) -> None:
    async with sqlite_db.write() as s:
        await s.execute(text("UPDATE alert_change_counter SET value = 41"))
        await s.rollback()
        assert rollbacks == [True]
        assert await s.scalar(text("SELECT value FROM alert_change_counter")) == 0

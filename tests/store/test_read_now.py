"""The event loop's own SQLite reader (`Database.read_now`, `alerts.load_states_now`): the same states
as the pool's read, never a wait, never a snapshot left open, and None (read through the pool) wherever
it cannot serve."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from alertrouter.store import Database, bulk, keyed
from alertrouter.store.alerts import _STATE_COLUMNS as STATE_COLUMNS
from alertrouter.store.alerts import load_states, load_states_now
from alertrouter.store.handles import alerts_t
from alertrouter.store.migrate import upgrade
from support.rows import T0, alert


async def stored_alerts(db: Database, count: int) -> list[str]:
    fps = [f"{i:016x}" for i in range(count)]
    rows = [
        alert(fp, status="resolved" if i % 3 == 0 else "firing", ends_at=T0 + timedelta(minutes=i), fired_at=None)
        if i % 2
        else alert(fp, annotations={"summary": f"GPU {i} 显卡过热"})
        for i, fp in enumerate(fps)
    ]
    async with db.write() as s:
        await bulk.insert(s, alerts_t, rows)
        await s.commit()
    return fps


async def test_reads_the_states_the_pool_reads_on_sqlite_and_leaves_postgresql_to_the_pool(db: Database) -> None:
    fps = await stored_alerts(db, 7)
    wanted = [*reversed(fps), "f" * 16]  # unordered, and one that is not stored
    async with db.read_single() as s:
        expected = await load_states(s, wanted, lock=False)
    now = load_states_now(db, wanted)
    if db.is_sqlite:
        assert now == expected
        assert len(expected) == 7
    else:
        assert now is None


async def test_a_store_in_memory_or_a_missing_file_gets_none_and_no_file_is_made(tmp_path: Path) -> None:
    memory = Database("sqlite+aiosqlite:///:memory:")
    missing = Database(f"sqlite+aiosqlite:///{tmp_path / 'not-yet.db'}")
    try:
        assert memory.read_now() is None
        assert missing.read_now() is None
        assert load_states_now(missing, ["a" * 16]) is None
        assert not (tmp_path / "not-yet.db").exists()
    finally:
        await memory.dispose()
        await missing.dispose()


async def migrated(tmp_path: Path) -> tuple[Database, Path]:
    path = tmp_path / "alertrouter.db"
    url = f"sqlite+aiosqlite:///{path}"
    upgrade(url)
    return Database(url), path


async def test_a_busy_store_is_not_waited_for_and_the_connection_is_kept(tmp_path: Path) -> None:
    db, path = await migrated(tmp_path)
    fps = await stored_alerts(db, 2)
    await db.engine.dispose()  # the pool's connections closed: nothing else has the file open
    # Another connection holding the file exclusively: SQLite answers busy to a reader that starts now.
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        # (a read first, in the normal mode: a connection whose first access is exclusive never lets go)
        holder.execute("SELECT count(*) FROM alerts").fetchall()
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("UPDATE alerts SET annotations = annotations")
        reader = db.read_now()
        assert reader is not None
        assert reader.execute("PRAGMA busy_timeout").fetchone() == (0,)  # it fails at once, waits for nobody
        assert load_states_now(db, fps) is None  # busy: the caller reads through the pool (which may wait)
        assert db.read_now() is reader  # busy is no failure of the connection: kept
        holder.execute("PRAGMA locking_mode=NORMAL")
        holder.execute("SELECT count(*) FROM alerts").fetchall()  # lets the exclusive lock go
        states = load_states_now(db, fps)
        assert states is not None
        assert sorted(states) == fps
    finally:
        holder.close()
        await db.dispose()


def not_a_database(tmp_path: Path) -> Path:
    path = tmp_path / "alertrouter.db"
    path.write_bytes(b"not a database " * 400)
    return path


async def test_a_failing_store_closes_the_connection_and_the_next_read_opens_another(tmp_path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{not_a_database(tmp_path)}")  # SQLite: "file is not a database"
    try:
        first = db.read_now()
        assert first is not None  # opening reads nothing yet
        assert load_states_now(db, ["a" * 16]) is None
        with pytest.raises(sqlite3.ProgrammingError):  # closed
            first.execute("SELECT 1")
        second = db.read_now()
        assert second is not None
        assert second is not first
    finally:
        await db.dispose()


async def test_a_read_leaves_no_snapshot_for_a_checkpoint_to_wait_for(tmp_path: Path) -> None:
    db, path = await migrated(tmp_path)
    fps = await stored_alerts(db, 600)  # more rows than one step of the statement
    try:
        states = load_states_now(db, fps)
        assert states is not None
        assert len(states) == 600
        reader = db.read_now()
        assert reader is not None
        assert not reader.in_transaction
        other = sqlite3.connect(path, isolation_level=None)
        try:
            other.execute("UPDATE alerts SET annotations = annotations")  # frames in the log
            busy, log_pages, copied = other.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            assert (busy, log_pages, copied) == (0, 0, 0)  # copied whole and the log emptied
        finally:
            other.close()
    finally:
        await db.dispose()


async def test_it_writes_nothing(tmp_path: Path) -> None:
    db, _ = await migrated(tmp_path)
    try:
        reader = db.read_now()
        assert reader is not None
        with pytest.raises(sqlite3.OperationalError, match=r"readonly|read-only"):
            reader.execute("DELETE FROM alerts")
    finally:
        await db.dispose()


async def test_dispose_closes_it(tmp_path: Path) -> None:
    db, _ = await migrated(tmp_path)
    reader = db.read_now()
    assert reader is not None
    await db.dispose()
    with pytest.raises(sqlite3.ProgrammingError):
        reader.execute("SELECT 1")


async def test_the_states_come_back_in_one_step_of_the_statement(tmp_path: Path) -> None:
    # One row (a JSON document of them all): Python's sqlite3 takes the interpreter back after every step,
    # and while another thread runs Python each taking back waits for it (a storm's pass: 100-250 ms for a
    # read of 100, row by row).
    db, _ = await migrated(tmp_path)
    fps = await stored_alerts(db, 250)
    try:
        reader = db.read_now()
        assert reader is not None
        read = keyed._read_now(alerts_t, STATE_COLUMNS, "fingerprint")
        assert len(reader.execute(read.sql, (json.dumps(fps),)).fetchall()) == 1
        async with db.read_single() as session:
            expected = await load_states(session, fps, lock=False)
        assert load_states_now(db, fps) == expected
        assert len(expected) == 250
    finally:
        await db.dispose()

"""SQLite's write-ahead log checkpointed by a loop of its own (`alertrouter.process.checkpoints`), not by the
commit that crosses SQLite's automatic mark (1,000 pages by default: https://sqlite.org/wal.html)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy import text

from alertrouter.metrics import Metrics
from alertrouter.process.checkpoints import Checkpointer
from alertrouter.process.loops import LoopHealth
from alertrouter.store import Database

BLOB = 200_000  # bytes per row: about 50 pages of 4 KiB


async def _write(db: Database, rows: int) -> None:
    for _ in range(rows):
        async with db.write() as session:
            await session.execute(text("INSERT INTO t (b) VALUES (randomblob(:n))"), {"n": BLOB})
            await session.commit()


async def _database(tmp_path: Path) -> Database:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'a.db'}")
    async with db.write() as session:
        await session.execute(text("CREATE TABLE t (b BLOB)"))
        await session.commit()
    return db


async def test_commits_leave_the_log_to_the_checkpointer_and_it_starts_over_after_one(tmp_path: Path) -> None:
    db = await _database(tmp_path)
    checkpointer = Checkpointer(tmp_path / "a.db")
    try:
        await _write(db, 30)  # 30 commits, about 1,500 pages
        first = await checkpointer.run_once()
        # no commit on the way copied the log (SQLite's default mark would have, at 1,000 pages) ...
        assert first.log_pages >= 30 * BLOB // 4096
        # ... and a checkpoint no one holds back copies all of it
        assert not first.busy
        assert first.copied_pages == first.log_pages
        await _write(db, 1)
        after = await checkpointer.run_once()
        assert after.log_pages < first.log_pages // 10  # the next commit wrote from the log's start
    finally:
        await checkpointer.stop()
        await db.dispose()


async def test_the_loop_checkpoints_every_interval_and_reports_its_passes(tmp_path: Path) -> None:
    db = await _database(tmp_path)
    metrics = Metrics()
    loops = LoopHealth(metrics)
    checkpointer = Checkpointer(tmp_path / "a.db", interval=0.01, metrics=metrics, loops=loops)
    checkpointer.start()
    try:
        await _write(db, 3)

        def count() -> float:
            return metrics.registry.get_sample_value("alertrouter_sqlite_checkpoint_duration_seconds_count") or 0.0

        for _ in range(500):
            if count() >= 2 and (metrics.registry.get_sample_value("alertrouter_sqlite_wal_pages") or 0) > 0:
                break
            await asyncio.sleep(0.01)
        assert count() >= 2
        assert (metrics.registry.get_sample_value("alertrouter_sqlite_wal_pages") or 0) > 0
        assert metrics.registry.get_sample_value("alertrouter_loop_errors_total", {"loop": "checkpoint"}) == 0
    finally:
        await checkpointer.stop()
        await db.dispose()


def test_the_checkpointed_file_is_the_databases_own(tmp_path: Path) -> None:
    assert Database(f"sqlite+aiosqlite:///{tmp_path / 'a.db'}").sqlite_file == tmp_path / "a.db"
    assert Database("sqlite+aiosqlite:///relative.db").sqlite_file == Path("relative.db")
    assert Database("sqlite+aiosqlite://").sqlite_file is None  # in memory
    assert Database("sqlite+aiosqlite:///:memory:").sqlite_file is None
    assert Database("sqlite+aiosqlite:///file:a.db?uri=true").sqlite_file is None
    assert Database("postgresql+asyncpg://u:p@127.0.0.1/db").sqlite_file is None

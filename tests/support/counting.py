"""Counters hooked onto a `Database`, for tests that assert how many transactions or sessions a
piece of work takes."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import event

from alertrouter.store import Database


class Commits:
    """Counts the transactions committed on `db` from now on: a session's, and a statement that
    commits on its own (`Database.autocommit`, on PostgreSQL) once it has run."""

    def __init__(self, db: Database) -> None:
        self.count = 0
        event.listen(db.engine.sync_engine, "commit", self._commit)
        autocommit = db.autocommit

        @contextlib.asynccontextmanager
        async def counting_autocommit() -> AsyncIterator[Any]:
            async with autocommit() as connection:
                yield connection
            self.count += 1

        db.autocommit = counting_autocommit  # type: ignore[method-assign]

    def _commit(self, _conn: Any) -> None:
        self.count += 1


class Sessions:
    """Counts the read (any kind: a session, or a read on the event loop's own SQLite connection) and
    write sessions (and statements that commit on their own) opened on `db` from now on."""

    def __init__(self, db: Database) -> None:
        self.reads = self.writes = 0
        read, read_single, read_now, read_driver, write = db.read, db.read_single, db.read_now, db.read_driver, db.write
        autocommit = db.autocommit

        def counting_autocommit() -> Any:
            self.writes += 1
            return autocommit()

        def counting_read_driver() -> Any:
            self.reads += 1
            return read_driver()

        def counting_read_now() -> Any:
            connection = read_now()
            self.reads += connection is not None
            return connection

        def counting_read() -> Any:
            self.reads += 1
            return read()

        def counting_read_single() -> Any:
            self.reads += 1
            return read_single()

        def counting_write() -> Any:
            self.writes += 1
            return write()

        db.read = counting_read  # type: ignore[method-assign]
        db.read_single = counting_read_single  # type: ignore[method-assign]
        db.read_now = counting_read_now  # type: ignore[method-assign]
        db.read_driver = counting_read_driver  # type: ignore[method-assign]
        db.write = counting_write  # type: ignore[method-assign]
        db.autocommit = counting_autocommit  # type: ignore[method-assign]

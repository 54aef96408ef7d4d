"""Engine and sessions for SQLite (embedded default) and PostgreSQL (production)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import orjson
from sqlalchemy import exc, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.util import greenlet_spawn

from alertrouter.store import connections

__all__ = [
    "STORE_ERRORS",
    "Database",
    "describe_error",
    "is_outage",
    "json_dumps",
    "json_loads",
    "probe",
    "shared_values",
]

log = logging.getLogger(__name__)
_T = TypeVar("_T")

# What "the store is unavailable" looks like from here; ingest answers 503 on these.
STORE_ERRORS: tuple[type[Exception], ...] = (
    exc.OperationalError,
    exc.InterfaceError,
    exc.DBAPIError,
    exc.TimeoutError,  # pool exhausted
    OSError,
    TimeoutError,
)

# SQLSTATE classes of errors that one row's values cause (22: data exception, e.g. a value too long
# for its column or an integer out of range; 23: integrity constraint violation). Every other store
# error (08 connection, 57P03 starting up, 40 deadlock, 53 out of resources, a timeout) is an outage.
_DATA_SQLSTATE_CLASSES = ("22", "23")


def is_outage(error: BaseException) -> bool:
    """Whether the store itself failed (unreachable, starting, locked, timed out, deadlocked), as
    opposed to refusing one payload's or row's values: an outage is answered 503 for everyone and
    retried; a data error is answered for the item that caused it alone."""
    if not isinstance(error, STORE_ERRORS) or isinstance(error, exc.DataError | exc.IntegrityError):
        return False
    if isinstance(error, exc.DBAPIError):
        orig: BaseException | None = error.orig
        while orig is not None:
            state = getattr(orig, "sqlstate", None)
            if isinstance(state, str) and state[:2] in _DATA_SQLSTATE_CLASSES:
                return False
            orig = orig.__cause__
    return True


def describe_error(exc: BaseException) -> str:
    """The first line of a store error for a log line (driver messages run to many lines; some are empty)."""
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


class Database:
    """One engine per process, plus the write discipline each backend needs.

    SQLite allows one writer at a time; writes are serialised in-process by an asyncio lock
    rather than left to fail with "database is locked" under concurrent webhooks. PostgreSQL
    writers run concurrently and rely on row locks (`SELECT ... FOR UPDATE`) instead.
    """

    def __init__(
        self, url: str, *, sqlite_synchronous: str = "FULL", pool_size: int = 10, busy_timeout: float = 5.0
    ) -> None:
        self.url = make_url(url)
        self.is_sqlite = self.url.get_backend_name() == "sqlite"
        kwargs: dict[str, Any] = {
            "json_serializer": json_dumps,
            "json_deserializer": json_loads,
        }
        if self.is_sqlite:
            # No pre-ping: a file does not drop connections, and each ping was a trip to the
            # connection's thread at the start of every transaction.
            kwargs["connect_args"] = {"timeout": busy_timeout}
        else:
            kwargs.update(
                pool_size=pool_size,
                max_overflow=pool_size,
                pool_timeout=5,
                connect_args={"timeout": 5, "command_timeout": 30},
            )
        self.engine: AsyncEngine = create_async_engine(self.url, **kwargs)
        if self.is_sqlite:
            connections.install_sqlite_pragmas(self.engine, sqlite_synchronous, busy_timeout)
            connections.skip_idle_rollbacks(self.engine)
        else:
            connections.check_on_checkout(self.engine, connections.PING_IDLE)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False, autoflush=False)
        # One statement needs no transaction of its own: PostgreSQL runs it in its own snapshot (SQLite's
        # driver opens none for a read, so there the plain sessions serve).
        self._single_reads = (
            self.sessions
            if self.is_sqlite
            else async_sessionmaker(
                self.engine.execution_options(isolation_level="AUTOCOMMIT"), expire_on_commit=False, autoflush=False
            )
        )
        self._write_lock = asyncio.Lock() if self.is_sqlite else None
        self._loop_reader: sqlite3.Connection | None = None

    @property
    def dialect(self) -> str:
        return self.url.get_backend_name()

    @property
    def sqlite_file(self) -> Path | None:
        """The SQLite database's file (None: PostgreSQL, SQLite in memory, or named by a `file:` URI,
        whose options only SQLite reads)."""
        where = self.url.database or ""
        if not self.is_sqlite or where in ("", ":memory:") or self.url.query.get("uri") == "true":
            return None
        return Path(where)

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncSession]:
        """A session for one write transaction; the caller commits."""
        if self._write_lock is None:
            async with self.sessions() as session:
                yield session
            return
        async with self._write_lock, self.sessions() as session:
            yield session

    async def in_batches(self, step: Callable[[AsyncSession, int], Awaitable[int]], size: int) -> int:
        """`step(session, size)` in write transactions of its own, one after another, until one handles
        fewer than `size` rows; how many rows in all. For backlogs (pruning after an outage or a
        shorter retention): in one transaction they would hold the SQLite write lock, which every
        webhook waits for, until the last row."""
        total = 0
        while True:
            async with self.write() as session:
                done = await step(session, size)
                await session.commit()
            total += done
            if done < size:
                return total

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        async with self.sessions() as session:
            yield session

    @contextlib.asynccontextmanager
    async def read_single(self) -> AsyncIterator[AsyncSession]:
        """A session for reads that are each one statement and need not agree with one another (a
        push's stored states). On PostgreSQL it runs no transaction: a statement is its own snapshot,
        and the BEGIN and ROLLBACK around it were two more round trips, each a wake-up of the event
        loop. SQLite's driver opens no transaction for a read anyway."""
        async with self._single_reads() as session:
            yield session

    def read_driver(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """PostgreSQL: the driver's own connection (asyncpg's) from the pool, for reads outside a
        transaction, each statement its own snapshot (a re-sent push's stored states, the engine's
        quick reads), without SQLAlchemy's session and execution around it, which cost the event loop about
        half as much again per read. The pool's checks on checkout apply as for any
        session. The driver's failure raises as SQLAlchemy would raise a store's failure
        (`OperationalError`, with the driver's error as `orig`, so `is_outage` reads its SQLSTATE); any
        other error raised in the block (a row the caller could not decode) as it is, not made an
        outage. Either way the connection is dropped from the pool, not given back in an unknown state."""
        return self._driver()

    def autocommit(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """`read_driver`'s connection for a write that is one statement and commits on its own (ingest's
        insert of alerts none of which is stored: `store.alerts.insert_fresh`)."""
        return self._driver()

    @contextlib.asynccontextmanager
    async def _driver(self) -> AsyncIterator[Any]:
        proxied = await self.engine.raw_connection()
        try:
            yield proxied.driver_connection
        except BaseException as error:
            await greenlet_spawn(proxied.invalidate, error)
            if isinstance(error, _DRIVER_ERRORS):
                raise exc.OperationalError(None, None, error) from error
            raise
        await greenlet_spawn(proxied.close)

    def read_now(self) -> sqlite3.Connection | None:
        """SQLite in a file: a connection of the event loop's own, for a read that is one short statement
        by key (a re-sent push's stored states), run right here instead of in aiosqlite's thread; None on
        PostgreSQL and SQLite in memory, and when it cannot be opened (the caller reads as before).

        Through aiosqlite a read costs more than the read: the connection's thread takes the interpreter
        back after every row SQLite steps to, while the event loop holds it, and each of those handoffs
        is a pair of context switches (72 per re-sent push of 100 alerts through `serve` with four
        senders, against one or two read here), with the event loop idle while they queue (the A/B
        through `serve` is in tests/bench/results/history/ingest.md).

        It never waits: no busy timeout (a reader of a WAL store waits for nobody but a recovery, and
        then the read goes to the pool, which may), and no write (`query_only`). Its statement's read
        ends when its rows are fetched, so it never holds a snapshot that a checkpoint must wait for."""
        if self._loop_reader is None:
            where = self.sqlite_file
            if where is None:
                return None
            try:  # mode=rw: never create an empty file where the store should be
                connection = sqlite3.connect(
                    f"{where.resolve().as_uri()}?mode=rw",
                    uri=True,
                    timeout=0,
                    isolation_level=None,
                    check_same_thread=False,
                )
                connection.execute("PRAGMA query_only=ON")
            except sqlite3.Error as error:
                log.debug("no SQLite reader of the event loop's own (reads go to the pool): %s", error)
                return None
            self._loop_reader = connection
        return self._loop_reader

    def run_now(self, read: Callable[[sqlite3.Connection], _T]) -> _T | None:
        """`read` on `read_now()`'s connection; None when there is none, or when the read fails in the
        driver (`read_now_failed`): the caller reads through the pool then. Any other error is raised."""
        connection = self.read_now()
        if connection is None:
            return None
        try:
            return read(connection)
        except sqlite3.Error as error:
            self.read_now_failed(error)
            return None

    def read_now_failed(self, error: sqlite3.Error) -> None:
        """A read on `read_now()`'s connection failed: the caller reads through the pool instead (which
        reports a store that is really failing). A busy store keeps the connection; anything else
        closes it, to be opened again at the next read."""
        log.debug("event loop's SQLite read failed, read through the pool instead: %s", error)
        if (getattr(error, "sqlite_errorcode", 0) & 0xFF) in _BUSY_CODES:  # the primary code of an extended one
            return
        self._close_loop_reader()

    def _close_loop_reader(self) -> None:
        if self._loop_reader is not None:
            with contextlib.suppress(sqlite3.Error):
                self._loop_reader.close()
            self._loop_reader = None

    async def dispose(self) -> None:
        self._close_loop_reader()
        await self.engine.dispose()


# What asyncpg raises for a store that failed (a connection lost, a server's error, a timeout).
_DRIVER_ERRORS = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.InternalClientError,
    OSError,
    TimeoutError,
)

_BUSY_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})

# and what a URL's options cause: asyncpg refuses an unknown one with TypeError, a bad value with ValueError
_PROBE_ERRORS: tuple[type[Exception], ...] = (*STORE_ERRORS, ValueError, TypeError)


def _missing_folder(url: str) -> Path | None:
    """The directory a SQLite file would be created in, when it does not exist (SQLite only says
    "unable to open database file")."""
    parsed = make_url(url)
    where = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or not where or where == ":memory:" or where.startswith("file:"):
        return None
    folder = Path(where).expanduser().resolve().parent
    return None if folder.is_dir() else folder


async def probe(url: str, *, within: float = 10.0) -> str | None:
    """None when the store at `url` answers a query; else why not, in one line, for an operator who
    must fix the setting or start the database (`serve` and `db upgrade` check before they start)."""
    folder = await asyncio.to_thread(_missing_folder, url)
    if folder is not None:
        return f"the directory {folder} of the SQLite file does not exist"
    db = Database(url, pool_size=1)
    try:
        async with asyncio.timeout(within), db.engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
    except TimeoutError:
        return f"no answer within {within:.0f}s"
    except _PROBE_ERRORS as error:
        cause = getattr(error, "orig", None) or error
        return describe_error(cause)
    finally:
        await db.dispose()
    return None


def json_dumps(value: Any) -> str:
    """orjson for JSON columns (both ways): labels and annotations are serialised for every stored alert
    and read back by every engine pass and every comparison of a re-sent alert."""
    return orjson.dumps(value).decode()


SHARED_MAX = 128  # longer string values are kept as read: a shared copy of them is rarely found


def json_loads(text: str | bytes) -> Any:
    """orjson for JSON columns, with the short string values of an object shared between rows
    (`shared_values`). Nested values (summaries, messages) are left as read."""
    value = orjson.loads(text)
    return shared_values(value) if type(value) is dict else value


def shared_values(labels: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `labels` whose short string values are the one copy of that string in the process.

    A live alert's labels are read as one JSON object per row (or per alert of a webhook), and every
    JSON parser makes a new string for every value, though most values repeat across a fleet (`job`,
    `severity`, `modelName`, `region`, the node's name on each of its GPUs' alerts). The engine keeps
    every live alert's labels, so with 100,000 alerts those copies were the largest thing `serve`
    held. Shared through `sys.intern`: a string is kept only while something refers to it; keys are
    shared by orjson itself. A new dict rather than values replaced in place: orjson's dicts carry
    spare room, and the copies the engine makes of labels keep the size of their source's table.
    Only exact `str` values are shared (`sys.intern` refuses subclasses).
    """
    intern = sys.intern
    return {k: intern(v) if type(v) is str and len(v) <= SHARED_MAX else v for k, v in labels.items()}

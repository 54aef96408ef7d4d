"""What every pooled connection is set up with and checked for: SQLite's pragmas and its skipped idle
rollbacks, PostgreSQL's liveness check when a connection is taken from the pool."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from sqlalchemy import event, exc
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import ConnectionPoolEntry

__all__ = ["AUTO_CHECKPOINT_PAGES", "PING_IDLE", "check_on_checkout", "install_sqlite_pragmas", "skip_idle_rollbacks"]


# SQLite's automatic checkpoint copies the log into the database file inside the commit after which the
# log holds this many pages. `serve` checkpoints every second off the commits' path
# (alertrouter/process/checkpoints.py): this mark (ten times SQLite's default, 40 MiB with 4 KiB pages) only
# bounds the log should that stop.
AUTO_CHECKPOINT_PAGES = 10_000


def install_sqlite_pragmas(engine: AsyncEngine, synchronous: str, busy_timeout: float) -> None:
    if synchronous not in ("FULL", "NORMAL"):
        raise ValueError(f"sqlite synchronous must be FULL or NORMAL, not {synchronous!r}")

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.execute(f"PRAGMA wal_autocheckpoint={AUTO_CHECKPOINT_PAGES}")
        cursor.execute("PRAGMA foreign_keys=ON")
        # Waiting for a lock must end before the ingest deadline does, so a locked store answers 503 in time.
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        cursor.close()


PING_IDLE = 1.0  # seconds: a PostgreSQL connection idle longer than this is pinged when taken from the pool


def check_on_checkout(engine: AsyncEngine, idle: float) -> None:
    """PostgreSQL: a connection taken from the pool is known to be alive, at the cost of a ping only
    when it has been idle for `idle` seconds.

    SQLAlchemy's `pool_pre_ping` pings at every checkout; asyncpg's adapter pings in a transaction of
    its own (BEGIN, the ping, ROLLBACK): three round trips per transaction, each a wake-up of the event
    loop. A connection the server closed (a restart, an
    administrator's `pg_terminate_backend`) is known closed without a round trip, since asyncpg sees
    the socket close; what needs the ping is one whose peer vanished without a word (a proxy or a
    network that dropped an idle connection), and that happens to connections left idle, which are
    the ones pinged. A connection that dies in the second between two uses fails its statement, which
    is answered like any store error (ingest: 503, and Alertmanager retries), and SQLAlchemy then
    replaces every connection the pool held."""

    @event.listens_for(engine.sync_engine, "checkin")
    def _checked_in(_dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine.sync_engine, "checkout")
    def _checked_out(dbapi_connection: Any, record: ConnectionPoolEntry, _proxy: Any) -> None:
        if dbapi_connection.driver_connection.is_closed():
            raise exc.DisconnectionError("the server closed the connection")
        since = record.info.pop("idle_since", None)  # None: new, just connected
        if since is not None and time.monotonic() - since > idle:
            try:
                dbapi_connection.ping()
            except Exception as error:
                raise exc.DisconnectionError(f"ping failed: {error}") from error


def skip_idle_rollbacks(engine: AsyncEngine) -> None:
    """SQLite: a rollback of a connection with no transaction open is not sent to the connection's thread.

    A session rolls back when it closes and the pool once more when it takes the connection back, even
    after a commit: a read cost two trips to aiosqlite's thread that did nothing (Python's sqlite3 only
    sends ROLLBACK when a transaction is open, and a SELECT outside one opens none), each a wake-up of
    that thread and of the event loop, for every read of a push re-confirming what is stored. The same
    check, made before the trip instead of in it."""
    dialect = engine.sync_engine.dialect
    rollback = dialect.do_rollback

    def do_rollback(dbapi_connection: Any) -> None:
        driver = getattr(dbapi_connection, "driver_connection", None)
        try:
            idle = driver is not None and not driver.in_transaction
        except (ValueError, sqlite3.Error):  # a closed connection: the driver says so, as before
            idle = False
        if not idle:
            rollback(dbapi_connection)

    dialect.do_rollback = do_rollback  # type: ignore[method-assign]

"""An engine pass's reads outside a session: on SQLite on the event loop's own connection
(`Database.read_now`), on PostgreSQL on one driver connection (`Database.read_driver`), through `QuickReads`.

An incremental pass reads five small things before it evaluates: where the change cursor stands,
which alerts changed since the last one, their rows, the silences and the acknowledged incidents.
Through a session each is a statement in aiosqlite's thread, and every statement is several trips
there and back (a cursor opened, run, fetched, closed), each a wake-up of a thread and of the event
loop, many times what SQLite takes to run the statement, and a large share of a small pass. Here each is one statement
whose rows come back as one JSON document in one step (`keyed.select_where_now`). On PostgreSQL a
session adds a BEGIN and a ROLLBACK round trip and SQLAlchemy's execution around every statement;
here each read is one round trip of asyncpg's, all of a pass's on one connection taken from the pool
once (a connection idle for a second is pinged when taken: `connections.check_on_checkout`).

These reads agree with one another no more and no less than the session's did: Python's `sqlite3`
opens no transaction for a read, and a PostgreSQL session reads in READ COMMITTED, so there too each
statement was its own snapshot. The cursor is read first, so that every change below it is in the
reads after it (`incidents.change_cursor`).

On SQLite each function returns None when it cannot read here (`Database.run_now`: SQLite in memory,
a busy or failing store): the caller reads through its session, as before, which waits as it may and
reports a store that really fails. On PostgreSQL the driver's failure raises as a session's would
(`Database.read_driver`). A row that cannot be decoded raises as the session's read would.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Mapping
from datetime import datetime
from typing import Any

from alertrouter.pipeline.silence import Silence
from alertrouter.pipeline.types import LiveAlert
from alertrouter.store import keyed
from alertrouter.store.db import Database
from alertrouter.store.handles import alerts_t, change_counter_t, incidents_t, silences_t
from alertrouter.store.incidents import PG_CURSOR, QUARANTINED
from alertrouter.store.live_rows import LIVE_STATE, LoadedAlert, merged, unheld
from alertrouter.store.sqlvalues import naive_utc, sqlite_datetime

__all__ = ["QuickReads", "acknowledged_now", "live_changes_now", "quick_reads", "silences_now"]

# Conditions written once for both stores, with SQLite's `?` (`keyed.select_where_driver` numbers them).
_CHANGES = "(decision IS NULL OR decision != ?) AND change_seq >= ?"  # load_live_alerts's, by the change cursor
# acknowledged_keys's: the partial index of acknowledged incidents answers it (tests/store/test_reads_now.py)
_ACKNOWLEDGED = (
    "acknowledged_at IS NOT NULL AND status IN ('firing', 'resolved') AND (status = 'firing' OR updated_at >= ?)"
)


def live_changes_now(
    db: Database,
    *,
    since: int,
    known: Mapping[str, datetime],
    inserted: Mapping[str, tuple[LiveAlert, datetime]],
    held: Mapping[str, LiveAlert],
) -> tuple[list[LoadedAlert], int] | None:
    """`incidents.load_live_alerts` from the change cursor `since`, with what the caller holds."""

    def read(connection: sqlite3.Connection) -> tuple[list[LoadedAlert], int]:
        ((value,),) = keyed.select_where_now(connection, change_counter_t, ("value",), "id = 1", ())
        stamps = keyed.select_where_now(
            connection, alerts_t, ("fingerprint", "updated_at"), _CHANGES, (QUARANTINED, since)
        )
        out, unread, again = unheld(stamps, known, inserted, held)
        rows = keyed.select_in_now(
            connection, alerts_t, ("fingerprint", "labels", *LIVE_STATE), key="fingerprint", values=unread
        )
        states = keyed.select_in_now(
            connection, alerts_t, ("fingerprint", *LIVE_STATE), key="fingerprint", values=again
        )
        return merged(out, rows, states, held), int(value or 0) + 1

    return db.run_now(read)


def silences_now(db: Database, *, now: datetime) -> list[Silence] | None:
    """`incidents.load_silences`: the silences in force now or later."""
    rows = db.run_now(
        lambda connection: keyed.select_where_now(
            connection, silences_t, _SILENCE, "ends_at > ?", (sqlite_datetime(now),)
        )
    )
    return None if rows is None else _silences(rows)


_SILENCE = ("id", "matchers", "starts_at", "ends_at")


def _silences(rows: list[tuple[Any, ...]]) -> list[Silence]:
    return [Silence.parse(id_, matchers, starts_at, ends_at) for id_, matchers, starts_at, ends_at in sorted(rows)]


def acknowledged_now(db: Database, *, resolved_since: datetime) -> set[str] | None:
    """`incidents.load_acknowledged`: the keys of the acknowledged incidents the engine holds."""
    rows = db.run_now(
        lambda connection: keyed.select_where_now(
            connection, incidents_t, ("key",), _ACKNOWLEDGED, (sqlite_datetime(resolved_since),)
        )
    )
    return None if rows is None else {key for (key,) in rows}


class QuickReads:
    """A pass's reads outside its session (`quick_reads`); a read that returns None is to be read through
    the session instead."""

    def __init__(self, db: Database, driver: Any = None) -> None:
        self._db = db
        self._driver = driver  # PostgreSQL: asyncpg's connection

    async def live_changes(
        self,
        *,
        since: int,
        known: Mapping[str, datetime],
        inserted: Mapping[str, tuple[LiveAlert, datetime]],
        held: Mapping[str, LiveAlert],
    ) -> tuple[list[LoadedAlert], int] | None:
        """`incidents.load_live_alerts` from the change cursor `since`, with what the caller holds."""
        if self._driver is None:
            return live_changes_now(self._db, since=since, known=known, inserted=inserted, held=held)
        driver = self._driver
        cursor = await driver.fetchval(PG_CURSOR)
        stamps = await keyed.select_where_driver(
            driver, alerts_t, ("fingerprint", "updated_at"), _CHANGES, (QUARANTINED, since)
        )
        out, unread, again = unheld(stamps, known, inserted, held)
        rows = await keyed.select_in_driver(
            driver, alerts_t, ("fingerprint", "labels", *LIVE_STATE), key="fingerprint", values=unread
        )
        states = await keyed.select_in_driver(
            driver, alerts_t, ("fingerprint", *LIVE_STATE), key="fingerprint", values=again
        )
        return merged(out, rows, states, held), int(cursor or 0)

    async def silences(self, *, now: datetime) -> list[Silence] | None:
        """`incidents.load_silences`: the silences in force now or later."""
        if self._driver is None:
            return silences_now(self._db, now=now)
        rows = await keyed.select_where_driver(self._driver, silences_t, _SILENCE, "ends_at > ?", (naive_utc(now),))
        return _silences(rows)

    async def acknowledged(self, *, resolved_since: datetime) -> set[str] | None:
        """`incidents.load_acknowledged`: the keys of the acknowledged incidents the engine holds."""
        if self._driver is None:
            return acknowledged_now(self._db, resolved_since=resolved_since)
        rows = await keyed.select_where_driver(
            self._driver, incidents_t, ("key",), _ACKNOWLEDGED, (naive_utc(resolved_since),)
        )
        return {key for (key,) in rows}


@contextlib.asynccontextmanager
async def quick_reads(db: Database) -> AsyncIterator[QuickReads]:
    """A pass's `QuickReads`: on PostgreSQL with one driver connection for all of them, given back at the end."""
    if db.is_sqlite:
        yield QuickReads(db)
        return
    async with db.read_driver() as driver:
        yield QuickReads(db, driver)

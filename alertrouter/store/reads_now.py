"""An engine pass's reads on SQLite, run on the event loop's own connection (`Database.read_now`).

An incremental pass reads five small things before it evaluates: where the change cursor stands,
which alerts changed since the last one, their rows, the silences and the acknowledged incidents.
Through a session each is a statement in aiosqlite's thread, and every statement is several trips
there and back (a cursor opened, run, fetched, closed), each a wake-up of a thread and of the event
loop: about 0.4 ms for a statement that SQLite runs in 5 us on an idle two-core machine, and 0.9 to
1.6 ms each in a pass at 108,000 live alerts, 5.9 ms of a 21-23 ms pass. Here each is one statement
whose rows come back as one JSON document in one step (`keyed.select_where_now`).

These reads agree with one another no more and no less than the session's did: Python's `sqlite3`
opens no transaction for a read, so there too each statement was its own snapshot. The cursor is
read first, so that every change below it is in the reads after it (`incidents.change_cursor`).

Each function returns None when it cannot read here (`Database.run_now`: PostgreSQL, SQLite in memory,
a busy or failing store): the caller reads through its session, as before, which waits as it may and reports a store
that really fails. A row that cannot be decoded raises as the session's read would.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from datetime import datetime

from alertrouter.pipeline.silence import Silence
from alertrouter.pipeline.types import LiveAlert
from alertrouter.store import keyed
from alertrouter.store.bulk import sqlite_datetime
from alertrouter.store.db import Database
from alertrouter.store.handles import alerts_t, change_counter_t, incidents_t, silences_t
from alertrouter.store.incidents import LIVE_STATE, QUARANTINED, LoadedAlert, loaded, unheld

__all__ = ["acknowledged_now", "live_changes_now", "silences_now"]

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
        # What changes a live alert is its state; its labels (the largest column) are the held ones.
        rows += [(fp, held[fp].labels, *rest) for fp, *rest in states]
        rows.sort()  # in fingerprint order, as the session's read gives them (fingerprints are unique)
        return loaded(out, rows), int(value or 0) + 1

    return db.run_now(read)


def silences_now(db: Database, *, now: datetime) -> list[Silence] | None:
    """`incidents.load_silences`: the silences in force now or later."""
    columns = ("id", "matchers", "starts_at", "ends_at")
    rows = db.run_now(
        lambda connection: keyed.select_where_now(
            connection, silences_t, columns, "ends_at > ?", (sqlite_datetime(now),)
        )
    )
    if rows is None:
        return None
    return [Silence.parse(id_, matchers, starts_at, ends_at) for id_, matchers, starts_at, ends_at in sorted(rows)]


def acknowledged_now(db: Database, *, resolved_since: datetime) -> set[str] | None:
    """`incidents.load_acknowledged`: the keys of the acknowledged incidents the engine holds."""
    rows = db.run_now(
        lambda connection: keyed.select_where_now(
            connection, incidents_t, ("key",), _ACKNOWLEDGED, (sqlite_datetime(resolved_since),)
        )
    )
    return None if rows is None else {key for (key,) in rows}

"""The engine's read of changed alerts against SQLite and PostgreSQL: what it already holds unchanged
is left out, so the overlap window after a burst does not re-read (and re-decode) thousands of alerts."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from alertrouter.store import Database, bulk
from alertrouter.store.alerts import alerts_t
from alertrouter.store.engine import load_live_alerts
from support.rows import T0, alert


async def changed(db: Database, known: Mapping[str, datetime] | None) -> list[str]:
    async with db.read() as s:
        rows = await load_live_alerts(
            s, changed_since=T0 - timedelta(seconds=30), resolved_since=T0 - timedelta(hours=1), known=known
        )
    return sorted(live.fingerprint for live, _, _, _ in rows)


async def test_alerts_held_unchanged_are_left_out(db: Database) -> None:
    a, b, c = "a" * 16, "b" * 16, "c" * 16
    async with db.write() as s:
        await bulk.insert(s, alerts_t, [alert(a), alert(b), alert(c)])
        await s.commit()
    assert await changed(db, None) == [a, b, c]  # no memory: everything in the window
    assert await changed(db, {a: T0, b: T0}) == [c]  # c is new to the caller
    assert await changed(db, {a: T0, b: T0, c: T0}) == []

    later = T0 + timedelta(seconds=1)
    async with db.write() as s:
        await bulk.update(
            s, alerts_t, [{"fingerprint": b, "status": "resolved", "updated_at": later}], key=["fingerprint"]
        )
        await s.commit()
    assert await changed(db, {a: T0, b: T0, c: T0}) == [b]
    assert await changed(db, {a: T0, b: later, c: T0}) == []

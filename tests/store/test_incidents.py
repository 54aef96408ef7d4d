"""The engine's read of changed alerts against SQLite and PostgreSQL: what it already holds unchanged
is left out, so the overlap window after a burst does not re-read (and re-decode) thousands of alerts."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from alertrouter.labelset import LabelSet
from alertrouter.pipeline.types import LiveAlert
from alertrouter.store import Database, bulk
from alertrouter.store.alerts import insert_new
from alertrouter.store.handles import alerts_t
from alertrouter.store.incidents import load_live_alerts
from support.rows import T0, alert


async def changed(db: Database, known: Mapping[str, datetime] | None) -> list[str]:
    async with db.read() as s:
        rows, _ = await load_live_alerts(s, since=0, resolved_since=T0 - timedelta(hours=1), known=known)
    return sorted(live.fingerprint for live, *_ in rows)


async def test_alerts_held_unchanged_are_left_out(db: Database) -> None:
    a, b, c = "a" * 16, "b" * 16, "c" * 16
    async with db.write() as s:
        await insert_new(s, [alert(a), alert(b), alert(c)], [], [])
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


async def test_alerts_this_process_inserted_are_taken_from_the_handoff_while_unchanged(db: Database) -> None:
    a, b = "a" * 16, "b" * 16
    async with db.write() as s:
        await insert_new(s, [alert(a), alert(b)], [], [])
        await s.commit()
    # What ingest handed over: marked so that it can be told apart from what the store holds.
    handed = {fp: (LiveAlert(fp, {"alertname": "FromHandoff"}, True, T0, T0), T0) for fp in (a, b)}
    async with db.write() as s:  # b changed after the handoff: its row is read
        await bulk.update(
            s, alerts_t, [{"fingerprint": b, "updated_at": T0 + timedelta(seconds=1)}], key=["fingerprint"]
        )
        await s.commit()
    async with db.read() as s:
        rows, _ = await load_live_alerts(
            s,
            since=0,
            resolved_since=T0 - timedelta(hours=1),
            known={},
            inserted=handed,
        )
    got = {live.fingerprint: (live.labels["alertname"], decision) for live, _, decision, *_ in rows}
    assert got == {a: ("FromHandoff", None), b: ("GPUHighTemp", None)}


async def test_a_held_alert_that_changed_keeps_the_labels_it_is_held_with(db: Database) -> None:
    a, b = "a" * 16, "b" * 16
    async with db.write() as s:
        await insert_new(s, [alert(a), alert(b)], [], [])
        await s.commit()
    held = LiveAlert(a, LabelSet({"alertname": "AsHeld"}), True, T0, T0)  # marked: told apart from the row's
    later = T0 + timedelta(seconds=1)
    async with db.write() as s:  # both change; a is held by the caller, b is not
        rows = [{"fingerprint": fp, "status": "resolved", "ends_at": later, "updated_at": later} for fp in (a, b)]
        await bulk.update(s, alerts_t, rows, key=["fingerprint"])
        await s.commit()
    async with db.read() as s:
        loaded, _ = await load_live_alerts(
            s, since=0, resolved_since=T0 - timedelta(hours=1), known={a: T0, b: T0}, held={a: held}
        )
    got = {live.fingerprint: live for live, *_ in loaded}
    assert sorted(got) == [a, b]  # in fingerprint order, as one read gives them
    assert [live.fingerprint for live, *_ in loaded] == [a, b]
    assert got[a].labels is held.labels  # not read and decoded again
    assert (got[a].firing, got[a].ends_at) == (False, later)  # its state is the row's
    assert got[b].labels["alertname"] == "GPUHighTemp"  # not held: read from the store
    assert isinstance(got[b].labels, LabelSet)

"""An engine pass's reads outside its session (`store.reads_now.QuickReads`): on the event loop's own
SQLite connection, on one driver connection of PostgreSQL's. They must give exactly what the session's
reads give (the engine compares what it holds with them, and a difference would re-decide or miss
alerts), and a SQLite store they cannot read gives None (the session reads), not an error."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert

from alertrouter.labelset import LabelSet
from alertrouter.pipeline.types import LiveAlert
from alertrouter.store import Database, bulk
from alertrouter.store.alerts import insert_new
from alertrouter.store.handles import alerts_t, incidents_t, silences_t
from alertrouter.store.incidents import (
    change_cursor,
    load_acknowledged,
    load_live_alerts,
    load_silences,
    quarantine_alerts,
    save_decisions,
)
from alertrouter.store.reads_now import _ACKNOWLEDGED, acknowledged_now, live_changes_now, quick_reads, silences_now
from support.rows import T0, acknowledgement_cases, alert, incident

LATER = T0 + timedelta(seconds=1)
SINCE = T0 - timedelta(hours=1)  # resolved incidents the engine still holds: those changed since
FPS = [c * 16 for c in "abcdefg"]


async def both_reads(
    db: Database, since: int, known: dict[str, Any], inserted: dict[str, Any], held: dict[str, Any]
) -> tuple[Any, int, Any]:
    """The quick read, its cursor and the session's read, of the same changes. On
    PostgreSQL the cursor (the oldest transaction in progress in the whole cluster) may move between
    the two reads, and never back."""
    async with db.read() as s:
        expected = await load_live_alerts(
            s, since=since, resolved_since=T0 - timedelta(hours=1), known=known, inserted=inserted, held=held
        )
    async with quick_reads(db) as quick:
        now = await quick.live_changes(since=since, known=known, inserted=inserted, held=held)
    async with db.read() as s:
        after = await change_cursor(s)
    assert now is not None
    assert now[1] == expected[1] if db.is_sqlite else expected[1] <= now[1] <= after
    return now[0], now[1], expected[0]


async def test_changed_alerts_read_here_are_the_sessions_to_the_value(db: Database) -> None:
    a, b, c, d, e, f, g = FPS
    async with db.write() as s:
        await insert_new(s, [alert(fp, labels={**alert(fp)["labels"], "gpu": fp[0]}) for fp in FPS], [], [])
        await s.commit()
    # a held unchanged; b held and changed since; c changed and not held; d handed over by ingest, unchanged;
    # e quarantined; f decided, with a detail and an incident key; g resolved, with its end.
    held = {fp: LiveAlert(fp, LabelSet({"alertname": "AsHeld"}), True, T0, T0) for fp in (a, b)}
    handed = {d: (LiveAlert(d, {"alertname": "FromHandoff"}, True, T0, T0), T0)}
    async with db.write() as s:
        await bulk.update(
            s,
            alerts_t,
            [
                {"fingerprint": b, "status": "resolved", "ends_at": LATER, "updated_at": LATER},
                {"fingerprint": g, "status": "resolved", "ends_at": LATER, "updated_at": LATER},
            ],
            key=["fingerprint"],
        )
        await quarantine_alerts(s, {e: "boom"}, T0)
        detail = {"rule": "gpu-by-node", "labels": {"Hostname": "gpu-node-07"}, "why": ["ünï", None, 1.5]}
        decision = {"node": "gpu-node-07", "incident_key": "node/gpu-node-07/GPUHighTemp", "decided_at": T0}
        await save_decisions(s, [{"fingerprint": f, "decision": "notify", "decision_detail": detail, **decision}])
        await s.commit()
    now, cursor, expected = await both_reads(db, 0, {a: T0, b: T0}, handed, held)
    assert now == expected
    loaded = {live.fingerprint: (live, *rest) for live, *rest in now}
    assert sorted(loaded) == [b, c, d, f, g]  # the case each letter stands for is read, none lost
    assert loaded[b][0].labels is held[b].labels
    assert loaded[b][0].ends_at == LATER
    assert loaded[d][0].labels["alertname"] == "FromHandoff"
    assert loaded[f][2:] == ("notify", detail, "node/gpu-node-07/GPUHighTemp")
    assert [live.fingerprint for live, *_ in now] == [d, b, c, f, g]  # the handoff first, then in order

    # From the cursor of that read: only what changed after it, by both reads.
    known = {live.fingerprint: updated_at for live, updated_at, *_ in now} | {a: T0}
    async with db.write() as s:
        await bulk.update(s, alerts_t, [{"fingerprint": c, "updated_at": LATER}], key=["fingerprint"])
        await s.commit()
    now, after, expected = await both_reads(db, cursor, known, {}, {b: replace(held[b], firing=False)})
    assert now == expected
    assert [live.fingerprint for live, *_ in now] == [c]
    # SQLite's counter moves with each write; PostgreSQL's cursor only once no older transaction runs
    # anywhere in the cluster (other test sessions share it).
    assert after > cursor if db.is_sqlite else after >= cursor


async def test_silences_read_here_are_the_sessions(db: Database) -> None:
    def silence(id_: str, ends_at: Any, matchers: list[str]) -> dict[str, Any]:
        return {
            "id": id_,
            "matchers": matchers,
            "starts_at": T0 - timedelta(hours=1),
            "ends_at": ends_at,
            "created_by": "oncall",
            "comment": "maintenance",
            "created_at": T0 - timedelta(hours=1),
            "updated_at": T0 - timedelta(hours=1),
        }

    rows = [
        silence("b-later", T0 + timedelta(hours=2), ['Hostname="gpu-node-07"', 'gpu=~"[0-3]"']),
        silence("a-soon", T0 + timedelta(microseconds=1), ['alertname!="NodeDown"']),
        silence("c-at-the-edge", T0, ['Hostname="gpu-node-08"']),  # ends now: no longer in force
        silence("d-over", T0 - timedelta(minutes=1), ['Hostname="gpu-node-09"']),
    ]
    async with db.write() as s:
        await s.execute(insert(silences_t), rows)
        await s.commit()
    async with db.read() as s:
        expected = await load_silences(s, now=T0)
    async with quick_reads(db) as quick:
        now = await quick.silences(now=T0)
    assert now == expected
    assert [silence.id for silence in now] == ["a-soon", "b-later"]


async def test_acknowledgements_read_here_are_the_sessions_and_use_their_index(db: Database) -> None:
    rows, found = acknowledgement_cases(SINCE)
    rows += [incident(f"n{i}", "firing", T0, False) for i in range(200)]
    async with db.write() as s:
        await bulk.insert(s, incidents_t, rows)
        await s.commit()
    async with db.read() as s:
        expected = await load_acknowledged(s, resolved_since=SINCE)
    async with quick_reads(db) as quick:
        now = await quick.acknowledged(resolved_since=SINCE)
    assert now == expected == found
    if not db.is_sqlite:
        return
    connection = db.read_now()
    assert connection is not None
    explain = f"EXPLAIN QUERY PLAN SELECT key FROM incidents WHERE {_ACKNOWLEDGED}"  # noqa: S608 (the module's own)
    plan = connection.execute(explain, ("x",)).fetchall()
    assert any("USING INDEX ix_incidents_acknowledged" in row[-1] for row in plan), plan


async def test_a_store_that_cannot_be_read_here_gives_none(tmp_path: Path) -> None:
    memory = Database("sqlite+aiosqlite:///:memory:")
    elsewhere = tmp_path / "no-tables.db"
    sqlite3.connect(elsewhere).close()  # a file without the schema: every statement fails
    broken = Database(f"sqlite+aiosqlite:///{elsewhere}")
    try:
        for db in (memory, broken):
            assert live_changes_now(db, since=0, known={}, inserted={}, held={}) is None
            assert silences_now(db, now=T0) is None
            assert acknowledged_now(db, resolved_since=SINCE) is None
        assert broken._loop_reader is None  # not kept after a failure that is not "busy"
    finally:
        await memory.dispose()
        await broken.dispose()

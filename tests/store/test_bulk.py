"""Driver-level bulk writes (alertrouter.store.bulk) against SQLite and PostgreSQL: what they store must
be exactly what SQLAlchemy itself stores, since everything else reads those rows through SQLAlchemy."""

from __future__ import annotations

import sqlite3
from datetime import timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import JSON, Column, Integer, MetaData, Table, exc, select, text
from sqlalchemy import insert as sa_insert

from alertrouter.store import Database, bulk, is_outage
from alertrouter.store.handles import alerts_t, episodes_t, events_t, raw_events_t
from alertrouter.store.migrate import upgrade
from support.integrity import dangling_history
from support.rows import T0, alert


async def stored(db: Database, fp: str) -> dict[str, Any]:
    async with db.read() as s:
        row = (await s.execute(select(alerts_t).where(alerts_t.c.fingerprint == fp))).mappings().one()
        # change_seq is the database's own (a counter on SQLite): not something a writer stores
        return {k: v for k, v in row.items() if k not in ("fingerprint", "change_seq")}


async def test_insert_stores_what_sqlalchemy_stores(db: Database) -> None:
    # A zone other than UTC and a None JSON value: both must end up as SQLAlchemy would store them.
    east = timezone(timedelta(hours=8))
    odd = {"ends_at": (T0 + timedelta(hours=1)).astimezone(east), "decision_detail": None}
    async with db.write() as s:
        await s.execute(sa_insert(alerts_t), [alert("a" * 16, **odd)])
        assert await bulk.insert(s, alerts_t, [alert("b" * 16, **odd)]) == 1
        await s.commit()
    assert await stored(db, "b" * 16) == await stored(db, "a" * 16)
    async with db.read() as s:
        # same text on SQLite, same values on PostgreSQL: comparisons in SQL agree too
        columns = "starts_at, ends_at, first_seen, labels, decision_detail"
        raw = (await s.execute(text(f"SELECT {columns} FROM alerts ORDER BY fingerprint"))).all()  # noqa: S608
        assert raw[0] == raw[1]
        later = await s.scalar(select(alerts_t.c.fingerprint).where(alerts_t.c.ends_at > T0 + timedelta(minutes=59)))
        assert later is not None


async def test_conflicts_are_skipped_or_overwritten_and_counted(db: Database) -> None:
    async with db.write() as s:
        assert await bulk.insert(s, alerts_t, [alert("a" * 16), alert("b" * 16)]) == 2
        again = [alert("b" * 16, status="resolved"), alert("c" * 16)]
        assert await bulk.insert(s, alerts_t, again, on_conflict_do_nothing=["fingerprint"]) == 1
        await s.commit()
    assert (await stored(db, "b" * 16))["status"] == "firing"  # skipped, not overwritten
    async with db.write() as s:
        newer = alert("b" * 16, status="resolved", annotations={"summary": "cool again"})
        await bulk.insert(s, alerts_t, [newer], on_conflict_do_update=["fingerprint"])
        await s.commit()
    row = await stored(db, "b" * 16)
    assert (row["status"], row["annotations"]) == ("resolved", {"summary": "cool again"})


async def test_a_refused_row_is_raised_as_sqlalchemy_raises_it(db: Database) -> None:
    # The writer tells a row the store refuses (that payload alone fails) from a store that failed
    # (503 for everyone) by SQLAlchemy's exception classes, whichever way a statement was run.
    async with db.write() as s:
        await bulk.insert(s, alerts_t, [alert("a" * 16)])
        with pytest.raises(exc.IntegrityError) as refused:
            await bulk.insert(s, alerts_t, [alert("b" * 16), alert("a" * 16)])
        await s.rollback()
    assert not is_outage(refused.value)


async def test_a_locked_sqlite_store_is_raised_as_an_outage(tmp_path: Path) -> None:
    # Another process holds SQLite's write lock past the busy timeout: the store failed (503, retried),
    # not this payload; bulk's statements run on the driver itself, and must say so as SQLAlchemy would.
    url = f"sqlite+aiosqlite:///{tmp_path / 'alertrouter.db'}"
    upgrade(url)
    db = Database(url, busy_timeout=0.05)
    other = sqlite3.connect(tmp_path / "alertrouter.db", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        async with db.write() as s:
            with pytest.raises(exc.OperationalError) as failed:
                await bulk.insert(s, alerts_t, [alert("a" * 16)])
            await s.rollback()
        assert is_outage(failed.value)
    finally:
        other.close()
        await db.dispose()


async def test_sqlite_rows_run_in_the_sessions_own_transaction(tmp_path: Path) -> None:
    # The change counter is drawn so (`alerts.with_change_seq`): the draw must be part of the
    # transaction that writes the rows, undone with it, and give the value it set.
    url = f"sqlite+aiosqlite:///{tmp_path / 'alertrouter.db'}"
    upgrade(url)
    db = Database(url)
    draw = "UPDATE alert_change_counter SET value = value + 1 WHERE id = 1 RETURNING value"
    try:
        async with db.write() as s:
            assert await bulk.sqlite_rows(s, draw) == [(1,)]
            assert await bulk.sqlite_rows(s, draw) == [(2,)]
            await bulk.insert(s, alerts_t, [alert("a" * 16)])
            await s.rollback()
        async with db.write() as s:
            assert await bulk.sqlite_rows(s, "SELECT fingerprint FROM alerts") == []
            assert await bulk.sqlite_rows(s, draw) == [(1,)]  # the rolled-back draws are undone
            assert await bulk.sqlite_rows(s, "SELECT value FROM alert_change_counter WHERE id = ?", [1]) == [(1,)]
            await s.commit()
        async with db.read() as s:
            assert await s.scalar(text("SELECT value FROM alert_change_counter")) == 1
    finally:
        await db.dispose()


def raw(digest: str, body: str = '{"alerts": []}') -> dict[str, Any]:
    return {
        "digest": digest,
        "received_at": T0.astimezone(timezone(timedelta(hours=8))),
        "source": "webhook",
        "receiver": "oncall",
        "group_key": None,
        "status": "firing",
        "external_url": "http://am:9093",
        "alert_count": 2,
        "truncated_alerts": 0,
        "rejected_alerts": 0,
        "body": body,
    }


async def test_insert_returning_gives_the_rows_written_and_stores_what_sqlalchemy_stores(db: Database) -> None:
    async with db.write() as s:
        await s.execute(sa_insert(raw_events_t), [raw("a" * 64)])
        written = await bulk.insert_returning(
            s,
            raw_events_t,
            [raw("a" * 64), raw("b" * 64), raw("c" * 64)],
            on_conflict_do_nothing=["digest"],
            returning=["digest", "id"],
        )
        await s.commit()
    async with db.read() as s:
        stored = {r.digest: r for r in (await s.execute(select(raw_events_t))).all()}
    assert sorted(written) == [("b" * 64, stored["b" * 64].id), ("c" * 64, stored["c" * 64].id)]
    assert len(stored) == 3
    columns = [c.name for c in raw_events_t.c if c.name not in ("id", "digest")]
    assert [getattr(stored["b" * 64], c) for c in columns] == [getattr(stored["a" * 64], c) for c in columns]
    async with db.read() as s:  # the same text as SQLAlchemy's in the database itself, not only once read
        texts = (await s.execute(text("SELECT DISTINCT CAST(received_at AS TEXT) FROM raw_events"))).all()
    assert len(texts) == 1


async def test_update_by_composite_key_touches_only_matching_rows(db: Database) -> None:
    fp = "e" * 16
    episode = {"fingerprint": fp, "ends_at": None, "resolved_by": None, "opened_at": T0, "closed_at": None}
    async with db.write() as s:
        await bulk.insert(s, alerts_t, [alert(fp)])
        await bulk.insert(s, episodes_t, [{**episode, "starts_at": T0}, {**episode, "starts_at": T0 + timedelta(1)}])
        closed = T0 + timedelta(minutes=30)
        await bulk.update(
            s,
            episodes_t,
            # the key's instant given in another zone still names the row
            [
                {
                    "fingerprint": fp,
                    "starts_at": T0.astimezone(timezone(timedelta(hours=-5))),
                    "ends_at": closed,
                    "resolved_by": "source",
                    "closed_at": closed,
                }
            ],
            key=["fingerprint", "starts_at"],
        )
        await s.commit()
    async with db.read() as s:
        rows = (await s.execute(select(episodes_t).order_by(episodes_t.c.starts_at))).mappings().all()
    assert [(r["ends_at"], r["resolved_by"]) for r in rows] == [(closed, "source"), (None, None)]


async def test_events_keep_their_json_detail_and_null(db: Database) -> None:
    fp = "f" * 16
    base = {"fingerprint": fp, "kind": "decision", "at": T0, "episode_starts_at": T0, "raw_event_id": None}
    async with db.write() as s:
        await bulk.insert(s, alerts_t, [alert(fp)])
        await bulk.insert(
            s, events_t, [{**base, "detail": {"decision": "inhibited", "n": [1, 2]}}, {**base, "detail": None}]
        )
        await s.commit()
    async with db.read() as s:
        details = (await s.scalars(select(events_t.c.detail).order_by(events_t.c.id))).all()
    assert details == [{"decision": "inhibited", "n": [1, 2]}, None]


# What a stored payload holds that JSON escapes, or that a server could mangle on the way: quotes and
# backslashes (a payload is JSON text itself), control characters, line and paragraph separators,
# Chinese, a character outside the BMP; and one long enough to be compressed by the store.
AWKWARD = '{"annotations": {"summary": "GPU 3 \\"hot\\"\\n\u2028\u2029 温度过高 \U0001f525", "tab": "\t"}}'


async def test_a_payload_travels_apart_from_the_rows_and_is_stored_as_given(db: Database) -> None:
    # raw_events.body is sent beside the rows' JSON document on PostgreSQL (`info={"bulk": "apart"}`):
    # each row must get its own payload back, alone, after other parts of one statement, and in an update.
    bodies = {"a" * 64: AWKWARD, "b" * 64: AWKWARD * 2_000, "c" * 64: ""}
    async with db.write() as s:
        written = await bulk.insert_returning(
            s,
            raw_events_t,
            [raw(d, b) for d, b in bodies.items()],
            on_conflict_do_nothing=["digest"],
            returning=["digest"],
        )
        counts = await bulk.insert_together(
            s,
            [
                (alerts_t, [alert("e" * 16)], ["fingerprint"]),
                (raw_events_t, [raw("d" * 64, AWKWARD + "d"), raw("a" * 64, "not written")], ["digest"]),
            ],
        )
        await s.commit()
    assert sorted(written) == [(d,) for d in sorted(bodies)]
    assert counts == [1, 1]
    bodies["d" * 64] = AWKWARD + "d"
    async with db.read() as s:
        stored = dict((await s.execute(select(raw_events_t.c.digest, raw_events_t.c.body))).all())
    assert stored == bodies
    async with db.write() as s:
        await bulk.update(s, raw_events_t, [{"digest": "c" * 64, "body": AWKWARD, "alert_count": 7}], key=["digest"])
        await s.commit()
    async with db.read() as s:
        row = (await s.execute(select(raw_events_t).where(raw_events_t.c.digest == "c" * 64))).one()
    assert (row.body, row.alert_count) == (AWKWARD, 7)


def test_only_a_plain_column_can_travel_apart() -> None:
    table = Table("apart_probe", MetaData(), Column("id", Integer), Column("doc", JSON, info={"bulk": "apart"}))
    with pytest.raises(ValueError, match=r"apart_probe\.doc: only a plain column"):
        bulk._shape("postgresql", table, ("id", "doc"), (), None, False)


async def test_refuses_unknown_columns_and_naive_datetimes(db: Database) -> None:
    async with db.write() as s:
        with pytest.raises(ValueError, match="no column"):
            await bulk.insert(s, alerts_t, [{**alert("a" * 16), "nonsense": 1}])
        with pytest.raises(ValueError, match="naive datetime"):
            await bulk.insert(s, alerts_t, [alert("a" * 16, first_seen=T0.replace(tzinfo=None))])
        await s.rollback()


async def test_insert_together_writes_each_part_as_insert_does_and_counts_each(db: Database) -> None:
    fp_old, fp_new = "a" * 16, "b" * 16
    async with db.write() as s:
        await bulk.insert(s, alerts_t, [alert(fp_old)])
        await s.commit()
    episode = {"starts_at": T0, "ends_at": None, "resolved_by": None, "opened_at": T0, "closed_at": None}
    event = {"kind": "new_firing", "at": T0, "episode_starts_at": T0, "raw_event_id": None}
    async with db.write() as s:
        counts = await bulk.insert_together(
            s,
            [
                # the stored alert is skipped; the new one's episode and event refer to it in the same call
                (alerts_t, [alert(fp_old, status="resolved"), alert(fp_new)], ["fingerprint"]),
                (episodes_t, [{"fingerprint": fp_new, **episode}], ["fingerprint", "starts_at"]),
                (events_t, [], None),
                (events_t, [{"fingerprint": fp_new, **event, "detail": {"n": [1]}}], None),
            ],
        )
        assert await bulk.insert_together(s, [(events_t, [], None)]) == [0]
        await s.commit()
    assert counts == [1, 1, 0, 1]
    assert (await stored(db, fp_old))["status"] == "firing"  # skipped, not overwritten
    assert await stored(db, fp_new) == await stored(db, fp_old)  # the same values, stored the same way
    async with db.read() as s:
        assert (await s.execute(select(episodes_t.c.fingerprint, episodes_t.c.starts_at))).all() == [(fp_new, T0)]
        assert (await s.scalars(select(events_t.c.detail))).all() == [{"n": [1]}]


async def test_history_rows_pointing_at_nothing_are_found_by_the_integrity_check(db: Database) -> None:
    # No foreign keys on the history tables (migration 0006): the store takes such rows, and the check
    # the ingest tests run after every workload is what would notice them.
    assert await dangling_history(db) == {"episodes": 0, "events": 0, "raw links": 0}
    ghost = {"fingerprint": "0" * 16, "starts_at": T0, "ends_at": None, "resolved_by": None, "opened_at": T0}
    event = {"fingerprint": "0" * 16, "kind": "new_firing", "at": T0, "episode_starts_at": T0, "detail": None}
    async with db.write() as s:
        await bulk.insert(s, episodes_t, [{**ghost, "closed_at": None}])
        await bulk.insert(s, events_t, [{**event, "raw_event_id": None}, {**event, "raw_event_id": 12345}])
        await s.commit()
    assert await dangling_history(db) == {"episodes": 1, "events": 2, "raw links": 1}


def test_slices_cover_every_key_once_in_order_within_the_in_list_limit() -> None:
    keys = [f"{i:016x}" for i in range(2 * bulk.IN_LIST + 1)]
    got = list(bulk.slices(keys))
    assert [len(s) for s in got] == [bulk.IN_LIST, bulk.IN_LIST, 1]
    assert [k for s in got for k in s] == keys
    assert list(bulk.slices([])) == []
    assert [list(s) for s in bulk.slices(keys[:3], size=2)] == [keys[:2], keys[2:3]]


async def test_reads_by_key_find_every_row_past_one_in_list(db: Database) -> None:
    # More fingerprints than one IN list holds, through two of the readers that slice them.
    from alertrouter.store.console import alerts_by_fingerprint
    from alertrouter.store.delivery import alert_details

    fps = [f"{i:016x}" for i in range(bulk.IN_LIST * 2 + 7)]
    async with db.write() as s:
        await bulk.insert(s, alerts_t, [alert(fp, annotations={"n": fp}) for fp in fps])
        await s.commit()
    async with db.read() as s:
        rows = await alerts_by_fingerprint(s, reversed(fps))
        details = await alert_details(s, [*fps, "f" * 16])
    assert sorted(rows) == fps
    assert sorted(details) == fps
    assert all(details[fp][0] == {"n": fp} for fp in fps)

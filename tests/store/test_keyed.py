"""Keyed reads at driver speed (alertrouter.store.keyed) against SQLite and PostgreSQL: what they read
must be exactly what SQLAlchemy itself reads (the other two ways of running the same read are held to
the session's in tests/store/test_reads_now.py and tests/store/test_pool_checks.py)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import insert as sa_insert
from sqlalchemy import select

from alertrouter.store import Database, keyed, sqlvalues
from alertrouter.store.handles import alerts_t
from support.rows import T0, alert


async def test_select_in_returns_what_sqlalchemy_returns(db: Database) -> None:
    # Rows written by SQLAlchemy itself, with every kind of value a state read meets: aware datetimes
    # (one given in another zone), None, JSON objects and JSON null, non-ASCII text.
    east = timezone(timedelta(hours=8))
    rows = [
        alert("c" * 16),
        alert("a" * 16, ends_at=(T0 + timedelta(hours=1)).astimezone(east), resolved_by="source", fired_at=None),
        alert("b" * 16, annotations={"summary": "ünï"}, decision_detail=None),
    ]
    async with db.write() as s:
        await s.execute(sa_insert(alerts_t), rows)
        await s.commit()
    columns = ("fingerprint", "status", "starts_at", "ends_at", "annotations", "resolved_by", "fired_at", "labels")
    wanted = ["c" * 16, "a" * 16, "z" * 16]  # unordered, and one that is not stored
    async with db.read() as s:
        got = await keyed.select_in(s, alerts_t, columns, key="fingerprint", values=wanted)
        query = select(*(alerts_t.c[c] for c in columns)).where(alerts_t.c.fingerprint.in_(wanted))
        expected = (await s.execute(query.order_by(alerts_t.c.fingerprint))).all()
        assert await keyed.select_in(s, alerts_t, columns, key="fingerprint", values=[]) == []
    assert [tuple(row) for row in got] == [tuple(row) for row in expected]
    assert [row[0] for row in got] == ["a" * 16, "c" * 16]  # in key order
    assert got[0][3] == T0 + timedelta(hours=1)
    assert got[0][3].tzinfo is not None


async def test_select_in_refuses_unknown_columns(db: Database) -> None:
    async with db.read() as s:
        with pytest.raises(ValueError, match="no column"):
            await keyed.select_in(s, alerts_t, ["fingerprint", "nonsense"], key="fingerprint", values=["a"])
    # The other ways of running a read refuse them too, a key as a column: names go into the SQL text.
    if db.is_sqlite:
        connection = db.read_now()
        assert connection is not None
        for key, columns in (("fingerprint", ["nonsense"]), ("nonsense", ["fingerprint"])):
            with pytest.raises(ValueError, match="no column"):
                keyed.select_in_now(connection, alerts_t, columns, key=key, values=["a"])
        with pytest.raises(ValueError, match="no column"):
            keyed.select_where_now(connection, alerts_t, ["nonsense"], "1 = 1", ())
        return
    async with db.read_driver() as driver:
        for key, columns in (("fingerprint", ["nonsense"]), ("nonsense", ["fingerprint"])):
            with pytest.raises(ValueError, match="no column"):
                await keyed.select_in_driver(driver, alerts_t, columns, key=key, values=["a"])
        with pytest.raises(ValueError, match="no column"):
            await keyed.select_where_driver(driver, alerts_t, ["nonsense"], "1 = 1", ())


def test_datetimes_convert_as_replacing_the_zone_does() -> None:
    # The converters turn naive UTC into aware and back by arithmetic instead of `replace(tzinfo=...)`:
    # the same instant, the same `UTC` object, for any stored time (random ones over the accepted range,
    # with and without a fraction of a second, as SQLAlchemy's SQLite text and as asyncpg's naive value).
    rng = random.Random(14)
    span = (datetime(9000, 1, 1) - datetime(1970, 1, 1)) // timedelta(microseconds=1)
    naive = [datetime(1970, 1, 1), datetime(8999, 12, 31, 23, 59, 59, 999999), datetime(2026, 11, 25, 10, 27, 21)]
    naive += [datetime(1970, 1, 1) + timedelta(microseconds=rng.randrange(span)) for _ in range(2000)]
    for value in naive:
        expected = value.replace(tzinfo=UTC)
        for text_form in (value.isoformat(" ", "microseconds"), value.isoformat(" ")):
            assert (read := keyed._from_sqlite_datetime(text_form)) == expected, text_form
            assert read.tzinfo is UTC
        assert (got := keyed._from_pg_datetime(value)) == expected, value
        assert got.tzinfo is UTC
        assert got.fold == 0
        # ... and written back as SQLAlchemy's SQLite text of the naive UTC time, from any zone
        zone = timezone(timedelta(minutes=rng.randrange(-1439, 1440)))
        for aware in (expected, expected.astimezone(zone)):
            sqlvalues.sqlite_datetime.cache_clear()
            assert sqlvalues.sqlite_datetime(aware) == value.isoformat(" ", "microseconds"), aware
    assert keyed._from_sqlite_datetime(None) is None
    assert keyed._from_pg_datetime(None) is None

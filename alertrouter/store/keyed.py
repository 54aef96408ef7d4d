"""Keyed reads at driver speed: the rows of a table whose key is one of many values, for the hottest
read there is (the state of every alert in a payload), the way back from `store/bulk.py`'s writes.

Values come out as SQLAlchemy would return them (aware UTC datetimes, decoded JSON), converted by
one plain function per column instead of SQLAlchemy's result processors (on SQLite a DATETIME is
parsed with a regular expression: four per alert were half the cost of confirming a push). Three
ways to run the same read: through a session (`select_in`, row-locked on PostgreSQL if asked), on the
event loop's own SQLite connection (`select_in_now`), on PostgreSQL's driver connection
(`select_in_driver`); see `Database.read_now` and `Database.read_driver` for when each is used. The
engine's reads by a condition go the last two ways (`select_where_now`, `select_where_driver`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache, partial
from typing import Any

import orjson
from sqlalchemy import JSON, Table
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.store.bulk import sqlite_rows
from alertrouter.store.db import json_dumps
from alertrouter.store.sqlvalues import NAIVE_EPOCH, PG_DIALECT, UTC_EPOCH, check_columns, each_distinct_once, quote
from alertrouter.store.tables import UTCDateTime

__all__ = ["as_utc", "select_in", "select_in_driver", "select_in_now", "select_where_driver", "select_where_now"]


def as_utc(value: datetime) -> datetime:
    """`value.replace(tzinfo=UTC)` for a naive UTC `value`, in a tenth of its time (CPython 3.11's
    `replace` parses keywords): exact, since datetime arithmetic is in
    whole microseconds. Three per alert read, for every alert of every payload."""
    return UTC_EPOCH + (value - NAIVE_EPOCH) if value.tzinfo is None else value.replace(tzinfo=UTC)


def _from_sqlite_datetime(value: str | None) -> datetime | None:
    return None if value is None else as_utc(datetime.fromisoformat(value))


def _from_pg_datetime(value: datetime | None) -> datetime | None:
    return None if value is None else as_utc(value)


def _from_json_text(value: str | None) -> Any:
    return None if value is None else orjson.loads(value)


@dataclass(frozen=True, slots=True)
class _Read:
    sql: str
    # (position, converter of the whole column) of the columns that need one
    converters: tuple[tuple[int, Callable[[Iterable[Any]], Iterable[Any]]], ...]


def _converters(
    dialect: str, table: Table, columns: tuple[str, ...]
) -> tuple[tuple[int, Callable[[Iterable[Any]], Iterable[Any]]], ...]:
    converters: list[tuple[int, Callable[[Iterable[Any]], Iterable[Any]]]] = []
    for i, name in enumerate(columns):
        col_type = table.c[name].type
        if isinstance(col_type, UTCDateTime) and dialect == "sqlite":  # text, parsed once per distinct value
            converters.append((i, partial(each_distinct_once, _from_sqlite_datetime)))
        elif isinstance(col_type, UTCDateTime):  # a driver datetime: arithmetic cheaper than a lookup
            converters.append((i, partial(map, _from_pg_datetime)))
        elif isinstance(col_type, JSON):
            converters.append((i, partial(map, _from_json_text)))
    return tuple(converters)


def _names(dialect: str, table: Table, columns: tuple[str, ...]) -> str:
    # JSON is read as text on PostgreSQL too, and decoded as on SQLite: the driver's codec would go
    # through the engine's deserializer, which interns every short value for the engine's long-lived
    # labels (`db.json_loads`), work wasted on states that are compared and dropped.
    return ", ".join(
        f"{quote(c)}::TEXT" if dialect == "postgresql" and isinstance(table.c[c].type, JSON) else quote(c)
        for c in columns
    )


@cache
def _read(dialect: str, table: Table, columns: tuple[str, ...], key: str, lock: bool) -> _Read:
    check_columns(table, (*columns, key))
    converters = _converters(dialect, table, columns)
    names = _names(dialect, table, columns)
    if dialect == "sqlite":  # one parameter, a JSON array, however many keys (SQLite has no row locks)
        where = f"{quote(key)} IN (SELECT value FROM json_each(?))"  # noqa: S608 (names checked above)
    elif dialect == "postgresql":
        # One array parameter, not one per key: a prepared `IN ($1, ..., $100)` gets a generic plan that
        # compares every row with every key, which grew with the table on a fresh, unanalysed one.
        where = f"{quote(key)} = ANY($1::{table.c[key].type.compile(dialect=PG_DIALECT)}[])"
    else:
        raise RuntimeError(f"unsupported database dialect {dialect!r}")
    sql = f"SELECT {names} FROM {quote(table.name)} WHERE {where} ORDER BY {quote(key)}"  # noqa: S608 (names checked)
    if lock and dialect == "postgresql":
        sql += " FOR UPDATE"
    return _Read(sql, converters)


async def select_in(
    session: AsyncSession,
    table: Table,
    columns: Sequence[str],
    *,
    key: str,
    values: Sequence[Any],
    lock: bool = False,
) -> list[tuple[Any, ...]]:
    """`columns` of the rows of `table` whose `key` is one of `values`, in `key` order; with `lock`,
    row-locked on PostgreSQL (in that order) until the transaction ends."""
    if not values:
        return []
    dialect = session.get_bind().dialect.name
    read = _read(dialect, table, tuple(columns), key, lock)
    if dialect == "sqlite":
        found: Sequence[Sequence[Any]] = await sqlite_rows(session, read.sql, (json_dumps(list(values)),))
    else:
        connection = await session.connection()
        found = (await connection.exec_driver_sql(read.sql, (list(values),))).all()
    return _converted(read, found)


def select_in_now(
    connection: sqlite3.Connection, table: Table, columns: Sequence[str], *, key: str, values: Sequence[Any]
) -> list[tuple[Any, ...]]:
    """`select_in` on SQLite, run on the calling thread with a plain `sqlite3` connection (the event
    loop's own: `Database.read_now`), in no given order; a driver error is raised as the driver raises it.

    The rows come back as one JSON document, in one step of the statement: Python's `sqlite3` lets the
    interpreter go around every step and must take it back after each, and while another thread runs
    Python (the engine's evaluation, during a pass) each taking back waits for that thread's switch
    interval. Row by row, a read of a payload's states waited out one switch interval per row during a
    storm's pass."""
    if not values:
        return []
    read = _read_now(table, tuple(columns), key)
    (document,) = connection.execute(read.sql, (json_dumps(list(values)),)).fetchone()
    return _converted(read, orjson.loads(document))


@cache
def _read_now(table: Table, columns: tuple[str, ...], key: str) -> _Read:
    """`_read`'s converters, with a statement of its own: one row, the JSON array of the rows' arrays."""
    check_columns(table, (*columns, key))
    return _document(table, columns, f"{quote(key)} IN (SELECT value FROM json_each(?))")  # noqa: S608 (checked)


@cache
def _document(table: Table, columns: tuple[str, ...], where: str) -> _Read:
    names = ", ".join(map(quote, columns))
    sql = f"SELECT json_group_array(json_array({names})) FROM {quote(table.name)} WHERE {where}"  # noqa: S608
    return _Read(sql, _converters("sqlite", table, columns))


def select_where_now(
    connection: sqlite3.Connection, table: Table, columns: Sequence[str], where: str, params: Sequence[Any]
) -> list[tuple[Any, ...]]:
    """`columns` of the rows of `table` for which `where` holds (SQL of this module's callers, never of
    input: values go in `params`, SQLite's `?`), as `select_in_now` reads them: on the calling thread,
    one JSON document in one step, in no given order, converted as SQLAlchemy would return them."""
    check_columns(table, columns)
    read = _document(table, tuple(columns), where)
    (document,) = connection.execute(read.sql, tuple(params)).fetchone()
    return _converted(read, orjson.loads(document))


async def select_in_driver(
    connection: Any, table: Table, columns: Sequence[str], *, key: str, values: Sequence[Any]
) -> list[tuple[Any, ...]]:
    """`select_in` on PostgreSQL, on the driver's own connection (`Database.read_driver`), without a lock."""
    if not values:
        return []
    read = _read("postgresql", table, tuple(columns), key, False)
    return _converted(read, await connection.fetch(read.sql, list(values)))


async def select_where_driver(
    connection: Any, table: Table, columns: Sequence[str], where: str, params: Sequence[Any]
) -> list[tuple[Any, ...]]:
    """`select_where_now` on PostgreSQL, on the driver's own connection (`Database.read_driver`): `where`
    is written as for SQLite, a `?` for each value (numbered `$1`, `$2`, ... here), in no given order."""
    check_columns(table, columns)
    read = _where_driver(table, tuple(columns), where)
    return _converted(read, await connection.fetch(read.sql, *params))


@cache
def _where_driver(table: Table, columns: tuple[str, ...], where: str) -> _Read:
    pieces = where.split("?")
    numbered = "".join(f"{piece}${i}" for i, piece in enumerate(pieces[:-1], start=1)) + pieces[-1]
    names = _names("postgresql", table, columns)
    sql = f"SELECT {names} FROM {quote(table.name)} WHERE {numbered}"  # noqa: S608 (names checked, where is ours)
    return _Read(sql, _converters("postgresql", table, columns))


def _converted(read: _Read, found: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    if not found:
        return []
    # Converted column by column: each converter runs over its column in C (map), or once per distinct value.
    by_column: list[Iterable[Any]] = list(zip(*found, strict=True))
    for i, convert in read.converters:
        by_column[i] = convert(by_column[i])
    return list(zip(*by_column, strict=True))

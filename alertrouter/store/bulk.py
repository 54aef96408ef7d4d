"""Many-row writes (and deletes of the oldest rows) at driver speed, for the statements ingest and
the engine run by the thousand.

SQLAlchemy's executemany passes every value of every row through its type processors in Python
(a datetime becomes text for SQLite, a dict becomes JSON): for a webhook of 100 new alerts that is
1,200 datetimes, and it was a third of the ingest's CPU. Here a statement is built once per table
and column list, each value is converted once by a plain function chosen from the column's type,
and the driver gets the rows in its own types:

- SQLite: `executemany` of one parameterised statement;
- PostgreSQL: one statement over `jsonb_to_recordset()` of one JSON document holding every row, a
  single round trip however many rows (asyncpg's executemany would send a statement per row and
  could not return rows); a column marked `info={"bulk": "apart"}` (a stored payload) travels beside
  the document as an array of its own.

Values are stored exactly as SQLAlchemy would store them (naive UTC datetimes in SQLAlchemy's
SQLite text format, JSON via the engine's serializer, `None` as JSON `null`), so everything else
reads them through the ORM and Core as before (each value's conversion: `store/sqlvalues.py`).

The statements' SQL text, for each dialect, is written in `store/bulksql.py`; the keyed reads that go
with them (`select_in`, the way back for the hottest read) are in `store/keyed.py`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from itertools import chain
from operator import attrgetter, itemgetter
from typing import Any, TypeVar

import orjson
from sqlalchemy import JSON, Column, Table, delete, exc, select
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.store.bulksql import apart_columns, pg_sql, sqlite_sql
from alertrouter.store.sqlvalues import check_columns, json_texts, quote, sqlite_datetimes
from alertrouter.store.tables import UTCDateTime

__all__ = [
    "IN_LIST",
    "delete_oldest",
    "insert",
    "insert_returning",
    "insert_together",
    "pg_insert",
    "slices",
    "sqlite_rows",
    "update",
]

_K = TypeVar("_K")

IN_LIST = 500
"""Most values in one `IN (...)` list: under the 999 bound parameters of SQLite builds before 3.32."""


def slices(keys: Sequence[_K], size: int = IN_LIST) -> Iterator[Sequence[_K]]:
    """`keys` in slices of `size`: the `IN` list of one statement each."""
    return (keys[i : i + size] for i in range(0, len(keys), size))


@dataclass(frozen=True, slots=True)
class _Shape:
    sql: str
    binds: tuple[str, ...]  # column names in parameter order (SQLite) or of the recordset (PostgreSQL)
    # SQLite, per column: each value to what the driver takes (None: the value as it is)
    converters: tuple[Callable[[Iterable[Any]], Iterable[Any]] | None, ...]
    datetimes: tuple[str, ...]  # the columns holding datetimes, which must not be naive
    apart: tuple[str, ...]  # PostgreSQL: the columns sent beside the JSON document (`apart_columns`)


@cache
def _shape(
    dialect: str,
    table: Table,
    columns: tuple[str, ...],
    key: tuple[str, ...],
    conflict: tuple[str, ...] | None,
    do_update: bool,
) -> _Shape:
    """The statement for one table and column list: an insert when `key` is empty (on `conflict`:
    skip, or update the other columns), else an update of the other columns where `key` matches."""
    check_columns(table, (*columns, *key, *(conflict or ())))
    # an update binds what it sets, then the key
    binds = (*(c for c in columns if c not in key), *key) if key else columns
    converters: list[Callable[[Iterable[Any]], Iterable[Any]] | None] = []
    for name in binds:
        col_type = table.c[name].type
        if isinstance(col_type, UTCDateTime):
            converters.append(sqlite_datetimes)
        elif isinstance(col_type, JSON):
            converters.append(json_texts)
        else:
            converters.append(None)
    if dialect == "sqlite":
        sql = sqlite_sql(table, binds, key, conflict, do_update)
    elif dialect == "postgresql":
        sql = pg_sql(table, binds, key, conflict, do_update)
    else:
        raise RuntimeError(f"unsupported database dialect {dialect!r}")
    datetimes = tuple(c for c in binds if isinstance(table.c[c].type, UTCDateTime))
    return _Shape(sql, binds, tuple(converters), datetimes, apart_columns(table, binds))


async def _execute(
    session: AsyncSession,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    *,
    key: tuple[str, ...] = (),
    conflict: tuple[str, ...] | None = None,
    do_update: bool = False,
) -> int:
    if not rows:
        return 0
    dialect = session.get_bind().dialect.name
    shape = _shape(dialect, table, tuple(rows[0]), key, conflict, do_update)
    if dialect == "sqlite":
        return int(await _sqlite(session, shape.sql, list(zip(*_columns(shape, rows), strict=True)), many=True))
    connection = await session.connection()
    result = await connection.exec_driver_sql(shape.sql, _pg_params(shape, rows))
    return int(result.rowcount)


async def _sqlite(session: AsyncSession, sql: str, params: Any, *, many: bool = False) -> Any:
    """SQLite: run `sql` on the session's own connection, in its transaction, through aiosqlite itself:
    the rows it read, or with `many` (an executemany) how many rows it wrote. SQLAlchemy's execution
    around a driver statement (a greenlet switch, an execution context, a result with its cursor
    metadata, and for a read two trips to the connection's thread) cost the event loop several times
    what this does per statement. A driver error is raised as SQLAlchemy raises it (`is_outage`
    tells a locked store from a refused row by its class)."""
    connection = await session.connection()
    driver: Any = connection.sync_connection.connection.driver_connection  # type: ignore[union-attr]
    try:
        if many:
            return (await driver.executemany(sql, params)).rowcount
        return await driver.execute_fetchall(sql, params)
    except sqlite3.Error as error:
        raise exc.DBAPIError.instance(sql, params, error, sqlite3.Error, dialect=connection.dialect) from error


async def sqlite_rows(session: AsyncSession, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """SQLite only: the rows `sql` gives (e.g. an `UPDATE ... RETURNING`), run as `_sqlite` runs it: on
    the session's own connection and transaction, in one trip to the connection's thread."""
    return [tuple(r) for r in await _sqlite(session, sql, params)]


def _columns(shape: _Shape, rows: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """SQLite: the rows' values column by column, converted: map() runs in C, and a cached converter
    sees each repeated instant once."""
    columns: list[list[Any]] = []
    for name, convert in zip(shape.binds, shape.converters, strict=True):
        values = map(itemgetter(name), rows)
        columns.append(list(values if convert is None else convert(values)))
    return columns


def _pg_params(shape: _Shape, rows: Sequence[Mapping[str, Any]]) -> tuple[Any, ...]:
    """PostgreSQL: the rows as one JSON document, serialised in C with their nested JSON values, then
    each column sent apart as a list of its values (see `bulksql.pg_sql`).

    Passing one array per column instead cost asyncpg a type check and an encoding per value: for
    a payload of 100 new alerts, 3,000 values and a fifth of the ingest's time on the event loop."""
    for name in shape.datetimes:
        # the set of the column's time zones, built in C; datetimes are never falsy, so filter() drops only None
        if None in set(map(_tzinfo, filter(None, map(itemgetter(name), rows)))):
            raise ValueError("naive datetime passed to the store")
    if not shape.apart:
        return (orjson.dumps(rows, default=dict).decode(),)
    inside = [{k: v for k, v in row.items() if k not in shape.apart} for row in rows]
    return (orjson.dumps(inside, default=dict).decode(), *([row[c] for row in rows] for c in shape.apart))


_tzinfo = attrgetter("tzinfo")


async def insert(
    session: AsyncSession,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    *,
    on_conflict_do_nothing: Sequence[str] | None = None,
    on_conflict_do_update: Sequence[str] | None = None,
) -> int:
    """Insert `rows` (dicts with the same keys). A row clashing with a stored one on the columns of
    `on_conflict_do_nothing` is skipped; on those of `on_conflict_do_update`, it overwrites the stored
    row's other columns. Returns how many rows were written."""
    if on_conflict_do_update is not None:
        return await _execute(session, table, rows, conflict=tuple(on_conflict_do_update), do_update=True)
    conflict = tuple(on_conflict_do_nothing) if on_conflict_do_nothing is not None else None
    return await _execute(session, table, rows, conflict=conflict)


async def insert_returning(
    session: AsyncSession,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    *,
    on_conflict_do_nothing: Sequence[str],
    returning: Sequence[str],
) -> list[tuple[Any, ...]]:
    """`insert` (a row clashing on `on_conflict_do_nothing` skipped), giving the `returning` columns of
    each row written (as plain driver values: no datetime or JSON columns there), in no given order.
    Ingest logs each commit's payloads so, and through SQLAlchemy's ORM execution that cost the event
    loop several times what this does per commit on SQLite."""
    if not rows:
        return []
    check_columns(table, returning)
    dialect = session.get_bind().dialect.name
    conflict = tuple(on_conflict_do_nothing)
    shape = _shape(dialect, table, tuple(rows[0]), (), conflict, False)
    sql = f"{shape.sql} RETURNING {', '.join(map(quote, returning))}"
    if dialect == "postgresql":
        connection = await session.connection()
        return [tuple(r) for r in (await connection.exec_driver_sql(sql, _pg_params(shape, rows))).all()]
    # One statement of len(rows) VALUES groups: an executemany cannot return rows.
    group = f"({', '.join('?' for _ in shape.binds)})"
    sql = sql.replace(f"VALUES {group}", f"VALUES {', '.join([group] * len(rows))}", 1)
    values = list(chain.from_iterable(zip(*_columns(shape, rows), strict=True)))
    return [tuple(r) for r in await _sqlite(session, sql, values)]


async def insert_together(
    session: AsyncSession, parts: Sequence[tuple[Table, Sequence[Mapping[str, Any]], Sequence[str] | None]]
) -> list[int]:
    """Several inserts, each (table, rows, on_conflict_do_nothing) as `insert` does it, in order;
    how many rows each wrote. On PostgreSQL they are one statement (a data-modifying CTE each), so
    one round trip instead of one per table: ingest writes three tables per new alert, and each
    round trip waits its turn on the event loop as well as on the network."""
    dialect = session.get_bind().dialect.name
    if dialect != "postgresql":
        return [await insert(session, table, rows, on_conflict_do_nothing=conflict) for table, rows, conflict in parts]
    ctes: list[str] = []
    params: list[Any] = []
    written: list[int | None] = []  # None: the part has no rows (nothing to run)
    for table, rows, conflict in parts:
        if not rows:
            written.append(0)
            continue
        sql, values = pg_insert(table, rows, param=len(params) + 1, on_conflict_do_nothing=conflict)
        ctes.append(f"p{len(ctes)} AS ({sql} RETURNING 1)")
        params += values
        written.append(None)
    if not ctes:
        return [0] * len(parts)
    counts = ", ".join(f"(SELECT count(*) FROM p{i})" for i in range(len(ctes)))  # noqa: S608 (no input)
    connection = await session.connection()
    result = await connection.exec_driver_sql(f"WITH {', '.join(ctes)} SELECT {counts}", tuple(params))
    got = iter(result.one())
    return [int(next(got)) if w is None else w for w in written]


def pg_insert(
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    *,
    param: int,
    on_conflict_do_nothing: Sequence[str] | None = None,
    extra: Sequence[tuple[str, str]] = (),
    computed: Sequence[tuple[str, str]] = (),
    where: str = "",
) -> tuple[str, tuple[Any, ...]]:
    """PostgreSQL: `insert`'s statement for `rows` (not empty), its parameters numbered from `param`,
    and those parameters, for a caller that joins several into one statement of its own (a CTE each).
    The rows may hold `extra` fields besides the columns (name, SQL type), which `computed` columns'
    expressions and the `where` condition may read as `v.name` (see `bulksql.pg_sql`)."""
    conflict = tuple(on_conflict_do_nothing) if on_conflict_do_nothing is not None else None
    shape = _shape("postgresql", table, tuple(c for c in rows[0] if c not in dict(extra)), (), conflict, False)
    sql = pg_sql(table, shape.binds, (), conflict, False, param, extra=(*extra,), computed=(*computed,), where=where)
    return sql, _pg_params(shape, rows)


async def update(session: AsyncSession, table: Table, rows: Sequence[Mapping[str, Any]], *, key: Sequence[str]) -> None:
    """Set each row's other columns on the row of `table` its `key` columns name."""
    await _execute(session, table, rows, key=tuple(key))


async def delete_oldest(
    session: AsyncSession, column: Column[datetime], before: datetime, *, limit: int
) -> Sequence[int]:
    """Delete the rows of `column`'s table whose `column` is before `before`, the oldest (by `id`)
    first, at most `limit` of them; their ids."""
    table = column.table
    oldest = select(table.c.id).where(column < before).order_by(table.c.id).limit(limit)
    return (await session.scalars(delete(table).where(table.c.id.in_(oldest)).returning(table.c.id))).all()

"""Values and names as they go into SQL the store writes by hand (`bulk`, `keyed`, `reads_now`,
`leases`): datetimes as the naive UTC the columns hold (SQLite's as SQLAlchemy's text), JSON as text,
identifiers checked against the table and quoted."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import orjson
from sqlalchemy import Table
from sqlalchemy.dialects import postgresql

__all__ = [
    "NAIVE_EPOCH",
    "PG_DIALECT",
    "UTC_EPOCH",
    "check_columns",
    "each_distinct_once",
    "json_texts",
    "naive_utc",
    "quote",
    "sqlite_datetime",
    "sqlite_datetimes",
]

PG_DIALECT = postgresql.dialect()  # type: ignore[no-untyped-call]  # compiles a column type's PostgreSQL name

NAIVE_EPOCH = datetime(1970, 1, 1)  # the naive UTC the columns hold
UTC_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _utc(value: datetime) -> datetime:
    if value.tzinfo is UTC:
        return value
    if value.tzinfo is None:
        raise ValueError("naive datetime passed to the store")
    return value.astimezone(UTC)


def naive_utc(value: datetime) -> datetime:
    """The naive UTC time a column holds (`tables.UTCDateTime`), as a driver's parameter (asyncpg's) or
    before its SQLite text; by arithmetic (see `keyed.as_utc`). A naive `value` is refused."""
    return NAIVE_EPOCH + (_utc(value) - UTC_EPOCH)


# Cached: a batch repeats the same few instants (its `now`, each alert's `startsAt`) many times over.
@lru_cache(maxsize=4096)
def sqlite_datetime(value: datetime | None) -> str | None:
    """SQLAlchemy's SQLite DATETIME text ("2026-11-21 22:45:00.000000"), of the naive UTC time."""
    # An aware value's isoformat costs twice a naive one's.
    return None if value is None else naive_utc(value).isoformat(" ", "microseconds")


def each_distinct_once(convert: Callable[[Any], Any], values: Iterable[Any]) -> Iterable[Any]:
    """`convert` of each value, called once per distinct value: a datetime column repeats a few (the
    commit's `now` in every row, a burst's shared `startsAt`, a Prometheus push's one `endsAt`), and a
    lookup in a dict built in C costs a fifth to a third of a conversion."""
    column = list(values)
    done = dict.fromkeys(column)
    for value in done:
        done[value] = convert(value)
    return map(done.__getitem__, column)


def sqlite_datetimes(values: Iterable[datetime | None]) -> Iterable[str | None]:
    return each_distinct_once(sqlite_datetime, values)


def json_texts(values: Iterable[Any]) -> Iterable[str]:
    """`json_dumps` of each value, by two maps of C functions: no Python call per value (three per alert)."""
    return map(_decode, map(orjson.dumps, values))


_decode = bytes.decode


def check_columns(table: Table, names: Sequence[str]) -> None:
    """Every name is one of `table`'s columns (they go into SQL text as identifiers)."""
    unknown = [c for c in names if c not in table.c]
    if unknown:
        raise ValueError(f"{table.name} has no column(s) {unknown}")


def quote(name: str) -> str:
    """A quoted identifier; every name was checked to be the table's own first (`check_columns`: no user input)."""
    return f'"{name}"'

"""The SQL text of `store/bulk.py`'s many-row statements, built once per table and column list:
SQLite's parameterised `INSERT` or `UPDATE` for an executemany, and PostgreSQL's over
`jsonb_to_recordset()` of one JSON document holding every row (`pg_sql`). Column names come checked
against the table (`bulk._shape`) and are quoted here."""

from __future__ import annotations

from functools import cache

from sqlalchemy import JSON, Table

from alertrouter.store.sqlvalues import PG_DIALECT, check_columns, quote
from alertrouter.store.tables import UTCDateTime

__all__ = ["apart_columns", "pg_sql", "sqlite_sql"]


def apart_columns(table: Table, binds: tuple[str, ...]) -> tuple[str, ...]:
    """The columns of `binds` marked `info={"bulk": "apart"}`: plain text only (no JSON, no datetime)."""
    apart = tuple(c for c in binds if table.c[c].info.get("bulk") == "apart")
    for name in apart:
        if isinstance(table.c[name].type, JSON | UTCDateTime):
            raise ValueError(f"{table.name}.{name}: only a plain column can travel apart")
    return apart


def _on_conflict(binds: tuple[str, ...], conflict: tuple[str, ...] | None, do_update: bool) -> str:
    if conflict is None:
        return ""
    target = ", ".join(map(quote, conflict))
    if not do_update:
        return f" ON CONFLICT ({target}) DO NOTHING"
    sets = ", ".join(f"{quote(c)} = excluded.{quote(c)}" for c in binds if c not in conflict)
    return f" ON CONFLICT ({target}) DO UPDATE SET {sets}"


def sqlite_sql(
    table: Table, binds: tuple[str, ...], key: tuple[str, ...], conflict: tuple[str, ...] | None, do_update: bool
) -> str:
    if key:
        sets = ", ".join(f"{quote(c)} = ?" for c in binds if c not in key)
        where = " AND ".join(f"{quote(c)} = ?" for c in key)
        return f"UPDATE {quote(table.name)} SET {sets} WHERE {where}"  # noqa: S608 (names checked in bulk._shape)
    names = ", ".join(map(quote, binds))
    values = ", ".join("?" for _ in binds)
    return f"INSERT INTO {quote(table.name)} ({names}) VALUES ({values}){_on_conflict(binds, conflict, do_update)}"  # noqa: S608


@cache
def pg_sql(
    table: Table,
    binds: tuple[str, ...],
    key: tuple[str, ...],
    conflict: tuple[str, ...] | None,
    do_update: bool,
    param: int = 1,
    *,
    extra: tuple[tuple[str, str], ...] = (),
    computed: tuple[tuple[str, str], ...] = (),
    where: str = "",
) -> str:
    """The rows arrive as one JSON array of objects, parameter `$param`, read by `jsonb_to_recordset`
    (`_pg_rows`); an update sets the other columns where `key` matches, an insert selects them.

    Datetimes are read as `timestamptz` (orjson writes each with its offset) and stored as the naive
    UTC the columns hold; a JSON column's `null` stays JSON `null`, as SQLAlchemy stores `None`
    (the recordset would make it SQL NULL).

    An insert may also read `extra` fields of the document that are not columns (name, SQL type),
    set `computed` columns from SQL expressions over them (column, expression), and keep only the
    rows `where` holds (an SQL condition over `v`)."""
    rows = _pg_rows(table, binds, param, extra)
    if key:
        sets = ", ".join(f"{quote(c)} = {_pg_value(table, c)}" for c in binds if c not in key)
        match = " AND ".join(f"{quote(table.name)}.{quote(c)} = {_pg_value(table, c)}" for c in key)
        return f"UPDATE {quote(table.name)} SET {sets} FROM {rows} WHERE {match}"  # noqa: S608 (names checked)
    check_columns(table, tuple(c for c, _ in computed))
    names = ", ".join(map(quote, (*binds, *(c for c, _ in computed))))
    selected = ", ".join([*(_pg_value(table, c) for c in binds), *(expression for _, expression in computed)])
    kept = f" WHERE {where}" if where else ""
    return (
        f"INSERT INTO {quote(table.name)} ({names}) SELECT {selected} FROM {rows}{kept}"  # noqa: S608 (names checked)
        + _on_conflict(binds, conflict, do_update)
    )


def _pg_rows(table: Table, binds: tuple[str, ...], param: int, extra: tuple[tuple[str, str], ...]) -> str:
    """The statement's rows, `v`: the document `$param` as a recordset of the `binds` and `extra` fields.

    As `jsonb` the document is parsed once, and a JSON column's value (labels, annotations) is taken out
    of it as it is stored; as `json`, PostgreSQL lexed the document once for the rows and then each such
    value again as text into `jsonb`, a hash table per row on the way: with the document as `jsonb` its
    CPU per new webhook alert fell by about a sixth (tests/bench/results/history/ingest.md).

    A column marked apart (`raw_events.body`, a stored payload: tens of kilobytes of JSON text per webhook)
    is not in the document but one array parameter of its own after it (`$param + 1`, ...), zipped with
    the recordset by `ROWS FROM`: inside the document it was a JSON string, escaped by orjson on the
    event loop and lexed back character by character by PostgreSQL, for every webhook."""
    apart = apart_columns(table, binds)
    inside = [c for c in binds if c not in apart]
    fields = [*inside, *(name for name, _ in extra)]
    columns = (f"{quote(c)} {_pg_record_type(table, c)}" for c in inside)
    record = ", ".join([*columns, *(f"{quote(n)} {t}" for n, t in extra)])
    if not apart:
        return f"jsonb_to_recordset(${param}::JSONB) AS v({record})"
    arrays = "".join(
        f", unnest(${param + 1 + i}::{table.c[c].type.compile(dialect=PG_DIALECT)}[])" for i, c in enumerate(apart)
    )
    aliases = ", ".join(map(quote, (*fields, *apart)))
    return f"ROWS FROM (jsonb_to_recordset(${param}::JSONB) AS ({record}){arrays}) AS v({aliases})"


def _pg_record_type(table: Table, c: str) -> str:
    """Column `c`'s type in the recordset: datetimes with their offset, JSON as `jsonb`."""
    col_type = table.c[c].type
    if isinstance(col_type, UTCDateTime):
        return "TIMESTAMP WITH TIME ZONE"
    return "JSONB" if isinstance(col_type, JSON) else col_type.compile(dialect=PG_DIALECT)


def _pg_value(table: Table, c: str) -> str:
    """Column `c`'s value read from the recordset as the column stores it: naive UTC, JSON `null` kept."""
    col_type = table.c[c].type
    if isinstance(col_type, UTCDateTime):
        return f"(v.{quote(c)} AT TIME ZONE 'UTC')"
    return f"COALESCE(v.{quote(c)}, 'null'::JSONB)" if isinstance(col_type, JSON) else f"v.{quote(c)}"

"""columns fed from alerts and rules take what the ingest boundary and the rules allow

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07

A `severity` label longer than 32 characters was stored at ingest, then refused by the incident's
`severity varchar(32)` at every engine pass on PostgreSQL, which stopped every notification; an IPv6
`instance` with a long zone id did the same to `node_aliases.address varchar(64)`. Severities are label
values as they came (text); every other column holding a name has the width the ingest boundary and the
rules check (`model.NAME_MAX`, `model.KEY_MAX`). On PostgreSQL, varchar to a wider varchar or to text
rewrites nothing. SQLite enforces no width, so only the declared type changes there, in the schema's
text (SQLite's documented way for a change that leaves the stored rows as they are): rebuilding
`deliveries` as batch mode does would drop the table, and with it, by its foreign key's cascade,
every `delivery_attempts` row (the robots' rate budgets).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# (table, column, width before, width after; None: text)
WIDENED: tuple[tuple[str, str, int, int | None], ...] = (
    ("incidents", "severity", 32, None),
    ("deliveries", "severity", 32, None),
    ("node_aliases", "address", 64, 255),
    ("recipient_sends", "recipient", 64, 255),
    ("heartbeats", "name", 128, 255),
    ("scheduled_runs", "job", 255, 512),
)


def _type(width: int | None) -> sa.types.TypeEngine[str]:
    return sa.Text() if width is None else sa.String(width)


def _sql_type(width: int | None) -> str:
    return "TEXT" if width is None else f"VARCHAR({width})"


def _retype_sqlite(changes: Sequence[tuple[str, str, int | None, int | None]]) -> None:
    """Each (table, column, from, to) declared anew in SQLite's schema text, the rows untouched."""
    bind = op.get_bind()
    version = bind.exec_driver_sql("PRAGMA schema_version").scalar_one()
    bind.exec_driver_sql("PRAGMA writable_schema=ON")
    for table, column, before, after in changes:
        sql = bind.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).scalar_one()
        declared = re.compile(rf'(\b{column}"? ){re.escape(_sql_type(before))}')
        sql, found = declared.subn(rf"\g<1>{_sql_type(after)}", sql)
        if found != 1:
            raise RuntimeError(f"{table}.{column}: declared {_sql_type(before)} {found} times, not once")
        bind.exec_driver_sql("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = ?", (sql, table))
    bind.exec_driver_sql(f"PRAGMA schema_version={int(version) + 1}")
    bind.exec_driver_sql("PRAGMA writable_schema=OFF")


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _retype_sqlite([(t, c, before, after) for t, c, before, after in WIDENED])
        return
    for table, column, before, after in WIDENED:
        op.alter_column(table, column, type_=_type(after), existing_type=_type(before))


def downgrade() -> None:
    """Refused on PostgreSQL while a row holds a value too long for the narrower column (it says which)."""
    if op.get_bind().dialect.name == "sqlite":
        _retype_sqlite([(t, c, after, before) for t, c, before, after in WIDENED])
        return
    for table, column, before, after in WIDENED:
        op.alter_column(table, column, type_=_type(before), existing_type=_type(after))

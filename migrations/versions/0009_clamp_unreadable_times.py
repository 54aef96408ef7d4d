"""Alert times stored before the ingest boundary that no driver can read back are clamped to its limits

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24

Before `alertrouter.ingest.limits`, a webhook `startsAt` such as `9999-12-31T23:59:59-05:00` was
accepted and PostgreSQL converted it to UTC in year 10000 (and `0001-01-01T00:30:00+01:00` to a year
before 1). asyncpg cannot read such a value into Python: every read of the row failed, the engine
with it, and `/api/v1/alerts` answered 500. This moves those values to the nearest limit the
boundary accepts now (`TIME_MIN`, just before `TIME_MAX`), so the rows are readable again; the
engine decides them like any other. SQLite never stored such values (the conversion failed in Python
before the write), so this changes nothing there. The repair cannot be undone: downgrade keeps it.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# (table, column): the times that come from what senders wrote.
COLUMNS = (
    ("alerts", "starts_at"),
    ("alerts", "ends_at"),
    ("alert_episodes", "starts_at"),
    ("alert_episodes", "ends_at"),
    ("alert_events", "episode_starts_at"),
)
LOW = "1970-01-01 00:00:00"
HIGH = "8999-12-31 23:59:59"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, column in COLUMNS:
        op.execute(f"UPDATE {table} SET {column} = TIMESTAMP '{HIGH}' WHERE {column} > TIMESTAMP '{HIGH}'")  # noqa: S608
        op.execute(f"UPDATE {table} SET {column} = TIMESTAMP '{LOW}' WHERE {column} < TIMESTAMP '{LOW}'")  # noqa: S608


def downgrade() -> None:
    pass  # the values it replaced could not be read; there is nothing to put back

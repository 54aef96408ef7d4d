"""index alert_events.raw_event_id: pruning the raw log nulls the events that point at it

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22

Without it, each raw event the retention prune deleted made the database scan the whole history
table for events to set to NULL (the foreign key's ON DELETE SET NULL): 40 ms per raw event at
300,000 events on SQLite, holding the write lock that every webhook waits for.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("alert_events", schema=None) as batch_op:
        batch_op.create_index("ix_alert_events_raw_event_id", ["raw_event_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("alert_events", schema=None) as batch_op:
        batch_op.drop_index("ix_alert_events_raw_event_id")

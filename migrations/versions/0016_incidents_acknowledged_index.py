"""incidents: a partial index of the acknowledged ones, read by the engine at every pass

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-25

Acknowledgements are written by people, on any replica, so the engine reads which live incidents are
acknowledged at every pass (`store.incidents.load_acknowledged`). Without an index of its own that read
scanned every firing incident: 12 ms a pass with 30,000 of them, about a quarter of a pass after a
100-alert webhook. The index holds only the acknowledged rows (few), by status and last change.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ACKNOWLEDGED = sa.text("acknowledged_at IS NOT NULL")


def upgrade() -> None:
    with op.batch_alter_table("incidents", schema=None) as batch_op:
        batch_op.create_index(
            "ix_incidents_acknowledged",
            ["status", "updated_at"],
            unique=False,
            sqlite_where=_ACKNOWLEDGED,
            postgresql_where=_ACKNOWLEDGED,
        )


def downgrade() -> None:
    with op.batch_alter_table("incidents", schema=None) as batch_op:
        batch_op.drop_index("ix_incidents_acknowledged")

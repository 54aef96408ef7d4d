"""alerts.decision widened to 32 characters, for `muted_by_interval` (17)

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25

A route muted by a time interval (`mute_time_intervals`, `active_time_intervals`) leaves its alerts with
the decision `muted_by_interval`, one character more than the column held. PostgreSQL refuses the longer
value; SQLite stores it anyway, so only the declared type changes there.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.alter_column(
            "decision", existing_type=sa.String(length=16), type_=sa.String(length=32), existing_nullable=True
        )


def downgrade() -> None:
    # A decision longer than the old width cannot be kept in it: those alerts are decided again.
    op.execute("UPDATE alerts SET decision = NULL WHERE length(decision) > 16")
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.alter_column(
            "decision", existing_type=sa.String(length=32), type_=sa.String(length=16), existing_nullable=True
        )

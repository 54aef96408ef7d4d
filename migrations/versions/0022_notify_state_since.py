"""notify_state.since: when the episode each receiver was told of began

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-07

A GPU alert that resolves and fires again between two messages comes back with a new `startsAt`; the
resolved message then said it lasted seconds, since its last start, though the receiver had been told it
was firing since minutes before. Each receiver's notify state now keeps the start it was told, until a
resolved message closes that episode. Null for rows written before (told as they were).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("notify_state", schema=None) as batch_op:
        batch_op.add_column(sa.Column("since", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("notify_state", schema=None) as batch_op:
        batch_op.drop_column("since")

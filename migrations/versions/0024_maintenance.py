"""maintenance: nodes whose alerts are stored and shown but not sent

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-08

One row per node in maintenance (`alertrouter maintenance start`, the API, the console): from when
until when, why and who started it; ending one early sets `ends_at` and `ended_by`.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "maintenance",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("node", sa.String(length=255), nullable=False),
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("starts_at", sa.DateTime(), nullable=False),
        sa.Column("ends_at", sa.DateTime(), nullable=False),
        sa.Column("created_by", sa.String(length=255), nullable=False),
        sa.Column("ended_by", sa.String(length=255), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_maintenance")),
    )
    with op.batch_alter_table("maintenance", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_maintenance_ends_at"), ["ends_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_maintenance_node"), ["node"], unique=False)
        batch_op.create_index(batch_op.f("ix_maintenance_updated_at"), ["updated_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("maintenance", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_maintenance_updated_at"))
        batch_op.drop_index(batch_op.f("ix_maintenance_node"))
        batch_op.drop_index(batch_op.f("ix_maintenance_ends_at"))
    op.drop_table("maintenance")

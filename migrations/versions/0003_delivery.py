"""delivery: deliveries, attempts, channel state, recipient sends

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "channel_state",
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("holder", sa.String(length=128), nullable=True),
        sa.Column("lease_until", sa.DateTime(), nullable=True),
        sa.Column("blocked_until", sa.DateTime(), nullable=True),
        sa.Column("retry_at", sa.DateTime(), nullable=True),
        sa.Column("coalesce_backlog", sa.Boolean(), nullable=False),
        sa.Column("healthy", sa.Boolean(), nullable=False),
        sa.Column("consecutive_failures", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("last_ok_at", sa.DateTime(), nullable=True),
        sa.Column("last_failure_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_channel_state")),
    )
    op.create_table(
        "recipient_sends",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("channel", sa.String(length=255), nullable=False),
        sa.Column("recipient", sa.String(length=64), nullable=False),
        sa.Column("sent_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_recipient_sends")),
    )
    with op.batch_alter_table("recipient_sends", schema=None) as batch_op:
        batch_op.create_index(
            "ix_recipient_sends_channel_recipient_sent", ["channel", "recipient", "sent_at"], unique=False
        )

    op.create_table(
        "deliveries",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("outbox_id", sa.Integer(), nullable=True),
        sa.Column("parent_id", sa.Integer(), nullable=True),
        sa.Column("incident_key", sa.String(length=512), nullable=True),
        sa.Column("incident_id", sa.Integer(), nullable=True),
        sa.Column("receiver", sa.String(length=255), nullable=False),
        sa.Column("channel", sa.String(length=255), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("severity", sa.String(length=32), nullable=False),
        sa.Column("severity_rank", sa.Integer(), nullable=False),
        sa.Column(
            "message", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False
        ),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(), nullable=False),
        sa.Column("claimed_until", sa.DateTime(), nullable=True),
        sa.Column("sent_at", sa.DateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["outbox_id"], ["outbox.id"], name=op.f("fk_deliveries_outbox_id_outbox"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deliveries")),
    )
    with op.batch_alter_table("deliveries", schema=None) as batch_op:
        batch_op.create_index(
            "ix_deliveries_channel_status_next", ["channel", "status", "next_attempt_at"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_deliveries_incident_key"), ["incident_key"], unique=False)
        batch_op.create_index(batch_op.f("ix_deliveries_outbox_id"), ["outbox_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_deliveries_parent_id"), ["parent_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_deliveries_status"), ["status"], unique=False)

    op.create_table(
        "delivery_attempts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("delivery_id", sa.Integer(), nullable=False),
        sa.Column("channel", sa.String(length=255), nullable=False),
        sa.Column("worker", sa.String(length=128), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["delivery_id"],
            ["deliveries.id"],
            name=op.f("fk_delivery_attempts_delivery_id_deliveries"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_delivery_attempts")),
    )
    with op.batch_alter_table("delivery_attempts", schema=None) as batch_op:
        batch_op.create_index("ix_delivery_attempts_channel_started", ["channel", "started_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_delivery_attempts_delivery_id"), ["delivery_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("delivery_attempts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_delivery_attempts_delivery_id"))
        batch_op.drop_index("ix_delivery_attempts_channel_started")

    op.drop_table("delivery_attempts")
    with op.batch_alter_table("deliveries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_deliveries_status"))
        batch_op.drop_index(batch_op.f("ix_deliveries_parent_id"))
        batch_op.drop_index(batch_op.f("ix_deliveries_outbox_id"))
        batch_op.drop_index(batch_op.f("ix_deliveries_incident_key"))
        batch_op.drop_index("ix_deliveries_channel_status_next")

    op.drop_table("deliveries")
    with op.batch_alter_table("recipient_sends", schema=None) as batch_op:
        batch_op.drop_index("ix_recipient_sends_channel_recipient_sent")

    op.drop_table("recipient_sends")
    op.drop_table("channel_state")

"""engine: decisions, incidents, notify state, outbox, leases

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "incidents",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("key", sa.String(length=512), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("rule", sa.String(length=255), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("severity", sa.String(length=32), nullable=False),
        sa.Column("headline", sa.Text(), nullable=False),
        sa.Column(
            "labels", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False
        ),
        sa.Column(
            "summary", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False
        ),
        sa.Column("parent_key", sa.String(length=512), nullable=True),
        sa.Column("opened_at", sa.DateTime(), nullable=False),
        sa.Column("active_since", sa.DateTime(), nullable=True),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("resolved_at", sa.DateTime(), nullable=True),
        sa.Column("acknowledged_at", sa.DateTime(), nullable=True),
        sa.Column("acknowledged_by", sa.String(length=255), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_incidents")),
        sa.UniqueConstraint("key", name=op.f("uq_incidents_key")),
    )
    with op.batch_alter_table("incidents", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_incidents_parent_key"), ["parent_key"], unique=False)
        batch_op.create_index(batch_op.f("ix_incidents_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_incidents_updated_at"), ["updated_at"], unique=False)

    op.create_table(
        "leases",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("holder", sa.String(length=128), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_leases")),
    )
    op.create_table(
        "notify_state",
        sa.Column("incident_key", sa.String(length=512), nullable=False),
        sa.Column("receiver", sa.String(length=255), nullable=False),
        sa.Column("last_sent_at", sa.DateTime(), nullable=False),
        sa.Column(
            "firing", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False
        ),
        sa.Column("repeats", sa.Integer(), nullable=False),
        sa.Column("last_reason", sa.String(length=16), nullable=False),
        sa.PrimaryKeyConstraint("incident_key", "receiver", name=op.f("pk_notify_state")),
    )
    op.create_table(
        "outbox",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("incident_key", sa.String(length=512), nullable=False),
        sa.Column("receiver", sa.String(length=255), nullable=False),
        sa.Column("reason", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column(
            "message", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False
        ),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("sent_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outbox")),
    )
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_outbox_incident_key"), ["incident_key"], unique=False)
        batch_op.create_index("ix_outbox_status_next", ["status", "next_attempt_at"], unique=False)

    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("fired_at", sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column("node", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("incident_key", sa.String(length=512), nullable=True))
        batch_op.add_column(sa.Column("decision", sa.String(length=16), nullable=True))
        batch_op.add_column(
            sa.Column(
                "decision_detail",
                sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                nullable=True,
            )
        )
        batch_op.add_column(sa.Column("decided_at", sa.DateTime(), nullable=True))
        batch_op.create_index(batch_op.f("ix_alerts_decision"), ["decision"], unique=False)
        batch_op.create_index(batch_op.f("ix_alerts_incident_key"), ["incident_key"], unique=False)
        batch_op.create_index(batch_op.f("ix_alerts_node"), ["node"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_alerts_node"))
        batch_op.drop_index(batch_op.f("ix_alerts_incident_key"))
        batch_op.drop_index(batch_op.f("ix_alerts_decision"))
        batch_op.drop_column("decided_at")
        batch_op.drop_column("decision_detail")
        batch_op.drop_column("decision")
        batch_op.drop_column("incident_key")
        batch_op.drop_column("node")
        batch_op.drop_column("fired_at")

    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_index("ix_outbox_status_next")
        batch_op.drop_index(batch_op.f("ix_outbox_incident_key"))

    op.drop_table("outbox")
    op.drop_table("notify_state")
    op.drop_table("leases")
    with op.batch_alter_table("incidents", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_incidents_updated_at"))
        batch_op.drop_index(batch_op.f("ix_incidents_status"))
        batch_op.drop_index(batch_op.f("ix_incidents_parent_key"))

    op.drop_table("incidents")

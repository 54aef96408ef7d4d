"""escalations: where each incident's escalation chain stands (next step, when, why it stopped)

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-25

A route's escalation policy (`oncall.escalations`) notifies further receivers while a critical
incident is not acknowledged. The engine's leader takes each step under its lease and records it
here, so a restart or another replica taking the lease neither repeats nor skips one. A row per
chain (an incident that fires again starts a new one): `ix_escalations_stopped` finds the running
ones, `ix_escalations_incident_started` an incident's latest, `ix_escalations_next_at` the due ones.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "escalations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("incident_key", sa.String(length=512), nullable=False),
        sa.Column("policy", sa.String(length=255), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("next_step", sa.Integer(), nullable=False),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("next_at", sa.DateTime(), nullable=True),
        sa.Column("stopped", sa.String(length=16), nullable=True),
        sa.Column("stopped_at", sa.DateTime(), nullable=True),
        sa.Column("stopped_by", sa.String(length=255), nullable=True),
        sa.Column(
            "history", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False
        ),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_escalations")),
    )
    with op.batch_alter_table("escalations", schema=None) as batch_op:
        batch_op.create_index("ix_escalations_incident_started", ["incident_key", "started_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_escalations_next_at"), ["next_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_escalations_stopped"), ["stopped"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("escalations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_escalations_stopped"))
        batch_op.drop_index(batch_op.f("ix_escalations_next_at"))
        batch_op.drop_index("ix_escalations_incident_started")
    op.drop_table("escalations")

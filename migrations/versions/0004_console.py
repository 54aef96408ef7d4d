"""console: silences, scheduled runs, used tokens, secrets

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-21
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "scheduled_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("job", sa.String(length=255), nullable=False),
        sa.Column("period", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("holder", sa.String(length=128), nullable=False),
        sa.Column("claimed_until", sa.DateTime(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column(
            "detail", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=True
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scheduled_runs")),
        sa.UniqueConstraint("job", "period", name=op.f("uq_scheduled_runs_job")),
    )
    op.create_table(
        "secrets",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_secrets")),
    )
    op.create_table(
        "silences",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column(
            "matchers", sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"), nullable=False
        ),
        sa.Column("starts_at", sa.DateTime(), nullable=False),
        sa.Column("ends_at", sa.DateTime(), nullable=False),
        sa.Column("created_by", sa.String(length=255), nullable=False),
        sa.Column("comment", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_silences")),
    )
    with op.batch_alter_table("silences", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_silences_ends_at"), ["ends_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_silences_updated_at"), ["updated_at"], unique=False)

    op.create_table(
        "used_tokens",
        sa.Column("nonce", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("incident_id", sa.Integer(), nullable=False),
        sa.Column("used_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("nonce", name=op.f("pk_used_tokens")),
    )
    with op.batch_alter_table("used_tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_used_tokens_expires_at"), ["expires_at"], unique=False)
    # The digest reads a week of events, decisions included, by time.
    with op.batch_alter_table("alert_events", schema=None) as batch_op:
        batch_op.create_index("ix_alert_events_at", ["at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("alert_events", schema=None) as batch_op:
        batch_op.drop_index("ix_alert_events_at")
    with op.batch_alter_table("used_tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_used_tokens_expires_at"))

    op.drop_table("used_tokens")
    with op.batch_alter_table("silences", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_silences_updated_at"))
        batch_op.drop_index(batch_op.f("ix_silences_ends_at"))

    op.drop_table("silences")
    op.drop_table("secrets")
    op.drop_table("scheduled_runs")

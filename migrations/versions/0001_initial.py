"""alerts, episodes, events and raw log

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "alerts",
        sa.Column("fingerprint", sa.String(length=32), nullable=False),
        sa.Column("alertname", sa.String(length=255), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column(
            "labels",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "annotations",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("starts_at", sa.DateTime(), nullable=False),
        sa.Column("ends_at", sa.DateTime(), nullable=True),
        sa.Column("resolved_by", sa.String(length=16), nullable=True),
        sa.Column("generator_url", sa.Text(), nullable=False),
        sa.Column("episodes", sa.Integer(), nullable=False),
        sa.Column("first_seen", sa.DateTime(), nullable=False),
        sa.Column("last_seen", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("fingerprint", name=op.f("pk_alerts")),
    )
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_alerts_alertname"), ["alertname"], unique=False)
        batch_op.create_index(batch_op.f("ix_alerts_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_alerts_updated_at"), ["updated_at"], unique=False)

    op.create_table(
        "raw_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("received_at", sa.DateTime(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("receiver", sa.String(length=255), nullable=True),
        sa.Column("group_key", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=True),
        sa.Column("external_url", sa.Text(), nullable=True),
        sa.Column("alert_count", sa.Integer(), nullable=False),
        sa.Column("truncated_alerts", sa.Integer(), nullable=False),
        sa.Column("rejected_alerts", sa.Integer(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_raw_events")),
        sa.UniqueConstraint("digest", name=op.f("uq_raw_events_digest")),
    )
    with op.batch_alter_table("raw_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_raw_events_received_at"), ["received_at"], unique=False)

    op.create_table(
        "alert_episodes",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("fingerprint", sa.String(length=32), nullable=False),
        sa.Column("starts_at", sa.DateTime(), nullable=False),
        sa.Column("ends_at", sa.DateTime(), nullable=True),
        sa.Column("resolved_by", sa.String(length=16), nullable=True),
        sa.Column("opened_at", sa.DateTime(), nullable=False),
        sa.Column("closed_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["fingerprint"],
            ["alerts.fingerprint"],
            name=op.f("fk_alert_episodes_fingerprint_alerts"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_episodes")),
        sa.UniqueConstraint("fingerprint", "starts_at", name=op.f("uq_alert_episodes_fingerprint")),
    )
    op.create_table(
        "alert_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("fingerprint", sa.String(length=32), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("episode_starts_at", sa.DateTime(), nullable=False),
        sa.Column("raw_event_id", sa.Integer(), nullable=True),
        sa.Column(
            "detail",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.ForeignKeyConstraint(
            ["fingerprint"],
            ["alerts.fingerprint"],
            name=op.f("fk_alert_events_fingerprint_alerts"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["raw_event_id"],
            ["raw_events.id"],
            name=op.f("fk_alert_events_raw_event_id_raw_events"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_events")),
    )
    with op.batch_alter_table("alert_events", schema=None) as batch_op:
        batch_op.create_index("ix_alert_events_fingerprint_at", ["fingerprint", "at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("alert_events", schema=None) as batch_op:
        batch_op.drop_index("ix_alert_events_fingerprint_at")

    op.drop_table("alert_events")
    op.drop_table("alert_episodes")
    with op.batch_alter_table("raw_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_raw_events_received_at"))

    op.drop_table("raw_events")
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_alerts_updated_at"))
        batch_op.drop_index(batch_op.f("ix_alerts_status"))
        batch_op.drop_index(batch_op.f("ix_alerts_alertname"))

    op.drop_table("alerts")

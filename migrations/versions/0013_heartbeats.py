"""heartbeats: when each configured alert source was last heard from, shared by every replica

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25

A `heartbeats:` entry in the rules names a source (a Prometheus' always-firing Watchdog, or anything
that POSTs to /api/v1/heartbeats/<name>). Its row says when it was first watched, last seen and how,
and since when it is missing while alertrouter's own alert about it is raised, so a restart or another
replica taking over neither forgets a silence nor raises it falsely.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "heartbeats",
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("watched_since", sa.DateTime(), nullable=False),
        sa.Column("last_seen", sa.DateTime(), nullable=True),
        sa.Column("seen_via", sa.String(length=16), nullable=True),
        sa.Column("missing_since", sa.DateTime(), nullable=True),
        sa.Column(
            "alert_labels",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_heartbeats")),
    )


def downgrade() -> None:
    op.drop_table("heartbeats")

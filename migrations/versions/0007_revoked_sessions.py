"""revoked sessions: a console logout refuses the session's cookie on every replica until it expires

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23

A session cookie is signed, not stored, so until now logging out only asked the browser to forget it:
a copy (a shared machine, a proxy log) stayed valid for the rest of ALERTROUTER_SESSION_TTL. A logout
now records the session's id here, and each request that presents a session looks it up by primary
key. Rows are kept only until the session would have expired anyway (`ix_revoked_sessions_expires_at`
serves the prune).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "revoked_sessions",
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("username", sa.String(length=255), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("session_id", name=op.f("pk_revoked_sessions")),
    )
    with op.batch_alter_table("revoked_sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_revoked_sessions_expires_at"), ["expires_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("revoked_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_revoked_sessions_expires_at"))
    op.drop_table("revoked_sessions")

"""login failures: console logins limited per user name and per client address, on every replica

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07

The console's only brake on guessing was a delay per failed request, so parallel connections guessed
as fast as they were opened. Failed logins are now counted here, one row per user name and one per
client address, by every replica alike; an attempt is counted before its password is checked, with
one conditional insert-or-update, so parallel attempts cannot pass the limit. Rows quiet for a day are
pruned by housekeeping (`ix_login_failures_updated_at`).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "login_failures",
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("subject", sa.String(length=255), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("window_start", sa.DateTime(), nullable=False),
        sa.Column("locked_until", sa.DateTime(), nullable=True),
        sa.Column("lockouts", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("scope", "subject", name=op.f("pk_login_failures")),
    )
    with op.batch_alter_table("login_failures", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_login_failures_updated_at"), ["updated_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("login_failures", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_login_failures_updated_at"))
    op.drop_table("login_failures")

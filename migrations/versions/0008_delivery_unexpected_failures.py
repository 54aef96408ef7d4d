"""deliveries.unexpected_failures: a message that fails for a reason of its own is retried alone

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23

Counts the failures of a delivery that were not the vendor's (an exception other than ChannelError,
such as a template raising on one label value). A delivery with one is never coalesced again and is a
dead letter after `alertrouter.delivery.policy.MAX_UNEXPECTED` of them, instead of holding back its
channel until `give_up_after`. Existing rows start at 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("deliveries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("unexpected_failures", sa.Integer(), server_default="0", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("deliveries", schema=None) as batch_op:
        batch_op.drop_column("unexpected_failures")

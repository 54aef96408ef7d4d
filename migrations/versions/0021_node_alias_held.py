"""node aliases: a move to another node held until a second alert or the Prometheus lookup agrees

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-07

One alert carrying `instance` and `node` no longer moves an address learned to be another node: the move
is held (`alertrouter.pipeline.aliases.Held`) until another alert makes the same claim, or the lookup
names that node. Whether to hold is derived from the live alerts in every pass, so it needs no column to
survive a restart; these columns are what every replica's API and console show, and what lets a new
leader tell a held move it finds from a new one (logged and counted once).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("node_aliases", schema=None) as batch_op:
        batch_op.add_column(sa.Column("held_node", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("held_from", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("held_fingerprint", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("held_since", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("node_aliases", schema=None) as batch_op:
        batch_op.drop_column("held_since")
        batch_op.drop_column("held_fingerprint")
        batch_op.drop_column("held_from")
        batch_op.drop_column("held_node")

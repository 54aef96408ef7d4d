"""node aliases: addresses learned to be nodes from alerts that carry both, shared by every replica

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25

dcgm-exporter's alerts carry `instance="10.0.0.7:9400"` and `Hostname="gpu-node-07"`; node-exporter's
only `instance="10.0.0.7:9100"`. The engine learns from the first that 10.0.0.7 is gpu-node-07 and
names the second's alerts so (`alertrouter.pipeline.aliases`). The pairs live here so that a restart
or another replica taking the lease starts from them; `ix_node_aliases_last_seen` serves the prune of
aliases not seen for `topology.learned_alias_ttl`, `ix_node_aliases_node` the API's list by node.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "node_aliases",
        sa.Column("address", sa.String(length=64), nullable=False),
        sa.Column("node", sa.String(length=255), nullable=False),
        sa.Column("first_seen", sa.DateTime(), nullable=False),
        sa.Column("last_seen", sa.DateTime(), nullable=False),
        sa.Column("learned_from", sa.String(length=255), nullable=False),
        sa.Column("fingerprint", sa.String(length=32), nullable=False),
        sa.Column("previous_node", sa.String(length=255), nullable=True),
        sa.Column("changed_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("address", name=op.f("pk_node_aliases")),
    )
    with op.batch_alter_table("node_aliases", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_node_aliases_last_seen"), ["last_seen"], unique=False)
        batch_op.create_index(batch_op.f("ix_node_aliases_node"), ["node"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("node_aliases", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_node_aliases_node"))
        batch_op.drop_index(batch_op.f("ix_node_aliases_last_seen"))
    op.drop_table("node_aliases")

"""alerts: drop the indexes of `alertname` and `node`, which no statement reads by

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-29

No query selects or orders alerts by `alertname` or by `node` first (the API filters alerts by labels in
Python, the console orders the muted alerts of a decision by node after the decision's own index found
them), but every new alert inserted an entry in each, and every engine decision that moved an alert to
another node or incident (an update of indexed columns, so not a heap-only one) one more. A new alert
was 14 index entries across alerts, episodes and history (a fifth to a quarter of PostgreSQL's CPU for a
new webhook alert is index inserts, in `perf`): now 12.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_index("ix_alerts_alertname")
        batch_op.drop_index("ix_alerts_node")


def downgrade() -> None:
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.create_index("ix_alerts_node", ["node"], unique=False)
        batch_op.create_index("ix_alerts_alertname", ["alertname"], unique=False)

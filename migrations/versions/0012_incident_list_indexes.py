"""index incidents by (status, kind, updated_at, id) and (status, updated_at, id): incident lists by walking an index

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25

The console's incident list (firing first, storms first, then the most recently changed) and the
API's (`?status=`, most recently changed first) sorted every incident of the status they show to
return a page of 50 or 100: during a 10,000-node storm, tens of thousands of rows, labels and
summaries included, per request. With these, each part of a list is read in order from an index and
stops at the page's end.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("incidents", schema=None) as batch_op:
        batch_op.create_index("ix_incidents_status_kind_updated", ["status", "kind", "updated_at", "id"], unique=False)
        batch_op.create_index("ix_incidents_status_updated", ["status", "updated_at", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("incidents", schema=None) as batch_op:
        batch_op.drop_index("ix_incidents_status_updated")
        batch_op.drop_index("ix_incidents_status_kind_updated")

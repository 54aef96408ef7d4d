"""gpus, gpu_events: every GPU by its own identity (UUID), and what happened to it

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-07

A GPU's history keyed by node and index was lost when a node was renamed or a GPU moved. `gpus` holds
one row per UUID (its latest node, slot and PCI bus id; serial and model where exported); `gpu_events`
one row per alert episode about it (Xid or alertname, the alert's `startsAt`, where it was seen),
unique by UUID, fingerprint and start so a re-sent alert is one event. The RMA rules read them.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "gpus",
        sa.Column("uuid", sa.String(length=255), nullable=False),
        sa.Column("serial", sa.String(length=255), nullable=True),
        sa.Column("model", sa.String(length=255), nullable=True),
        sa.Column("node", sa.String(length=255), nullable=True),
        sa.Column("slot", sa.String(length=255), nullable=True),
        sa.Column("pci_bus_id", sa.String(length=255), nullable=True),
        sa.Column("first_seen", sa.DateTime(), nullable=False),
        sa.Column("last_seen", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("uuid", name=op.f("pk_gpus")),
    )
    op.create_table(
        "gpu_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.String(length=255), nullable=False),
        sa.Column("alertname", sa.String(length=255), nullable=False),
        sa.Column("xid", sa.Integer(), nullable=True),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("node", sa.String(length=255), nullable=True),
        sa.Column("slot", sa.String(length=255), nullable=True),
        sa.Column("fingerprint", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gpu_events")),
        sa.UniqueConstraint("uuid", "fingerprint", "at", name=op.f("uq_gpu_events_uuid")),
    )


def downgrade() -> None:
    op.drop_table("gpu_events")
    op.drop_table("gpus")

"""job_hits: the jobs hit by alerts, one row per episode

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-08

A job (a Kubeflow, Volcano or batch Job, a Slurm job) hit by alerts is told to its owner once and updated
as more of its nodes are hit; the row per episode holds what it is (namespace, name, which source named
it), since when, its nodes and GPUs lost, and the GPU-seconds lost up to its last change, for the jobs
API, the console and the weekly digest. `resolved_at` null: hit now.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    json_type = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
    op.create_table(
        "job_hits",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("namespace", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("detail", sa.String(length=255), nullable=False),
        sa.Column("note", sa.String(length=1000), nullable=False),
        sa.Column("since", sa.DateTime(), nullable=False),
        sa.Column("opened_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("resolved_at", sa.DateTime(), nullable=True),
        sa.Column("nodes", json_type, nullable=False),
        sa.Column("nodes_down", json_type, nullable=False),
        sa.Column("incidents", json_type, nullable=False),
        sa.Column("node_count", sa.Integer(), nullable=False),
        sa.Column("down_count", sa.Integer(), nullable=False),
        sa.Column("gpus_lost", sa.Integer(), nullable=False),
        sa.Column("peak_gpus_lost", sa.Integer(), nullable=False),
        sa.Column("alerts", sa.Integer(), nullable=False),
        sa.Column("job_nodes", sa.Integer(), nullable=False),
        sa.Column("gpu_seconds", sa.Float(), nullable=False),
        sa.Column("cause", sa.String(length=16), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_hits")),
    )
    op.create_index(op.f("ix_job_hits_resolved_at"), "job_hits", ["resolved_at"], unique=False)
    op.create_index(op.f("ix_job_hits_since"), "job_hits", ["since"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_job_hits_since"), table_name="job_hits")
    op.drop_index(op.f("ix_job_hits_resolved_at"), table_name="job_hits")
    op.drop_table("job_hits")

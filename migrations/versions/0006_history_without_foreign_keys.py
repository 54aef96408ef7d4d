"""history tables without foreign keys: the ingest writes them with their alert, in one statement

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22

`alert_episodes` and `alert_events` are append-only and written only by the ingest, in the same
statement (PostgreSQL) or transaction (SQLite) as the alert row they belong to; alerts are never
deleted. On PostgreSQL the three foreign keys each fired a trigger per inserted row (three checks
per new alert, a fifth of the database's CPU for a storm of new alerts), and the triggers' row
locks on alerts, taken in event order rather than the fingerprint order every writer locks in,
could deadlock two writers storing the same payload. What the keys did is now done by the code:
the raw-log prune sets `alert_events.raw_event_id` to NULL for the raw events it deletes
(`alertrouter.store.alerts.prune_raw_events`), and the ingest tests check after each workload that
no episode or event points at a missing row.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("alert_episodes", schema=None) as batch_op:
        batch_op.drop_constraint("fk_alert_episodes_fingerprint_alerts", type_="foreignkey")
    with op.batch_alter_table("alert_events", schema=None) as batch_op:
        batch_op.drop_constraint("fk_alert_events_fingerprint_alerts", type_="foreignkey")
        batch_op.drop_constraint("fk_alert_events_raw_event_id_raw_events", type_="foreignkey")


def downgrade() -> None:
    with op.batch_alter_table("alert_episodes", schema=None) as batch_op:
        batch_op.create_foreign_key(
            "fk_alert_episodes_fingerprint_alerts", "alerts", ["fingerprint"], ["fingerprint"], ondelete="CASCADE"
        )
    with op.batch_alter_table("alert_events", schema=None) as batch_op:
        batch_op.create_foreign_key(
            "fk_alert_events_fingerprint_alerts", "alerts", ["fingerprint"], ["fingerprint"], ondelete="CASCADE"
        )
        batch_op.create_foreign_key(
            "fk_alert_events_raw_event_id_raw_events", "raw_events", ["raw_event_id"], ["id"], ondelete="SET NULL"
        )

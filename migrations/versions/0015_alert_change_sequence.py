"""alerts.change_seq: a change sequence the engine reads changes by, instead of `updated_at` minus 30 s

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-25

The engine read "what changed" as every alert whose `updated_at` was within 30 s before the latest one
it had seen, because commits land out of clock order (a transaction stamps its rows, then commits
later; replicas' clocks differ). After a burst that window holds every alert of the burst for 30 s,
and each pass re-read all of their stamps (most of a pass's time with 80,000 live alerts); a commit
later than 30 s after its stamp was missed until the next full pass.

`change_seq` is set by the database itself, in a trigger on every insert and on every update that sets
`updated_at` (so no write path can forget it):
- PostgreSQL: the writing transaction's id (`txid_current()`). A reader first takes the oldest
  transaction still in progress (`txid_snapshot_xmin(txid_current_snapshot())`); every transaction below
  it has finished, so its rows are in the read that follows, and the next read starts from that xmin.
- SQLite: a one-row counter (`alert_change_counter`). SQLite has one writer at a time, from its first
  write to its commit, so values are committed in order: a reader takes the counter, and the next read
  starts just above it. Ingest, the only writer that inserts alerts, draws one value for all the rows of
  its transaction in one statement (`store.alerts.with_change_seq`) and writes it with them; a trigger
  fills it in for any other update of `updated_at` (the timeout that resolves an alert). No trigger on
  insert: even one that does nothing (`WHEN NEW.change_seq IS NULL`) cost 7 µs of SQLite's time per
  inserted alert, a third more than the insert itself.
Rows written before this revision have no sequence (NULL): the engine's first pass reads every live
alert anyway, and a row gets one at its next change.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SQLITE_STEP = """
    UPDATE alert_change_counter SET value = value + 1 WHERE id = 1;
    UPDATE alerts SET change_seq = (SELECT value FROM alert_change_counter WHERE id = 1)
     WHERE fingerprint = NEW.fingerprint;
"""


def upgrade() -> None:
    op.create_table(
        "alert_change_counter",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_change_counter")),
    )
    op.execute("INSERT INTO alert_change_counter (id, value) VALUES (1, 0)")
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("change_seq", sa.BigInteger(), nullable=True))
        batch_op.create_index(batch_op.f("ix_alerts_change_seq"), ["change_seq"], unique=False)
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            """
            CREATE FUNCTION alertrouter_alert_changed() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                NEW.change_seq := txid_current();
                RETURN NEW;
            END $$
            """
        )
        op.execute(
            "CREATE TRIGGER alerts_change_seq BEFORE INSERT OR UPDATE OF updated_at ON alerts "
            "FOR EACH ROW EXECUTE FUNCTION alertrouter_alert_changed()"
        )
    else:
        op.execute(
            "CREATE TRIGGER alerts_change_seq_update AFTER UPDATE OF updated_at ON alerts "
            f"WHEN NEW.change_seq IS OLD.change_seq BEGIN {_SQLITE_STEP} END"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER alerts_change_seq ON alerts")
        op.execute("DROP FUNCTION alertrouter_alert_changed()")
    else:
        op.execute("DROP TRIGGER alerts_change_seq_update")
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_alerts_change_seq"))
        batch_op.drop_column("change_seq")
    op.drop_table("alert_change_counter")

"""raw_events.body: compressed with lz4 on PostgreSQL, where the server has it

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26

Every distinct payload is kept whole (`raw_events.body`): a webhook of 100 GPU alerts is about 60 kB of
JSON, which PostgreSQL compresses on insert. With its default method (pglz) that compression was 7% of
PostgreSQL's CPU while a storm of new alerts was stored (a CPU profile of the server during 8,000 new
webhook alerts); lz4 compresses several times faster, a little less tightly. Only rows written from now
on are compressed with it; older rows stay as they are and read the same.

PostgreSQL has per-column compression from version 14, and lz4 only when built with it (Debian's and
the official images are): on any other server this revision changes nothing. SQLite does not compress.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _set_compression(method: str) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    # EXECUTE, so that a server without the clause (before 14) or without lz4 fails inside the block.
    op.execute(
        f"""
        DO $$ BEGIN
            EXECUTE 'ALTER TABLE raw_events ALTER COLUMN body SET COMPRESSION {method}';
        EXCEPTION WHEN feature_not_supported OR invalid_parameter_value OR syntax_error THEN
            RAISE NOTICE 'raw_events.body keeps the server''s default compression: %', SQLERRM;
        END $$
        """
    )


def upgrade() -> None:
    _set_compression("lz4")


def downgrade() -> None:
    _set_compression("default")

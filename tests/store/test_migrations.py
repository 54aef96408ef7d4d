"""The Alembic migrations produce exactly the schema the models describe, on both databases."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import PrimaryKeyConstraint, UniqueConstraint
from sqlalchemy.engine import Connection

from alertrouter.store import Database
from alertrouter.store.migrate import alembic_config, head_revision
from alertrouter.store.tables import Base

REPO = Path(__file__).resolve().parents[2]


def _diff(database_url: str) -> list[Any]:
    async def run() -> list[Any]:
        db = Database(database_url)
        try:
            async with db.engine.connect() as conn:

                def compare(sync: Connection) -> list[Any]:
                    ctx = MigrationContext.configure(sync, opts={"compare_type": True})
                    return list(compare_metadata(ctx, Base.metadata))

                return await conn.run_sync(compare)
        finally:
            await db.dispose()

    return asyncio.run(run())


def test_migrated_schema_matches_models(database_url: str) -> None:
    assert _diff(database_url) == []


def test_downgrade_and_upgrade_again(database_url: str) -> None:
    cfg = alembic_config(database_url)
    command.downgrade(cfg, "base")
    command.upgrade(cfg, "head")
    assert _diff(database_url) == []
    versions = sorted(p.name.split("_")[0] for p in (REPO / "migrations" / "versions").glob("0*.py"))
    assert head_revision() == versions[-1]  # one linear history, numbered in order


def test_every_foreign_key_leads_an_index() -> None:
    # Deleting a referenced row (pruning, cascades) looks up the rows that point at it: without an
    # index on the referencing columns that is a scan of the whole table per deleted row.
    unindexed = []
    for table in Base.metadata.sorted_tables:
        leading = {tuple(c.name for c in index.columns)[:1] for index in table.indexes}
        leading |= {
            tuple(c.name for c in constraint.columns)[:1]
            for constraint in table.constraints
            if isinstance(constraint, UniqueConstraint | PrimaryKeyConstraint)
        }
        for fk in table.foreign_key_constraints:
            if tuple(c.name for c in fk.columns)[:1] not in leading:
                unindexed.append(f"{table.name}({', '.join(c.name for c in fk.columns)})")
    assert unindexed == []

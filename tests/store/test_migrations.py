"""The Alembic migrations produce exactly the schema the models describe, on both databases."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
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

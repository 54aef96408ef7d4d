"""The Alembic migrations produce exactly the schema the models describe, on both databases."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import PrimaryKeyConstraint, UniqueConstraint, select, text
from sqlalchemy.engine import Connection

from alertrouter.ingest.limits import TIME_MIN
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.store import Database
from alertrouter.store.migrate import alembic_config, head_revision
from alertrouter.store.tables import AlertEpisodeRow, AlertRow, Base
from support import pg

REPO = Path(__file__).resolve().parents[2]
NOW = "2026-11-24T08:00:00+00:00"


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


def test_times_no_driver_can_read_are_clamped_to_the_ingest_limits(database_url: str) -> None:
    # What PostgreSQL stored for `startsAt: 9999-12-31T23:59:59-05:00` before the ingest boundary.
    async def store_poisoned() -> None:
        db = Database(database_url)
        try:
            ingestor = Ingestor(db, TouchBuffer())
            body = {"version": "4", "alerts": [{"status": "firing", "labels": {"alertname": "Y"}, "startsAt": NOW}]}
            await ingestor.ingest(parse_webhook(json.dumps(body).encode()).batch)
            async with db.write() as s:
                if not db.is_sqlite:
                    await s.execute(text("UPDATE alerts SET starts_at = TIMESTAMP '10000-01-01 04:59:59'"))
                    await s.execute(text("UPDATE alert_episodes SET starts_at = TIMESTAMP '0001-01-01 00:00:00 BC'"))
                await s.commit()
        finally:
            await db.dispose()

    async def read() -> tuple[datetime, datetime]:
        db = Database(database_url)
        try:
            async with db.read() as s:
                alert = (await s.scalars(select(AlertRow))).one()
                episode = (await s.scalars(select(AlertEpisodeRow))).one()
                return alert.starts_at, episode.starts_at
        finally:
            await db.dispose()

    asyncio.run(store_poisoned())
    cfg = alembic_config(database_url)
    command.downgrade(cfg, "0008")
    command.upgrade(cfg, "head")
    starts, episode_starts = asyncio.run(read())
    if database_url.startswith("sqlite"):
        assert starts == episode_starts == datetime.fromisoformat(NOW)  # nothing to repair there
    else:
        assert starts == datetime(8999, 12, 31, 23, 59, 59, tzinfo=UTC)
        assert episode_starts == TIME_MIN


def test_stored_payloads_are_compressed_with_lz4_on_postgresql(pg_database: str) -> None:
    url = pg.url_for(pg_database)
    pg.truncate(pg_database, [t.name for t in Base.metadata.sorted_tables])
    alerts = [
        {"status": "firing", "labels": {"alertname": "GPUHighTemp", "gpu": str(i)}, "startsAt": NOW, "annotations": {}}
        for i in range(200)
    ]
    body = json.dumps({"version": "4", "alerts": alerts}).encode()  # far over the 2 kB PostgreSQL compresses from

    async def store_and_ask() -> tuple[str, str | None]:
        db = Database(url)
        try:
            await Ingestor(db, TouchBuffer()).ingest(parse_webhook(body).batch)
            async with db.read() as s:
                method = (
                    await s.execute(
                        text(
                            "SELECT attcompression::text FROM pg_attribute "
                            "WHERE attrelid = 'raw_events'::regclass AND attname = 'body'"
                        )
                    )
                ).scalar_one()
                stored = (await s.execute(text("SELECT pg_column_compression(body) FROM raw_events"))).scalar_one()
                return str(method), stored
        finally:
            await db.dispose()

    assert asyncio.run(store_and_ask()) == ("l", "lz4")
    cfg = alembic_config(url)
    command.downgrade(cfg, "0016")
    try:
        pg.truncate(pg_database, ["raw_events", "alert_events", "alert_episodes", "alerts"])
        assert asyncio.run(store_and_ask()) == ("", "pglz")  # the column is back to the server's default
    finally:
        command.upgrade(cfg, "head")

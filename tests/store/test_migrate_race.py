"""Replicas started together on an empty PostgreSQL database each migrate it on start (`serve` runs
`upgrade` unless told not to): they must take turns, not both create the same tables. Each replica is a
process of its own, as in a deployment (Alembic's context is one per process)."""

from __future__ import annotations

import asyncio
import os
import subprocess

import asyncpg

from alertrouter.store.migrate import head_revision
from support import pg
from support.need import need
from support.procs import ALERTROUTER

REPLICAS = 4


def test_replicas_migrating_one_empty_database_at_once_all_succeed() -> None:
    problem = pg.available()
    need(problem is None, problem or "")
    name = pg.create_database()
    try:
        url = pg.url_for(name)
        env = os.environ | {"ALERTROUTER_DATABASE_URL": url}
        replicas = [
            subprocess.Popen([ALERTROUTER, "db", "upgrade"], env=env, stderr=subprocess.PIPE, text=True)
            for _ in range(REPLICAS)
        ]
        failed = [err for proc in replicas if (err := proc.communicate(timeout=300)[1]) and proc.returncode != 0]
        assert failed == []
        assert asyncio.run(_versions(url)) == [head_revision()]
    finally:
        pg.drop_database(name)


async def _versions(url: str) -> list[str]:
    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://", 1), timeout=5)
    try:
        return [row["version_num"] for row in await conn.fetch("SELECT version_num FROM alembic_version")]
    finally:
        await conn.close()

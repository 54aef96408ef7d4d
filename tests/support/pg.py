"""A real PostgreSQL for tests: one database per test session, created and dropped here."""

from __future__ import annotations

import asyncio
import os
import uuid

import asyncpg

ADMIN_URL = os.environ.get(
    "ALERTROUTER_TEST_PG_URL", "postgresql+asyncpg://alertrouter:alertrouter@127.0.0.1:5432/postgres"
)


def _dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


def url_for(database: str) -> str:
    return ADMIN_URL.rsplit("/", 1)[0] + "/" + database


async def _admin(sql: str) -> None:
    conn = await asyncpg.connect(_dsn(ADMIN_URL), timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def available() -> str | None:
    """None if PostgreSQL answers, else why not."""
    try:
        asyncio.run(_admin("SELECT 1"))
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        return f"PostgreSQL not reachable at {ADMIN_URL.split('@')[-1]}: {exc} (run: bash .ci/setup)"
    return None


def create_database(prefix: str = "alertrouter_test", *, suffix: bool = True) -> str:
    """A new database named `prefix` and a random suffix (or `prefix` itself); returns its name."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}" if suffix else prefix
    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    return name


def drop_database(name: str) -> None:
    asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def truncate(name: str, tables: list[str]) -> None:
    """Empty every table of a test database (much faster than migrating a new one per test)."""

    async def run() -> None:
        conn = await asyncpg.connect(_dsn(url_for(name)), timeout=5)
        try:
            await conn.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
        finally:
            await conn.close()

    asyncio.run(run())


def set_connections_allowed(name: str, allowed: bool) -> None:
    """Make a database refuse (or accept) new connections and cut the existing ones: "store down"."""
    flag = "true" if allowed else "false"
    sql = f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS {flag}'
    if not allowed:
        sql += f"; SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"  # noqa: S608
    asyncio.run(_admin(sql))

"""Alembic environment: the URL comes from alertrouter's settings (or the caller), never from an ini file."""

from __future__ import annotations

import asyncio
import concurrent.futures

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection

from alertrouter.settings import get_settings
from alertrouter.store.db import Database
from alertrouter.store.tables import Base, UTCDateTime

target_metadata = Base.metadata
# Replicas that start together on one PostgreSQL database all migrate it: the first takes this lock for
# its transaction, the others wait, then find the schema at head. Any fixed key will do ("alertrou").
_MIGRATION_LOCK = 0x616C65727472_6F75


def _url() -> str:
    url = context.config.attributes.get("database_url")
    return str(url) if url else get_settings().database_url


def _render_item(type_: str, obj: object, autogen_context: object) -> str | bool:
    """Render our column types as plain SQLAlchemy ones, so migrations never import the app."""
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime()"
    return False


def _run(connection: Connection) -> None:
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _MIGRATION_LOCK})
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        render_item=_render_item,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_async() -> None:
    db = Database(_url())
    try:
        async with db.engine.connect() as connection:
            await connection.run_sync(_run)
            await connection.commit()
    finally:
        await db.dispose()


if context.is_offline_mode():
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(_run_async())
    else:  # called from code that runs an event loop already: migrate on a loop of its own
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, _run_async()).result()

"""Alembic environment: the URL comes from alertrouter's settings (or the caller), never from an ini file."""

from __future__ import annotations

import asyncio
import concurrent.futures

from alembic import context
from sqlalchemy.engine import Connection

from alertrouter.settings import get_settings
from alertrouter.store.db import Database
from alertrouter.store.tables import Base, UTCDateTime

target_metadata = Base.metadata


def _url() -> str:
    url = context.config.attributes.get("database_url")
    return str(url) if url else get_settings().database_url


def _render_item(type_: str, obj: object, autogen_context: object) -> str | bool:
    """Render our column types as plain SQLAlchemy ones, so migrations never import the app."""
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime()"
    return False


def _run(connection: Connection) -> None:
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

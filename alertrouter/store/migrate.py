"""Alembic, driven from code: `alertrouter db upgrade`, and automatically on `serve`."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

from alertrouter.paths import data_dir

__all__ = ["alembic_config", "head_revision", "upgrade"]


def alembic_config(database_url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(data_dir("migrations")))
    cfg.attributes["database_url"] = database_url
    return cfg


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    if head is None:
        raise RuntimeError("no migrations found")
    return head


def upgrade(database_url: str, revision: str = "head") -> None:
    """Apply migrations. Synchronous: call before the event loop starts, or in a worker thread."""
    command.upgrade(alembic_config(database_url), revision)

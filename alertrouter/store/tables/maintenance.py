"""Maintenance windows: a node whose alerts are stored and shown but not sent (`pipeline.maintenance`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import String, Text
from sqlalchemy.orm import Mapped, mapped_column

from alertrouter.model import NAME_MAX
from alertrouter.store.tables.base import Base

__all__ = ["MaintenanceRow"]


class MaintenanceRow(Base):
    """One node in maintenance from `starts_at` until `ends_at`, started by `created_by` for `reason`.
    One row per node, so ending one node's window early leaves its neighbours' alone; ending it sets
    `ends_at` (and `ended_by`), and `updated_at` tells the engine. `source`: `manual` (the CLI, the API,
    the console) for every row written today."""

    __tablename__ = "maintenance"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    node: Mapped[str] = mapped_column(String(NAME_MAX), index=True)
    source: Mapped[str] = mapped_column(String(32), default="manual")
    reason: Mapped[str] = mapped_column(Text, default="")
    starts_at: Mapped[datetime]
    ends_at: Mapped[datetime] = mapped_column(index=True)
    created_by: Mapped[str] = mapped_column(String(NAME_MAX))
    ended_by: Mapped[str | None] = mapped_column(String(NAME_MAX))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime] = mapped_column(index=True)

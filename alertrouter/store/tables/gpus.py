"""GPUs by their own identity (the UUID dcgm-exporter reports) and what happened to each: the history the
RMA rules read, which survives node renames and the GPU moving to another slot or node."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from alertrouter.model import NAME_MAX
from alertrouter.store.tables.base import Base

__all__ = ["GpuEventRow", "GpuRow"]


class GpuRow(Base):
    """One row per UUID: what its latest sighting said (node, slot, PCI bus id; serial and model kept
    from an earlier one when a later alert lacks them) and when it was first and last seen (received)."""

    __tablename__ = "gpus"

    uuid: Mapped[str] = mapped_column(String(NAME_MAX), primary_key=True)
    serial: Mapped[str | None] = mapped_column(String(NAME_MAX))
    model: Mapped[str | None] = mapped_column(String(NAME_MAX))
    node: Mapped[str | None] = mapped_column(String(NAME_MAX))
    slot: Mapped[str | None] = mapped_column(String(NAME_MAX))
    pci_bus_id: Mapped[str | None] = mapped_column(String(NAME_MAX))
    first_seen: Mapped[datetime]
    last_seen: Mapped[datetime]


class GpuEventRow(Base):
    """One alert episode about one GPU: `at` is the alert's `startsAt` (an alert that started before it
    arrived counts from then), `node`/`slot` where that alert saw the UUID. Unique by GPU, alert and
    start, so a re-sent or HA-twinned alert is one event."""

    __tablename__ = "gpu_events"
    __table_args__ = (UniqueConstraint("uuid", "fingerprint", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    uuid: Mapped[str] = mapped_column(String(NAME_MAX))
    alertname: Mapped[str] = mapped_column(String(NAME_MAX))
    xid: Mapped[int | None] = mapped_column(Integer)
    at: Mapped[datetime]
    node: Mapped[str | None] = mapped_column(String(NAME_MAX))
    slot: Mapped[str | None] = mapped_column(String(NAME_MAX))
    fingerprint: Mapped[str] = mapped_column(String(32))

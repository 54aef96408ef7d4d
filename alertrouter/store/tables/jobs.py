"""Jobs hit by alerts: one row per episode of a job being hit (opened, updated while more of its nodes are
hit, resolved when they recover or the job is gone), what the jobs API, the console and the digest read."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Float, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from alertrouter.model import NAME_MAX
from alertrouter.store.tables.base import Base, JSONType

__all__ = ["NOTE_MAX", "JobHitRow"]

NOTE_MAX = 1000


class JobHitRow(Base):
    """`since`: the earliest start of the alerts hitting it; `nodes`/`nodes_down`: the first nodes (sorted),
    `node_count`/`down_count` all of them; `gpu_seconds`: GPUs lost x seconds, summed at each change up to
    `updated_at` (and `resolved_at`); `peak_gpus_lost`: the most lost at once."""

    __tablename__ = "job_hits"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    namespace: Mapped[str] = mapped_column(String(NAME_MAX))
    name: Mapped[str] = mapped_column(String(NAME_MAX))
    source: Mapped[str] = mapped_column(String(16))
    detail: Mapped[str] = mapped_column(String(NAME_MAX))
    note: Mapped[str] = mapped_column(String(NOTE_MAX))
    since: Mapped[datetime] = mapped_column(index=True)
    opened_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    resolved_at: Mapped[datetime | None] = mapped_column(index=True)  # null: hit now
    nodes: Mapped[list[str]] = mapped_column(JSONType)
    nodes_down: Mapped[list[str]] = mapped_column(JSONType)
    incidents: Mapped[list[str]] = mapped_column(JSONType)  # the keys of the incidents its alerts are in
    node_count: Mapped[int] = mapped_column(Integer)
    down_count: Mapped[int] = mapped_column(Integer)
    gpus_lost: Mapped[int] = mapped_column(Integer)
    peak_gpus_lost: Mapped[int] = mapped_column(Integer)
    alerts: Mapped[int] = mapped_column(Integer)
    job_nodes: Mapped[int] = mapped_column(Integer)
    gpu_seconds: Mapped[float] = mapped_column(Float)
    cause: Mapped[str] = mapped_column(String(16))  # hardware, application or "" (`jobs.impact`)

"""Who does what among replicas and when: leases, scheduled runs, heartbeats heard."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from alertrouter.model import KEY_MAX, NAME_MAX
from alertrouter.store.tables.base import Base

__all__ = ["HeartbeatRow", "LeaseRow", "ScheduledRunRow"]


class LeaseRow(Base):
    """Leadership among replicas: one engine pass at a time over a shared database."""

    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(128))
    expires_at: Mapped[datetime]


class ScheduledRunRow(Base):
    """One run of a scheduled job for one period (a digest for one receiver and week), claimed with an
    insert or a conditional update so two schedulers, even two leaders, never both do it. `running`
    with an expired `claimed_until` is a crashed run, claimable again; `done` is final."""

    __tablename__ = "scheduled_runs"
    __table_args__ = (UniqueConstraint("job", "period"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job: Mapped[str] = mapped_column(String(KEY_MAX))  # `digest:<receiver>`, `housekeeping`
    period: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16))  # running | done | failed
    holder: Mapped[str] = mapped_column(String(128))
    claimed_until: Mapped[datetime]
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    error: Mapped[str | None] = mapped_column(Text)
    detail: Mapped[dict[str, Any] | None]


class HeartbeatRow(Base):
    """When each configured heartbeat (`heartbeats:` in the rules) was last heard from, shared by every
    replica and kept across restarts. `missing_since` is set while its alert is raised (the time it fell
    silent), so a restart neither forgets a silence nor raises it twice; a row whose heartbeat left the
    rules stays (a heartbeat put back resumes from it)."""

    __tablename__ = "heartbeats"

    name: Mapped[str] = mapped_column(String(NAME_MAX), primary_key=True)
    watched_since: Mapped[datetime]  # first watched: a heartbeat never heard from is silent since then
    last_seen: Mapped[datetime | None]
    seen_via: Mapped[str | None] = mapped_column(String(16))  # "alert" or "http"
    missing_since: Mapped[datetime | None]
    alert_labels: Mapped[dict[str, str] | None]  # the raised alert's labels (to resolve it if the rules change)

"""Alerts as received and stored: the live rows, their episodes, events and the raw payloads."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from alertrouter.model import KEY_MAX, NAME_MAX
from alertrouter.store.tables.base import Base

__all__ = ["AlertChangeCounterRow", "AlertEpisodeRow", "AlertEventRow", "AlertRow", "RawEventRow"]


class AlertRow(Base):
    """One row per fingerprint: its labels and its latest episode's state."""

    __tablename__ = "alerts"

    fingerprint: Mapped[str] = mapped_column(String(32), primary_key=True)
    alertname: Mapped[str] = mapped_column(String(NAME_MAX))  # no index: nothing reads by it (migration 0018)
    status: Mapped[str] = mapped_column(String(16), index=True)
    labels: Mapped[dict[str, str]]
    annotations: Mapped[dict[str, str]]
    starts_at: Mapped[datetime]
    ends_at: Mapped[datetime | None]
    resolved_by: Mapped[str | None] = mapped_column(String(16))
    generator_url: Mapped[str] = mapped_column(Text, default="")
    episodes: Mapped[int] = mapped_column(Integer, default=1)
    first_seen: Mapped[datetime]
    last_seen: Mapped[datetime]
    updated_at: Mapped[datetime] = mapped_column(index=True)
    # When we first received the current episode firing: hold-downs count from here, not from startsAt.
    fired_at: Mapped[datetime | None]
    # The engine's latest decision about this alert, and why (see alertrouter.engine).
    node: Mapped[str | None] = mapped_column(String(NAME_MAX))  # no index: nothing reads by it (migration 0018)
    incident_key: Mapped[str | None] = mapped_column(String(KEY_MAX), index=True)
    decision: Mapped[str | None] = mapped_column(String(32), index=True)
    decision_detail: Mapped[dict[str, Any] | None]
    decided_at: Mapped[datetime | None]
    # Set by the database on every insert and every update of `updated_at` (triggers of migration 0015),
    # never by this code: the engine reads changes by it (`store.incidents.change_cursor`).
    change_seq: Mapped[int | None] = mapped_column(BigInteger, index=True)


class AlertChangeCounterRow(Base):
    """SQLite's source of `alerts.change_seq` (one row, id 1); unused on PostgreSQL, where the
    sequence is the writing transaction's id."""

    __tablename__ = "alert_change_counter"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    value: Mapped[int] = mapped_column(BigInteger)


class AlertEpisodeRow(Base):
    """A firing period of one alert, identified by its `startsAt`; firing again is a new episode."""

    __tablename__ = "alert_episodes"
    __table_args__ = (UniqueConstraint("fingerprint", "starts_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    fingerprint: Mapped[str] = mapped_column(String(32))
    starts_at: Mapped[datetime]
    ends_at: Mapped[datetime | None]
    resolved_by: Mapped[str | None] = mapped_column(String(16))
    opened_at: Mapped[datetime]
    closed_at: Mapped[datetime | None]


class AlertEventRow(Base):
    """History: every state transition an alert went through, and which webhook caused it."""

    __tablename__ = "alert_events"
    __table_args__ = (
        Index("ix_alert_events_fingerprint_at", "fingerprint", "at"),
        Index("ix_alert_events_at", "at"),
        Index("ix_alert_events_raw_event_id", "raw_event_id"),  # pruning raw events nulls these
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    fingerprint: Mapped[str] = mapped_column(String(32))
    kind: Mapped[str] = mapped_column(String(32))
    at: Mapped[datetime]
    episode_starts_at: Mapped[datetime]
    raw_event_id: Mapped[int | None]
    detail: Mapped[dict[str, Any] | None]


class RawEventRow(Base):
    """Every distinct payload received, for audit and replay; bounded by the retention setting.

    `digest` covers the payload without `externalURL`, so the same notification from both
    Alertmanagers of an HA pair, or a retry, is stored once.
    """

    __tablename__ = "raw_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    received_at: Mapped[datetime] = mapped_column(index=True)
    source: Mapped[str] = mapped_column(String(16))
    receiver: Mapped[str | None] = mapped_column(String(NAME_MAX))
    group_key: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str | None] = mapped_column(String(16))
    external_url: Mapped[str | None] = mapped_column(Text)
    alert_count: Mapped[int] = mapped_column(Integer)
    truncated_alerts: Mapped[int] = mapped_column(Integer, default=0)
    rejected_alerts: Mapped[int] = mapped_column(Integer, default=0)
    # Written beside the rows' JSON document on PostgreSQL, not inside it (store/bulksql.py `pg_sql`).
    body: Mapped[str] = mapped_column(Text, info={"bulk": "apart"})

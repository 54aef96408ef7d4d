"""Deliveries: one row per notification and channel, its attempts, each channel's state, sends per recipient."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from alertrouter.model import KEY_MAX, NAME_MAX
from alertrouter.store.tables.base import Base

__all__ = ["ChannelStateRow", "DeliveryAttemptRow", "DeliveryRow", "RecipientSendRow"]


class DeliveryRow(Base):
    """One notification for one channel: what the delivery loop claims, sends, retries and records.

    Statuses: pending (due at `next_attempt_at`), sending (claimed until `claimed_until`; a crashed
    worker's claim expires and the row is retried), sent (the vendor said ok), dead (permanent failure
    or gave up: a dead letter), coalesced / failed_over (merged into, or moved to, `parent_id`),
    split (a coalesced message that failed unexpectedly; its members went back to pending, each to be
    sent alone), unconfigured (the channel has no credentials in this deployment).
    """

    __tablename__ = "deliveries"
    __table_args__ = (Index("ix_deliveries_channel_status_next", "channel", "status", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    outbox_id: Mapped[int | None] = mapped_column(ForeignKey("outbox.id", ondelete="SET NULL"), index=True)
    parent_id: Mapped[int | None] = mapped_column(Integer, index=True)
    incident_key: Mapped[str | None] = mapped_column(String(KEY_MAX), index=True)
    incident_id: Mapped[int | None] = mapped_column(Integer)
    receiver: Mapped[str] = mapped_column(String(NAME_MAX))
    channel: Mapped[str] = mapped_column(String(NAME_MAX))
    kind: Mapped[str] = mapped_column(String(16))
    severity: Mapped[str] = mapped_column(Text)  # a label value, as long as ingest allows
    severity_rank: Mapped[int] = mapped_column(Integer)
    message: Mapped[dict[str, Any]]
    status: Mapped[str] = mapped_column(String(16), index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime]
    next_attempt_at: Mapped[datetime]
    claimed_until: Mapped[datetime | None]
    sent_at: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    # Failures that were not the vendor's (an exception other than ChannelError): a delivery with one
    # is sent alone, never coalesced, and is a dead letter after `delivery.policy.MAX_UNEXPECTED`.
    unexpected_failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class DeliveryAttemptRow(Base):
    """One request to a vendor, written before it is made (`in_flight`) and completed after; the rate
    budget of a robot is counted from these rows, so every replica sees the same budget."""

    __tablename__ = "delivery_attempts"
    __table_args__ = (Index("ix_delivery_attempts_channel_started", "channel", "started_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    delivery_id: Mapped[int] = mapped_column(ForeignKey("deliveries.id", ondelete="CASCADE"), index=True)
    channel: Mapped[str] = mapped_column(String(NAME_MAX))
    worker: Mapped[str] = mapped_column(String(128))
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    outcome: Mapped[str] = mapped_column(String(16))  # in_flight | sent | retry | rate_limited | dead | lost
    error: Mapped[str | None] = mapped_column(Text)


class ChannelStateRow(Base):
    """Per channel: which replica works it now (a lease), whether the vendor blocked it, its health."""

    __tablename__ = "channel_state"

    name: Mapped[str] = mapped_column(String(NAME_MAX), primary_key=True)
    holder: Mapped[str | None] = mapped_column(String(128))
    lease_until: Mapped[datetime | None]
    blocked_until: Mapped[datetime | None]
    retry_at: Mapped[datetime | None]
    coalesce_backlog: Mapped[bool] = mapped_column(Boolean, default=False)
    healthy: Mapped[bool] = mapped_column(Boolean, default=True)
    consecutive_failures: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    last_ok_at: Mapped[datetime | None]
    last_failure_at: Mapped[datetime | None]


class RecipientSendRow(Base):
    """Messages sent per recipient (SMS numbers), for the per-number daily cap."""

    __tablename__ = "recipient_sends"
    __table_args__ = (Index("ix_recipient_sends_channel_recipient_sent", "channel", "recipient", "sent_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    channel: Mapped[str] = mapped_column(String(NAME_MAX))
    recipient: Mapped[str] = mapped_column(String(NAME_MAX))
    sent_at: Mapped[datetime]

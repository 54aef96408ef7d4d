"""What the engine decides and keeps: incidents, what receivers were told, the outbox, silences,
learned node aliases and escalation chains."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from alertrouter.model import KEY_MAX, NAME_MAX, OutboxStatus
from alertrouter.store.tables.base import Base, JSONType

__all__ = ["EscalationRow", "IncidentRow", "NodeAliasRow", "NotifyStateRow", "OutboxRow", "SilenceRow"]


class IncidentRow(Base):
    """What a person is told about: a node incident (alerts of one kind on one node) or a cluster
    incident (a storm of node incidents). Reopened under the same key when its alerts fire again."""

    __tablename__ = "incidents"
    __table_args__ = (
        # the incident lists, read in order from these (store/console.py, store/queries.py)
        Index("ix_incidents_status_kind_updated", "status", "kind", "updated_at", "id"),
        Index("ix_incidents_status_updated", "status", "updated_at", "id"),
        # the acknowledged ones, which the engine reads every pass (store/incidents.load_acknowledged)
        Index(
            "ix_incidents_acknowledged",
            "status",
            "updated_at",
            sqlite_where=text("acknowledged_at IS NOT NULL"),
            postgresql_where=text("acknowledged_at IS NOT NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(KEY_MAX), unique=True)
    kind: Mapped[str] = mapped_column(String(16))  # node | cluster
    rule: Mapped[str] = mapped_column(String(NAME_MAX))
    status: Mapped[str] = mapped_column(String(16), index=True)  # firing | resolved
    severity: Mapped[str] = mapped_column(Text)  # a label value, as long as ingest allows
    headline: Mapped[str] = mapped_column(Text)
    labels: Mapped[dict[str, str]]
    summary: Mapped[dict[str, Any]]
    parent_key: Mapped[str | None] = mapped_column(String(KEY_MAX), index=True)
    opened_at: Mapped[datetime]
    active_since: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(index=True)
    resolved_at: Mapped[datetime | None]
    acknowledged_at: Mapped[datetime | None]
    acknowledged_by: Mapped[str | None] = mapped_column(String(NAME_MAX))


class NotifyStateRow(Base):
    """What each receiver was last told about each incident (Alertmanager's notification log)."""

    __tablename__ = "notify_state"

    incident_key: Mapped[str] = mapped_column(String(KEY_MAX), primary_key=True)
    receiver: Mapped[str] = mapped_column(String(NAME_MAX), primary_key=True)
    last_sent_at: Mapped[datetime]
    firing: Mapped[list[str]] = mapped_column(JSONType)
    repeats: Mapped[int] = mapped_column(Integer, default=0)
    since: Mapped[datetime | None]  # when the episode it was told of began (NotifyState.since)
    last_reason: Mapped[str] = mapped_column(String(16))


class OutboxRow(Base):
    """A notification intended for a receiver, written in the engine's transaction; delivered later.

    Statuses: pending (not yet expanded into deliveries), dispatched, no_channels, quarantined (its
    expansion raised; `last_error` says why, and no later pass looks at it again)."""

    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_status_next", "status", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    incident_key: Mapped[str] = mapped_column(String(KEY_MAX), index=True)
    receiver: Mapped[str] = mapped_column(String(NAME_MAX))
    reason: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime]
    message: Mapped[dict[str, Any]]
    status: Mapped[str] = mapped_column(String(16), default=OutboxStatus.PENDING.value)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime]
    last_error: Mapped[str | None] = mapped_column(Text)
    sent_at: Mapped[datetime | None]


class SilenceRow(Base):
    """Alertmanager-style silence: alerts whose labels match every matcher are muted between
    `starts_at` and `ends_at`. Expiring one early sets `ends_at`; `updated_at` tells the engine."""

    __tablename__ = "silences"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    matchers: Mapped[list[str]] = mapped_column(JSONType)  # each in Alertmanager syntax: node="gpu-node-07"
    starts_at: Mapped[datetime]
    ends_at: Mapped[datetime] = mapped_column(index=True)
    created_by: Mapped[str] = mapped_column(String(NAME_MAX))
    comment: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime] = mapped_column(index=True)


class NodeAliasRow(Base):
    """An address learned to be a node, from an alert that carried both (`pipeline.aliases`): written
    by the engine's leader, read by every replica when it takes the lease, and by the API. Rows not
    seen for `topology.learned_alias_ttl` are ignored, then pruned by housekeeping (`last_seen`)."""

    __tablename__ = "node_aliases"

    address: Mapped[str] = mapped_column(String(NAME_MAX), primary_key=True)
    node: Mapped[str] = mapped_column(String(NAME_MAX), index=True)
    first_seen: Mapped[datetime]
    last_seen: Mapped[datetime] = mapped_column(index=True)
    learned_from: Mapped[str] = mapped_column(String(NAME_MAX))  # the alertname of the alert last seen claiming it
    fingerprint: Mapped[str] = mapped_column(String(32))  # and that alert
    # A conflict (the address claimed by another name, which won as the most recent claim): the name
    # it had, and when it changed.
    previous_node: Mapped[str | None] = mapped_column(String(NAME_MAX))
    changed_at: Mapped[datetime | None]
    # A move to another name held until a second alert or the Prometheus lookup agrees (`aliases.Held`):
    # the name, the one alert claiming it, and since when.
    held_node: Mapped[str | None] = mapped_column(String(NAME_MAX))
    held_from: Mapped[str | None] = mapped_column(String(NAME_MAX))
    held_fingerprint: Mapped[str | None] = mapped_column(String(32))
    held_since: Mapped[datetime | None]


class EscalationRow(Base):
    """Where an incident's escalation chain stands: the next step to take and when, or why it stopped.
    Written by the engine's leader under its lease, step by step (a step is taken with a conditional
    update on `next_step`), so a restart or another replica taking over neither repeats nor skips one.
    One row per chain: a new occurrence of the incident (it resolved and fired again) starts a new one;
    at most one chain per incident is running (`stopped` null). `history` is what was done, in order:
    steps taken (with their receivers) and the stop."""

    __tablename__ = "escalations"
    __table_args__ = (Index("ix_escalations_incident_started", "incident_key", "started_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    incident_key: Mapped[str] = mapped_column(String(KEY_MAX))
    policy: Mapped[str] = mapped_column(String(NAME_MAX))
    started_at: Mapped[datetime]
    next_step: Mapped[int] = mapped_column(Integer, default=0)
    steps: Mapped[int] = mapped_column(Integer)  # how many the policy had when the chain started
    next_at: Mapped[datetime | None] = mapped_column(index=True)
    stopped: Mapped[str | None] = mapped_column(
        String(16), index=True
    )  # acknowledged | resolved | exhausted | policy_gone
    stopped_at: Mapped[datetime | None]
    stopped_by: Mapped[str | None] = mapped_column(String(NAME_MAX))
    history: Mapped[list[dict[str, Any]]] = mapped_column(JSONType)
    updated_at: Mapped[datetime]

"""Response shapes of the read API: snake_case, since this is alertrouter's API, not Alertmanager's."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = [
    "AlertDetail",
    "AlertEventRead",
    "AlertList",
    "AlertRead",
    "EpisodeRead",
    "EscalationRead",
    "IncidentDetail",
    "IncidentList",
    "IncidentRead",
    "NotificationRead",
    "NotifyStateRead",
    "RawEventRead",
]


class _Read(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class AlertRead(_Read):
    fingerprint: str
    alertname: str
    status: str
    labels: dict[str, str]
    annotations: dict[str, str]
    starts_at: datetime
    ends_at: datetime | None
    resolved_by: str | None
    generator_url: str
    episodes: int
    first_seen: datetime
    last_seen: datetime
    updated_at: datetime
    node: str | None = None
    # What named `node`: `label:<name>` (e.g. `label:Hostname`), `configured` (`topology.aliases`),
    # `prometheus` (the lookup), `learned` (a learned alias) or `instance` (its address, port dropped).
    node_source: str | None = None
    # Labels node identity adds for the alert's node (`topology.nodes`, then what the Prometheus lookup
    # read from kube_node_labels), those the alert lacks only: its own labels win, as in the engine.
    topology: dict[str, str] = {}
    incident_key: str | None = None
    decision: str | None = None
    decision_detail: dict[str, Any] | None = None
    decided_at: datetime | None = None


class AlertList(BaseModel):
    alerts: list[AlertRead]
    total: int
    limit: int
    offset: int


class EpisodeRead(_Read):
    starts_at: datetime
    ends_at: datetime | None
    resolved_by: str | None
    opened_at: datetime
    closed_at: datetime | None


class AlertEventRead(_Read):
    kind: str
    at: datetime
    episode_starts_at: datetime
    raw_event_id: int | None
    detail: dict[str, Any] | None


class AlertDetail(BaseModel):
    alert: AlertRead
    episodes: list[EpisodeRead]
    events: list[AlertEventRead]


class RawEventRead(_Read):
    """A received payload as logged; `body` (the original bytes as text) only on the single-event view."""

    id: int
    received_at: datetime
    source: str
    receiver: str | None
    group_key: str | None
    status: str | None
    external_url: str | None
    alert_count: int
    truncated_alerts: int
    rejected_alerts: int
    body: str | None = None


class IncidentRead(_Read):
    id: int
    key: str
    kind: str
    rule: str
    status: str
    severity: str
    headline: str
    labels: dict[str, str]
    summary: dict[str, Any]
    parent_key: str | None
    opened_at: datetime
    active_since: datetime | None
    updated_at: datetime
    resolved_at: datetime | None
    acknowledged_at: datetime | None


class IncidentList(BaseModel):
    incidents: list[IncidentRead]
    total: int
    limit: int
    offset: int


class NotificationRead(_Read):
    id: int
    incident_key: str
    receiver: str
    reason: str
    created_at: datetime
    status: str
    attempts: int
    next_attempt_at: datetime
    last_error: str | None
    sent_at: datetime | None
    message: dict[str, Any]


class NotifyStateRead(_Read):
    receiver: str
    last_sent_at: datetime
    repeats: int
    last_reason: str


class EscalationRead(BaseModel):
    """The incident's latest escalation chain: steps taken of `steps`, when the next is due, or why it
    stopped (acknowledged, resolved, exhausted, ...) and by whom; `history` lists what was done."""

    model_config = ConfigDict(from_attributes=True)

    policy: str
    started_at: datetime
    next_step: int
    steps: int
    next_at: datetime | None
    stopped: str | None
    stopped_at: datetime | None
    stopped_by: str | None
    history: list[dict[str, Any]]


class IncidentDetail(BaseModel):
    incident: IncidentRead
    alerts: list[AlertRead]
    members: list[IncidentRead]
    receivers: list[NotifyStateRead]
    notifications: list[NotificationRead]
    escalation: EscalationRead | None = None

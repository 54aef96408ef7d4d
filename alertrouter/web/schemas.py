"""Response shapes of the read API: snake_case, since this is alertrouter's API, not Alertmanager's."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["AlertDetail", "AlertEventRead", "AlertList", "AlertRead", "EpisodeRead", "RawEventRead"]


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

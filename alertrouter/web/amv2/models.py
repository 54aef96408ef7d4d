"""Alertmanager's API v2 shapes (its `api/v2/openapi.yaml`): snake_case here, camelCase on the wire.

The camelCase names are Alertmanager's, so they live only here, as aliases; answers are dumped with
`wire()`. The required fields of Alertmanager's schema are required here too; the posted silence
(`PostableSilence`) is checked by hand in `alertrouter.web.amv2.silences`, for Alertmanager's error shapes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AlertGroup",
    "AlertStatus",
    "AlertmanagerConfig",
    "AlertmanagerStatus",
    "ClusterStatus",
    "GettableAlert",
    "GettableSilence",
    "MatcherModel",
    "Receiver",
    "SilenceStatus",
    "VersionInfo",
    "wire",
]


class _Wire(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


def wire(model: BaseModel | list[Any]) -> Any:
    """A model (or a list of them) as JSON-ready data with Alertmanager's field names."""
    if isinstance(model, list):
        return [wire(item) for item in model]
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class Receiver(_Wire):
    name: str


class AlertStatus(_Wire):
    """`suppressed` when inhibited, silenced or muted by a time interval; `unprocessed` when the
    engine has not decided about the alert yet (or has quarantined it)."""

    state: Literal["active", "suppressed", "unprocessed"]
    silenced_by: list[str] = Field(alias="silencedBy")
    inhibited_by: list[str] = Field(alias="inhibitedBy")
    muted_by: list[str] = Field(alias="mutedBy")


class GettableAlert(_Wire):
    labels: dict[str, str]
    annotations: dict[str, str]
    starts_at: datetime = Field(alias="startsAt")
    ends_at: datetime = Field(alias="endsAt")
    updated_at: datetime = Field(alias="updatedAt")
    generator_url: str | None = Field(None, alias="generatorURL")  # omitted when empty, as Alertmanager does
    fingerprint: str
    receivers: list[Receiver]
    status: AlertStatus


class AlertGroup(_Wire):
    labels: dict[str, str]
    receiver: Receiver
    alerts: list[GettableAlert]


class MatcherModel(_Wire):
    name: str
    value: str
    is_regex: bool = Field(alias="isRegex")
    is_equal: bool = Field(True, alias="isEqual")


class SilenceStatus(_Wire):
    state: Literal["active", "pending", "expired"]


class GettableSilence(_Wire):
    id: str
    status: SilenceStatus
    updated_at: datetime = Field(alias="updatedAt")
    matchers: list[MatcherModel]
    starts_at: datetime = Field(alias="startsAt")
    ends_at: datetime = Field(alias="endsAt")
    created_by: str = Field(alias="createdBy")
    comment: str


class ClusterStatus(_Wire):
    """alertrouter's replicas share the store, not a gossip cluster: always `disabled`, no peers."""

    status: Literal["ready", "settling", "disabled"]
    peers: list[dict[str, str]]


class VersionInfo(_Wire):
    version: str
    revision: str
    branch: str
    build_user: str = Field(alias="buildUser")
    build_date: str = Field(alias="buildDate")
    go_version: str = Field(alias="goVersion")


class AlertmanagerConfig(_Wire):
    original: str


class AlertmanagerStatus(_Wire):
    cluster: ClusterStatus
    version_info: VersionInfo = Field(alias="versionInfo")
    config: AlertmanagerConfig
    uptime: datetime

"""The `heartbeats:` section: each alert source that must be heard from, how it is recognised, how
long its silence is tolerated, and the labels of the incident alertrouter raises when it is not."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta

from pydantic import Field, field_validator

from alertrouter.labels import Matcher, is_valid_label_name
from alertrouter.model import HEARTBEAT_ALERTNAME, HEARTBEAT_LABEL
from alertrouter.ruleset.base import Duration, Matchers, Name, Section

__all__ = ["DEFAULT_TIMEOUT", "HeartbeatConfig"]

# Alertmanager re-sends the always-firing Watchdog each `repeat_interval` (1m in the shipped
# alertmanager.yml, after a `group_interval` of 1m): 5m tolerates a few lost re-sends.
DEFAULT_TIMEOUT = timedelta(minutes=5)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")  # a URL path segment as written: no quoting needed
_OWN_LABELS = ("alertname", HEARTBEAT_LABEL)


class HeartbeatConfig(Section):
    """A source alertrouter expects to hear from: an alert matching `matchers` that fires (Prometheus'
    always-firing `Watchdog`, through Alertmanager) or a `POST /api/v1/heartbeats/<name>` refreshes it;
    silent for `timeout`, alertrouter raises its own alert, resolved when the source is heard again.
    A source never heard from is waiting (its sender is not pointed at alertrouter yet), never "lost"."""

    name: Name = Field(description="Names the heartbeat in its URL, its alert's `heartbeat` label and the console")
    matchers: Matchers = Field(
        default_factory=list,
        description="Firing alerts that count as the source being alive; none: only the HTTP endpoint refreshes it",
    )
    timeout: Duration = Field(
        DEFAULT_TIMEOUT,
        description="Silence tolerated after the source was last heard before it counts as lost; "
        "a source never heard from is waiting, and is never lost",
    )
    warn_if_never_heard: Duration | None = Field(
        None,
        description="Off by default. Never heard from this long after it was first watched, alertrouter raises one "
        "warning (AlertrouterHeartbeatNeverHeard, severity warning, the other `labels` kept), resolved when "
        "the source is first heard; e.g. 24h, long past an install's setup",
    )
    labels: dict[str, str] = Field(
        default_factory=lambda: {"severity": "critical"},
        description="Labels of the raised alert, routed like any other (e.g. severity, region, cluster)",
    )
    description: str = Field("", description="Shown in the console and as the raised alert's description")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.fullmatch(value):
            raise ValueError(
                f"{value!r} is not a heartbeat name: letters, digits, '_', '.', '-' (it is part of a URL), "
                "e.g. prometheus-north"
            )
        return value

    @field_validator("timeout", "warn_if_never_heard")
    @classmethod
    def _timeout(cls, value: timedelta | None) -> timedelta | None:
        if value is not None and value < timedelta(seconds=1):
            raise ValueError("must be at least 1s")
        return value

    @field_validator("matchers")
    @classmethod
    def _some_alert(cls, value: list[Matcher]) -> list[Matcher]:
        if value and all(m.matches("") for m in value):
            raise ValueError("these matchers match every alert (each matches an absent label); name the source's alert")
        return value

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not is_valid_label_name(name):
                raise ValueError(f"invalid label name {name!r}")
            if name in _OWN_LABELS:
                raise ValueError(f"{name!r} is set by alertrouter ({HEARTBEAT_ALERTNAME}, heartbeat=<name>)")
        return value

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether an alert with these labels is this heartbeat's (never without matchers)."""
        return bool(self.matchers) and all(m.matches(labels.get(m.name, "")) for m in self.matchers)

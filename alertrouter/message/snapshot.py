"""The outbox message: what the engine decided to tell about one incident, as every later stage reads it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from alertrouter.message.facts import Facts, NodeFacts, facts_from_json
from alertrouter.message.rma import RmaNote, rma_notes_from_json
from alertrouter.model import HEARTBEAT_ALERTNAME, HEARTBEAT_LABEL, AlertStatus, IncidentKind, parse_time

__all__ = ["AlertItem", "MessageError", "MessageSnapshot"]


class MessageError(ValueError):
    """A stored message whose shape is not a message's (the key and what was found)."""


def _get(d: Mapping[str, Any], key: str, kind: type | tuple[type, ...], what: str, default: Any) -> Any:
    value = d.get(key)
    if value is None:
        return default
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise MessageError(f"{key}: expected {what}, got {type(value).__name__}")
    return value


def _strings(d: Mapping[str, Any], key: str) -> dict[str, str]:
    value = _get(d, key, Mapping, "an object", {})
    for name, text in value.items():
        if not isinstance(name, str) or not isinstance(text, str):
            raise MessageError(f"{key}: expected text names and values, got {type(text).__name__} for {name!r}")
    return dict(value)


def _when(d: Mapping[str, Any], key: str) -> datetime | None:
    text = _get(d, key, str, "an ISO-8601 time", "")
    if not text:
        return None
    if (t := parse_time(text)) is None:
        raise MessageError(f"{key}: expected an ISO-8601 time, got {text[:40]!r}")
    return t


def _object(data: object) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise MessageError(f"expected an object, got {type(data).__name__}")
    return data


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


@dataclass(frozen=True, slots=True)
class AlertItem:
    """One alert of a message: as the engine saw it, and with what the delivery loop adds before
    sending (the annotations a message shows, when it started)."""

    fingerprint: str
    labels: Mapping[str, str]
    firing: bool
    annotations: Mapping[str, str] | None = None  # None until the delivery loop adds them
    starts_at: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"fingerprint": self.fingerprint, "labels": dict(self.labels), "firing": self.firing}
        if self.annotations is not None:
            data["annotations"] = dict(self.annotations)
        if self.starts_at is not None:
            data["starts_at"] = self.starts_at.isoformat()
        return data

    @classmethod
    def from_json(cls, data: object) -> AlertItem:
        """A missing key gets its empty value; a key of the wrong type raises `MessageError`."""
        d = _object(data)
        notes = d.get("annotations")
        return cls(
            fingerprint=_get(d, "fingerprint", str, "text", ""),
            labels=_strings(d, "labels"),
            firing=_get(d, "firing", bool, "true or false", True),
            annotations=None if notes is None else _strings(d, "annotations"),
            starts_at=_when(d, "starts_at"),
        )


@dataclass(frozen=True, slots=True)
class MessageSnapshot:
    """What to tell about one incident, frozen when the engine decided it: stored in the outbox as
    `to_json()`, read back with `from_json()` by the delivery loop, the channels, the renderer and the
    console, so every stage sees the same fields with the same types.

    `reason` is the throttle's `NotifyReason` (first, grew, repeat, resolved); `summary` holds the
    incident's facts of its kind (`message.facts`: a node's units and counts, a storm's nodes and members),
    as the engine states them (`pipeline.incident.node_facts`, `pipeline.storms.storm_state`); `alerts` are at most
    `pipeline.incident.MAX_ALERTS_IN_MESSAGE` of the incident's alerts.

    `started_at` is the alerts' own start (the earliest `startsAt`), `ended_at` a resolved incident's end
    (the `endsAt` that resolved it): what "since" and "lasted" say. `opened_at` is when alertrouter opened
    the incident; a row stored before the alerts' times were (None) is told from it and from `at`."""

    incident: str
    kind: IncidentKind
    reason: str
    status: AlertStatus
    severity: str
    headline: str
    labels: Mapping[str, str] = field(default_factory=dict)
    summary: Facts = field(default_factory=NodeFacts)
    alerts: tuple[AlertItem, ...] = ()
    opened_at: datetime | None = None
    at: datetime | None = None  # when it was decided
    started_at: datetime | None = None
    ended_at: datetime | None = None
    rma: tuple[RmaNote, ...] = ()  # its GPUs that the `rma:` rules make candidates (`engine.gpus`)

    @property
    def resolved(self) -> bool:
        return self.status is AlertStatus.RESOLVED

    @property
    def alertname(self) -> str:
        """The alert name its facts give, else its labels' (a row stored before the facts were)."""
        return self.summary.alertname or self.labels.get("alertname", "")

    @property
    def heartbeat(self) -> str | None:
        """The silent heartbeat a `HEARTBEAT_ALERTNAME` incident is about (`alertrouter.liveness`), else None."""
        if self.alertname != HEARTBEAT_ALERTNAME:
            return None
        return self.labels.get(HEARTBEAT_LABEL) or None

    def to_json(self) -> dict[str, Any]:
        """The alerts' times only when known, so a row reads as before where they are not."""
        out = {
            "incident": self.incident,
            "kind": self.kind.value,
            "reason": self.reason,
            "status": self.status.value,
            "severity": self.severity,
            "headline": self.headline,
            "labels": dict(self.labels),
            "summary": self.summary.to_json(),
            "alerts": [a.to_json() for a in self.alerts],
            "opened_at": _iso(self.opened_at),
            "at": _iso(self.at),
        }
        if self.started_at is not None:
            out["started_at"] = self.started_at.isoformat()
        if self.ended_at is not None:
            out["ended_at"] = self.ended_at.isoformat()
        if self.rma:
            out["rma"] = [note.to_json() for note in self.rma]
        return out

    @classmethod
    def from_json(cls, data: object) -> MessageSnapshot:
        """What `to_json` wrote (an older row may lack keys: they get their empty values); a key of the
        wrong type raises `MessageError` naming it, so a damaged row is refused whole, never half sent."""
        d = _object(data)
        alerts = _get(d, "alerts", list, "a list", [])
        parsed = []
        for n, alert in enumerate(alerts):
            try:
                parsed.append(AlertItem.from_json(alert))
            except MessageError as exc:
                raise MessageError(f"alerts[{n}]: {exc}") from None
        kind = IncidentKind.CLUSTER if _get(d, "kind", str, "text", "") == IncidentKind.CLUSTER else IncidentKind.NODE
        status = _get(d, "status", str, "text", AlertStatus.FIRING)
        return cls(
            incident=_get(d, "incident", str, "text", ""),
            kind=kind,
            reason=_get(d, "reason", str, "text", ""),
            status=AlertStatus.RESOLVED if status == AlertStatus.RESOLVED else AlertStatus.FIRING,
            severity=_get(d, "severity", str, "text", ""),
            headline=_get(d, "headline", str, "text", ""),
            labels=_strings(d, "labels"),
            summary=facts_from_json(kind, _get(d, "summary", Mapping, "an object", {})),
            alerts=tuple(parsed),
            opened_at=_when(d, "opened_at"),
            at=_when(d, "at"),
            started_at=_when(d, "started_at"),
            ended_at=_when(d, "ended_at"),
            rma=rma_notes_from_json(d.get("rma")),
        )

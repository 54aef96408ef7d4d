"""Pure domain types: statuses, incident kinds, what the stages see of an alert, and the outbox message."""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "HEARTBEAT_ALERTNAME",
    "HEARTBEAT_LABEL",
    "KEY_MAX",
    "NAME_MAX",
    "AlertItem",
    "AlertStatus",
    "AlertView",
    "AttemptOutcome",
    "DeliveryStatus",
    "IncidentKind",
    "MessageError",
    "MessageSnapshot",
    "OutboxStatus",
    "RunResult",
    "RunStatus",
    "bounded",
    "parse_time",
    "utcnow",
]


# The two widths of every store column that holds a name or key, whatever wrote it: the store's tables
# are declared with them, ingest refuses a longer alertname or receiver, the rules a longer name
# (`ruleset.base.Name`), and a name or key derived from label values is cut to them (`bounded`). A
# column that holds a label value as it is (a severity) is text. `tests/store/test_column_widths.py`
# walks the tables to keep it so.
KEY_MAX = 512  # characters of an incident key (the incidents, outbox and delivery key columns)
NAME_MAX = 255  # characters of a name: a node, an alertname, a receiver, a channel, an address
_HASHED = 18  # "…#" and 16 hex digits


def bounded(text: str, limit: int) -> str:
    """`text` if it has at most `limit` characters, else its head and a hash of the whole.

    Keys and names derived from label values (incident keys, the node name) go into indexed
    columns of fixed size; a label value may be longer (see `ingest.limits`). Cut this way they
    stay deterministic (the same labels give the same key in every pass and replica), distinct
    (64 bits of hash), and readable from their head."""
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"{text[: limit - _HASHED]}…#{digest}"


def utcnow() -> datetime:
    return datetime.now(UTC)


def parse_time(value: object) -> datetime | None:
    """A datetime or an ISO-8601 text (`Z` or an offset) as an aware datetime (naive ones are UTC, as
    the store keeps them); None for anything else."""
    if isinstance(value, datetime):
        t = value
    elif isinstance(value, str) and value:
        try:
            t = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


class AlertStatus(enum.StrEnum):
    FIRING = "firing"
    RESOLVED = "resolved"


class IncidentKind(enum.StrEnum):
    """What an incident stands for: alerts of one kind on one node, or a storm across many nodes."""

    NODE = "node"
    CLUSTER = "cluster"


class OutboxStatus(enum.StrEnum):
    """A notification for a receiver (an outbox row), on its way to becoming one delivery per channel."""

    PENDING = "pending"  # not yet expanded into deliveries
    DISPATCHED = "dispatched"  # expanded
    NO_CHANNELS = "no_channels"  # its receiver has no channel
    QUARANTINED = "quarantined"  # its expansion raised (`last_error` says why); no pass looks at it again


class DeliveryStatus(enum.StrEnum):
    """One notification for one channel (a delivery row); only `PENDING` and `SENDING` are still open."""

    PENDING = "pending"  # due at `next_attempt_at`
    SENDING = "sending"  # claimed until `claimed_until`; a crashed worker's claim expires and it is retried
    SENT = "sent"  # the vendor said ok
    DEAD = "dead"  # a permanent failure, or given up: a dead letter
    COALESCED = "coalesced"  # merged into the message `parent_id`
    FAILED_OVER = "failed_over"  # moved to the fallback channel's delivery `parent_id`
    SPLIT = "split"  # a combined message that failed unexpectedly; its members are sent alone
    CAPPED = "capped"  # over the channel's cap of messages per incident
    UNCONFIGURED = "unconfigured"  # the channel has no credentials in this deployment
    DISCARDED = "discarded"  # a dead letter a person chose not to send again


class AttemptOutcome(enum.StrEnum):
    """One attempt to send a delivery (a `delivery_attempts` row), and the result the metric
    `alertrouter_notifications_total` counts it under (beside the `DeliveryStatus` a delivery is parked in)."""

    IN_FLIGHT = "in_flight"  # written before the request, so a crash mid-send leaves a trace
    SENT = "sent"  # the vendor said ok
    RETRY = "retry"  # the vendor or the network failed: the channel waits, the delivery is tried again
    RATE_LIMITED = "rate_limited"  # the vendor refused for its rate limit: the channel is blocked a while
    DEAD = "dead"  # a permanent failure, or given up: the delivery is a dead letter
    ERROR = "error"  # an unexpected exception of this message's own (a template, a bug): it alone waits
    LOST = "lost"  # the worker stopped during the send; the delivery is tried again


class RunStatus(enum.StrEnum):
    """A scheduled run: one row per job and period (a receiver's weekly digest, an hour's housekeeping)."""

    RUNNING = "running"  # claimed until `claimed_until`; a run crashed past it is taken again
    DONE = "done"  # final, unless an operator forces a resend
    FAILED = "failed"  # taken again once `claimed_until` (its retry time) has passed, up to the job's attempts


class RunResult(enum.StrEnum):
    """What one scheduler tick did with a run: the result `alertrouter_scheduled_runs_total` counts."""

    SENT = "sent"  # the digest went out
    DONE = "done"  # housekeeping ran
    UNCONFIGURED = "unconfigured"  # the digest's channel has no credentials: recorded as not sent
    FAILED = "failed"  # to be retried after a backoff
    CLAIMED = "claimed"  # another scheduler has or had the run
    NOT_LEADER = "not_leader"  # another replica leads the schedulers: this one runs nothing


@dataclass(frozen=True, slots=True)
class AlertView:
    """What the noise-reduction stages see of one alert: its labels after node identity and
    topology enrichment (so `node`, `rack`, `region` are present when derivable).

    `labels` is never changed once the view is made: the stages hold it by reference (the engine
    keeps one mapping per live alert, not a copy per stage); an alert whose labels change is a new view.
    """

    fingerprint: str
    labels: Mapping[str, str]
    firing: bool
    starts_at: datetime | None = None
    first_seen: datetime | None = None
    ends_at: datetime | None = None  # a resolved alert's endsAt (a firing one's is only an expiry: None)

    @property
    def alertname(self) -> str:
        return self.labels.get("alertname", "")


# -- the message: what the engine decided to tell, as every later stage reads it ------------------------


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

    `reason` is the throttle's `NotifyReason` (first, grew, repeat, resolved); `summary` is the
    incident's stored summary (counts, the node's `units` and `units_total`, a storm's `nodes` and
    `members`: `pipeline.incident.summary_dict` and the storm roll-up write it); `alerts` are at most
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
    summary: Mapping[str, Any] = field(default_factory=dict)
    alerts: tuple[AlertItem, ...] = ()
    opened_at: datetime | None = None
    at: datetime | None = None  # when it was decided
    started_at: datetime | None = None
    ended_at: datetime | None = None

    @property
    def resolved(self) -> bool:
        return self.status is AlertStatus.RESOLVED

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
            "summary": dict(self.summary),
            "alerts": [a.to_json() for a in self.alerts],
            "opened_at": _iso(self.opened_at),
            "at": _iso(self.at),
        }
        if self.started_at is not None:
            out["started_at"] = self.started_at.isoformat()
        if self.ended_at is not None:
            out["ended_at"] = self.ended_at.isoformat()
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
        kind = _get(d, "kind", str, "text", IncidentKind.NODE)
        status = _get(d, "status", str, "text", AlertStatus.FIRING)
        return cls(
            incident=_get(d, "incident", str, "text", ""),
            kind=IncidentKind.CLUSTER if kind == IncidentKind.CLUSTER else IncidentKind.NODE,
            reason=_get(d, "reason", str, "text", ""),
            status=AlertStatus.RESOLVED if status == AlertStatus.RESOLVED else AlertStatus.FIRING,
            severity=_get(d, "severity", str, "text", ""),
            headline=_get(d, "headline", str, "text", ""),
            labels=_strings(d, "labels"),
            summary=dict(_get(d, "summary", Mapping, "an object", {})),
            alerts=tuple(parsed),
            opened_at=_when(d, "opened_at"),
            at=_when(d, "at"),
            started_at=_when(d, "started_at"),
            ended_at=_when(d, "ended_at"),
        )


# Source liveness: the alert alertrouter raises for a heartbeat silent past its timeout (`alertrouter.liveness`).
HEARTBEAT_ALERTNAME = "AlertrouterHeartbeatMissing"
HEARTBEAT_LABEL = "heartbeat"  # its label naming the heartbeat

"""Pure domain types: statuses, incident kinds, what the stages see of an alert (the outbox message is
`alertrouter.message`'s)."""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

__all__ = [
    "HEARTBEAT_ALERTNAME",
    "HEARTBEAT_LABEL",
    "KEY_MAX",
    "NAME_MAX",
    "AlertStatus",
    "AlertView",
    "AttemptOutcome",
    "DeliveryStatus",
    "IncidentKind",
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


# Source liveness: the alert alertrouter raises for a heartbeat silent past its timeout (`alertrouter.liveness`).
HEARTBEAT_ALERTNAME = "AlertrouterHeartbeatMissing"
HEARTBEAT_LABEL = "heartbeat"  # its label naming the heartbeat

"""Typed shapes of the digest: the week's rows as read from the store, and the numbers made of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.store.digest import EpisodeRow, GpuEventFact, GpuHistory, IncidentFact

__all__ = [
    "AckStats",
    "BlindCount",
    "Count",
    "DayCount",
    "DigestStats",
    "EpisodeRow",
    "FlappingAlert",
    "GpuEventFact",
    "GpuFault",
    "GpuHistory",
    "IncidentFact",
    "Mechanism",
    "NodeFaults",
    "Noise",
    "ReceiverIncident",
    "ReceiverSection",
    "ResolveStats",
    "RmaCandidate",
    "Totals",
    "WeekRows",
]


@dataclass(slots=True)
class WeekRows:
    """What the store holds about one week (`store.digest.read_week`), with what its messages say
    (`stats.week_rows`); `summarize` turns it into numbers."""

    start: datetime
    end: datetime
    episodes: list[EpisodeRow] = field(default_factory=list)  # overlapping [start, end)
    alerts: dict[str, tuple[dict[str, str], datetime]] = field(default_factory=dict)  # fp -> (labels, first_seen)
    changes: dict[str, int] = field(default_factory=dict)  # alert event kind -> count in the week
    decisions: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (fingerprint, detail)
    payloads: int = 0
    payload_alerts: int = 0
    intents: list[tuple[str, str, str, str, str, datetime]] = field(default_factory=list)
    # ^ (receiver, reason, incident key, severity, headline, created_at) of outbox rows in the week
    deliveries: dict[str, int] = field(default_factory=dict)  # status -> count, created in the week
    incidents: list[IncidentFact] = field(default_factory=list)
    snapshots: dict[str, MessageSnapshot] = field(default_factory=dict)  # incident key -> its first message
    # escalation chains started in the week: step (0 = started, 1 = first step, ...) -> incidents that reached it
    escalations: dict[int, int] = field(default_factory=dict)
    read_at: datetime | None = None  # when read: what still goes on in a week not over yet counts until then
    gpus: list[GpuHistory] = field(default_factory=list)  # the GPUs the RMA rules may judge, with their history


@dataclass(frozen=True, slots=True)
class Count:
    name: str
    count: int
    extra: str = ""  # the noisiest alerts: on how many nodes; the noisiest nodes: their alert names


@dataclass(frozen=True, slots=True)
class DayCount:
    day: date
    by_severity: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.by_severity.values())


@dataclass(frozen=True, slots=True)
class Totals:
    fired: int  # alert episodes that started firing in the week
    distinct_alerts: int
    new_alerts: int  # first seen ever in this week
    recurring_alerts: int  # seen before the week, fired again in it
    open_at_end: int  # alerts still firing when the week ended
    incidents_opened: int
    incidents_open_at_end: int
    by_severity: list[Count]
    by_alertname: list[Count]
    by_node: list[Count]
    by_region: list[Count]


@dataclass(frozen=True, slots=True)
class Mechanism:
    name: str  # inhibited | aggregated | rolled_up | throttled | silenced | muted_by_interval | stale
    alerts: int  # distinct alerts the mechanism kept from being a message of their own
    rules: list[Count]


@dataclass(frozen=True, slots=True)
class Noise:
    alert_changes: int  # firing, refiring and resolving alerts: what would reach people unfiltered
    payloads: int
    payload_alerts: int
    messages_intended: int  # outbox rows: one message for one receiver
    messages_sent: int  # deliveries a vendor accepted
    messages_unsent: dict[str, int]  # other delivery outcomes (dead, unconfigured, coalesced, ...)
    mechanisms: list[Mechanism]

    @property
    def ratio(self) -> float | None:
        """Alert changes per message intended: 40.0 means one message for every 40 changes."""
        return None if not self.messages_intended else self.alert_changes / self.messages_intended


@dataclass(frozen=True, slots=True)
class FlappingAlert:
    alertname: str
    node: str
    detail: str  # e.g. "gpu 3"
    episodes: int


@dataclass(frozen=True, slots=True)
class GpuFault:
    """An alert episode naming an XID (`digest.gpufaults`): when it began, where, and the code."""

    at: datetime
    node: str
    gpu: str  # the index, or ""
    uuid: str  # the GPU's UUID label, or ""
    code: int


@dataclass(frozen=True, slots=True)
class NodeFaults:
    node: str
    faults: int
    gpus: list[str]
    codes: list[int]
    mtbf: timedelta  # the period's length / faults


@dataclass(frozen=True, slots=True)
class RmaCandidate:
    """A GPU the `rma:` rules make a candidate by the week's end (`digest.rma`): `rule` met, with its
    `evidence` (oldest first, each where it was seen); `node`/`slot`: where the latest of it was seen."""

    uuid: str
    serial: str | None
    model: str | None
    node: str | None
    slot: str | None
    rule: str
    window: timedelta
    evidence: tuple[GpuEventFact, ...]
    xids: tuple[int, ...] = ()  # what the evidence counts: the rule's Xids among it,
    alertnames: tuple[str, ...] = ()  # and the alert names of the rest


@dataclass(frozen=True, slots=True)
class ResolveStats:
    name: str  # a severity, or "all"
    resolved: int
    mean: timedelta | None
    median: timedelta | None


@dataclass(frozen=True, slots=True)
class AckStats:
    name: str
    opened: int
    acknowledged: int
    mean: timedelta | None
    median: timedelta | None


@dataclass(frozen=True, slots=True)
class ReceiverIncident:
    headline: str  # as stored (English)
    severity: str
    first_at: datetime
    messages: int
    snapshot: MessageSnapshot | None = None  # the first message: the facts a headline is worded from


@dataclass(frozen=True, slots=True)
class ReceiverSection:
    receiver: str
    messages: int
    by_reason: list[Count]
    incidents: list[ReceiverIncident]
    more_incidents: int


@dataclass(frozen=True, slots=True)
class DigestStats:
    period: str
    timezone: str
    start: datetime
    end: datetime
    totals: Totals
    noise: Noise
    noisiest_alerts: list[Count]
    noisiest_nodes: list[Count]
    flapping: list[FlappingAlert]
    resolve: list[ResolveStats]
    ack: list[AckStats]
    per_day: list[DayCount]
    severities: list[str]
    receiver: ReceiverSection | None
    gpu_faults: list[NodeFaults] = field(default_factory=list)  # per node, most faults first
    rma: list[RmaCandidate] = field(default_factory=list)  # the latest evidence first
    escalations: dict[int, int] = field(default_factory=dict)  # as `WeekRows.escalations`
    blind: list[BlindCount] = field(default_factory=list)  # monitoring blind: silent heartbeats
    jobs: list[Any] | None = None  # `digest.jobs.JobWeek`s with the `jobs:` rules on, else None (no section)

    @property
    def hours(self) -> int:
        return round((self.end - self.start).total_seconds() / 3600)


@dataclass(frozen=True, slots=True)
class BlindCount:
    """How often, and how long in all, a heartbeat's source was silent during the week (its
    AlertrouterHeartbeatMissing alert firing: `alertrouter.liveness`)."""

    heartbeat: str
    times: int  # silences that overlap the week
    total: timedelta  # their time within the week

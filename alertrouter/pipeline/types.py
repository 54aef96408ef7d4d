"""The engine's inputs and outputs: live alerts, incident records, decisions, intents."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from alertrouter.message.facts import Facts, NodeFacts
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.pipeline.maintenance import FOREVER, Window
from alertrouter.pipeline.throttle import NotifyReason, NotifyState

__all__ = [
    "QUIET_RESOLVE",
    "AlertDecision",
    "Decision",
    "EvalResult",
    "IncidentRecord",
    "IncidentState",
    "Intent",
    "LiveAlert",
    "RecordChanges",
    "RecordsAfter",
    "apply_record_changes",
    "inhibited_only",
    "maintenance_detail",
    "next_records",
    "record_changes",
]


class Decision(enum.StrEnum):
    NOTIFY = "notify"  # a message about it is going (or will go, after the incident's group wait)
    AGGREGATED = "aggregated"  # it is one of several alerts of one incident
    ROLLED_UP = "rolled_up"  # its node incident is part of a cluster incident (a storm)
    THROTTLED = "throttled"  # already told; the next message is due at `next_send_at`
    INHIBITED = "inhibited"  # muted by `inhibited_by` under `inhibit_rule`
    SILENCED = "silenced"  # muted by the silence `silenced_by`
    MAINTENANCE = "maintenance"  # its node is in the maintenance window `maintenance`: shown, never sent
    HELD = "held"  # hold-down: waiting until `held_until` for a source that may mute it
    MUTED_BY_INTERVAL = "muted_by_interval"  # every route it takes is muted now by a time interval
    RESOLVED = "resolved"
    # Resolved, but its resolve waits `stale.window` for a source-down alert of its node (`pipeline.stale`).
    RESOLVING = "resolving"
    # Resolved because its data stopped, not because the condition ended: its node or exporter went dark
    # (`stale_reason`, since `stale_since`); the resolve is told when data returns (`pipeline.stale`).
    STALE = "stale"
    QUARANTINED = "quarantined"  # processing it failed on its own, repeatedly: left out of every pass (`error`)


# The reason stored with a receiver's notify state changed without a message: the incident resolved
# while the receiver's route was muted by a time interval, which (as in Alertmanager) is never told.
QUIET_RESOLVE = "muted"


@dataclass(frozen=True, slots=True)
class LiveAlert:
    """An alert as the engine loads it from the store."""

    fingerprint: str
    labels: Mapping[str, str]
    firing: bool
    starts_at: datetime
    fired_at: datetime | None
    ends_at: datetime | None = None  # a resolved alert's endsAt: when its source stopped reporting it


@dataclass(frozen=True, slots=True)
class AlertDecision:
    decision: Decision
    incident: str | None
    inhibited_by: str | None = None
    inhibit_rule: str | None = None
    silenced_by: str | None = None
    maintenance: Window | None = None
    aggregation_rule: str | None = None
    held_until: datetime | None = None
    next_send_at: datetime | None = None
    routed_to: tuple[str, ...] = ()
    # receiver -> the mute_time_intervals in force, or (outside) the route's active_time_intervals
    muted_by_interval: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    outside_active: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    mute_ends_at: datetime | None = None
    stale_reason: str | None = None  # `pipeline.stale.Reason`
    stale_since: datetime | None = None
    stale_until: datetime | None = None  # when it is looked at again (None: while its source is down)
    stale_source: str | None = None  # the source-down alert that keeps it stale

    def detail(self) -> dict[str, Any]:
        """The stored and API form: only the fields that say something."""
        out: dict[str, Any] = {}
        if self.inhibited_by:
            out["inhibited_by"] = self.inhibited_by
            out["inhibit_rule"] = self.inhibit_rule
        if self.silenced_by:
            out["silenced_by"] = self.silenced_by
        if self.maintenance is not None:
            out["maintenance"] = maintenance_detail(self.maintenance)
        if self.aggregation_rule:
            out["aggregation_rule"] = self.aggregation_rule
        if self.held_until:
            out["held_until"] = self.held_until.isoformat()
        if self.next_send_at:
            out["next_send_at"] = self.next_send_at.isoformat()
        if self.routed_to:
            out["routed_to"] = list(self.routed_to)
        if self.muted_by_interval:
            out["muted_by_interval"] = {r: list(names) for r, names in sorted(self.muted_by_interval.items())}
        if self.outside_active:
            out["outside_active_time_intervals"] = {r: list(n) for r, n in sorted(self.outside_active.items())}
        if self.mute_ends_at:
            out["mute_ends_at"] = self.mute_ends_at.isoformat()
        if self.stale_reason:
            out["stale_reason"] = self.stale_reason
        if self.stale_since:
            out["stale_since"] = self.stale_since.isoformat()
        if self.stale_until:
            out["stale_until"] = self.stale_until.isoformat()
        if self.stale_source:
            out["stale_source"] = self.stale_source
        return out


def maintenance_detail(window: Window) -> dict[str, str]:
    """A window as an alert's stored detail says it: the console and the API show who, why and until when."""
    out = {
        "id": window.id,
        "node": window.node,
        "source": window.source,
        "reason": window.reason,
        "by": window.by,
        "since": window.starts_at.isoformat(),
    }
    if window.ends_at < FOREVER:  # a cordon or a taint lasts until the cluster lifts it
        out["until"] = window.ends_at.isoformat()
    return out


@dataclass(frozen=True, slots=True)
class IncidentRecord:
    """What the previous pass left for an incident: the engine's memory across passes and restarts."""

    key: str
    firing: bool
    opened_at: datetime
    active_since: datetime | None
    resolved_at: datetime | None = None
    acknowledged: bool = False
    notify: Mapping[str, NotifyState] = field(default_factory=dict)
    # What it last said, for a cluster incident whose storm is over: no alert describes it any more,
    # but it still resolves, and its resolved message names the storm it announced.
    kind: str = "node"
    rule: str = ""
    parent: str | None = None
    severity: str = ""
    headline: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    summary: Facts = field(default_factory=NodeFacts)

    @property
    def inhibited(self) -> bool:
        """Firing, and every firing alert of it was inhibited (`inhibited_only`)."""
        return self.firing and inhibited_only(self.summary)


def inhibited_only(summary: Facts) -> bool:
    """Whether an incident's summary (`pipeline.incident.node_facts`) had firing alerts, all of them
    inhibited: none counting, none in hold-down, none silenced (a silence's end is told at once). A
    summary without the counts (a storm's, a row stored by hand) says no."""
    t = summary.tally
    return t.firing is not None and t.firing > 0 and t.muted == t.firing and t.silenced == 0 and t.eligible == 0


@dataclass(frozen=True, slots=True)
class IncidentState:
    key: str
    kind: str
    rule: str
    firing: bool
    severity: str
    headline: str
    labels: Mapping[str, str]
    summary: Facts
    parent: str | None
    opened_at: datetime
    active_since: datetime | None
    resolved_at: datetime | None
    acknowledged: bool = False


@dataclass(frozen=True, slots=True)
class Intent:
    incident: str
    receiver: str
    reason: NotifyReason
    message: MessageSnapshot


@dataclass(slots=True)
class EvalResult:
    decisions: Mapping[str, AlertDecision] = field(default_factory=dict)
    incidents: Mapping[str, IncidentState] = field(default_factory=dict)
    intents: list[Intent] = field(default_factory=list)
    notify_states: dict[tuple[str, str], NotifyState] = field(default_factory=dict)
    wake_at: datetime | None = None
    # Node incidents whose alerts all moved to another key (their node was renamed by a learned alias):
    # old key -> new key. The old one resolves quietly; the new one carries on from the old one's
    # record (what receivers were told) when it had none of its own.
    moved: dict[str, str] = field(default_factory=dict)
    # What this pass worked out again (an incremental pass: only what its changes can touch; a full
    # pass: everything). `decisions` and `incidents` are whole either way: what the pass did not
    # evaluate is as the pass that last did left it. They are views of the evaluator's own maps, as
    # they stand until its next pass: keep a copy to compare passes.
    evaluated: set[str] = field(default_factory=set)  # incident keys
    decided: set[str] = field(default_factory=set)  # alert fingerprints
    counts: dict[str, int] = field(default_factory=dict)  # decision -> how many alerts have it
    deferred: bool = False  # the wake-ups that had come were left for the next pass (`due_max`)

    def notify_reasons(self) -> dict[tuple[str, str], str]:
        """Why each (incident, receiver) notify state changed: its message's reason, or `QUIET_RESOLVE`
        for a state changed with no message (a resolve while muted by a time interval)."""
        reasons = {key: QUIET_RESOLVE for key in self.notify_states}
        reasons.update({(i.incident, i.receiver): i.reason.value for i in self.intents})
        return reasons

    def wake(self, at: datetime) -> None:
        """Remember the earliest time a pass may decide differently without any new alert."""
        if self.wake_at is None or at < self.wake_at:
            self.wake_at = at


@dataclass(slots=True)
class RecordChanges:
    """What persisting a pass's result changes in the incident records: the records it writes (new
    objects; an unchanged record is left out) and the keys it moves away (their alerts carry on under
    another key)."""

    written: dict[str, IncidentRecord] = field(default_factory=dict)
    moved: frozenset[str] = frozenset()

    @property
    def keys(self) -> set[str]:
        return set(self.written) | self.moved


def record_changes(
    previous: Mapping[str, IncidentRecord], result: EvalResult, *, courtesy: Callable[[], None] | None = None
) -> RecordChanges:
    """The records a store would hold differently after persisting `result`: those of the incidents the
    pass evaluated whose record changed, and those it moved to another key (they resolved quietly).
    Worked out from what the pass evaluated only: a pass after one webhook does not copy every record.
    `courtesy`: called before each incident, when this runs in a worker thread (`alertrouter.process.courtesy`)."""
    changes = RecordChanges(moved=frozenset(result.moved))
    moved_from = {new: old for old, new in result.moved.items()}
    told: dict[str, list[tuple[str, NotifyState]]] = {}  # incident -> (receiver, what it was told now)
    for (incident, receiver), sent in result.notify_states.items():
        told.setdefault(incident, []).append((receiver, sent))
    for key in result.evaluated:
        if courtesy is not None:
            courtesy()
        state = result.incidents.get(key)
        if state is None:  # evaluated and gone (its alerts left): its record stays as it was
            continue
        before = previous.get(key) or previous.get(moved_from.get(key, ""))
        notify = dict(before.notify) if before is not None else {}
        notify.update(told.get(key, ()))
        record = IncidentRecord(
            key=key,
            firing=state.firing,
            opened_at=state.opened_at,
            active_since=state.active_since,
            resolved_at=state.resolved_at,
            acknowledged=state.acknowledged,
            notify=notify,
            kind=state.kind,
            rule=state.rule,
            parent=state.parent,
            severity=state.severity,
            headline=state.headline,
            labels=state.labels,
            summary=state.summary,
        )
        # The same object when nothing changed: an incremental pass tells changed records by identity.
        kept = previous.get(key)
        if kept is not None and kept == record:
            if key in changes.moved:  # moved away, and evaluated again under its own key: it stays
                changes.written[key] = kept
            continue
        changes.written[key] = record
    return changes


class RecordsAfter(Mapping[str, IncidentRecord]):
    """The records as they are once `changes` are applied to `before`, read through without a copy."""

    def __init__(self, before: Mapping[str, IncidentRecord], changes: RecordChanges) -> None:
        self._before = before
        self._changes = changes

    def __getitem__(self, key: str) -> IncidentRecord:
        written = self._changes.written.get(key)
        if written is not None:
            return written
        if key in self._changes.moved:
            raise KeyError(key)
        return self._before[key]

    def __iter__(self) -> Iterator[str]:
        changes = self._changes
        yield from (k for k in self._before if k not in changes.moved and k not in changes.written)
        yield from changes.written

    def __len__(self) -> int:
        return sum(1 for _ in self)


def apply_record_changes(records: dict[str, IncidentRecord], changes: RecordChanges) -> None:
    """Apply a pass's record changes in place (once its transaction has committed)."""
    for key in changes.moved:
        records.pop(key, None)
    records.update(changes.written)


def next_records(previous: Mapping[str, IncidentRecord], result: EvalResult) -> dict[str, IncidentRecord]:
    """The records the next pass starts from: what a store would hold after persisting `result` (the
    incidents the pass did not evaluate stay as they were, the same objects; those it moved to another
    key are left out: they resolved quietly, and their alerts carry on under the new key)."""
    out = dict(previous)
    apply_record_changes(out, record_changes(previous, result))
    return out

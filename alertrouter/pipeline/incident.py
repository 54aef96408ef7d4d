"""An incident while a pass builds it, and the pure helpers that describe it: severity, summary,
its next stored state, and the message snapshot handed to channels."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from alertrouter.message.facts import Facts, Nearby, NoData, NodeFacts, Tally, shared_tally
from alertrouter.message.gpu_triage import GpuTriageFacts
from alertrouter.message.snapshot import AlertItem, MessageSnapshot
from alertrouter.model import AlertStatus, AlertView, IncidentKind
from alertrouter.pipeline import aggregate
from alertrouter.pipeline.aggregate import AggregationRule, IncidentSummary
from alertrouter.pipeline.folding import Described
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.throttle import NotifyReason
from alertrouter.pipeline.types import AlertDecision, EvalResult, IncidentRecord, IncidentState

__all__ = [
    "MAX_ALERTS_IN_MESSAGE",
    "IncidentGroup",
    "NodeIncident",
    "alert_times",
    "merge_moved",
    "message_snapshot",
    "next_incident_state",
    "node_facts",
    "storm_span",
    "triaged_incident",
    "worst_severity",
]

MAX_ALERTS_IN_MESSAGE = 50


@dataclass(slots=True)
class IncidentGroup:
    key: str
    rule: AggregationRule
    alerts: list[AlertView] = field(default_factory=list)  # all of them, firing or not
    eligible: list[AlertView] = field(default_factory=list)  # firing, not muted, not held
    muted: int = 0  # inhibited or silenced
    silenced: int = 0
    held: list[AlertView] = field(default_factory=list)  # firing, in hold-down
    held_until: datetime | None = None
    firing: int = 0
    parent: str | None = None
    stale: list[AlertView] = field(default_factory=list)  # resolved, but stale or resolving (`pipeline.stale`)
    no_data: int = 0  # of `stale`, those whose data stopped (not merely resolving)
    no_data_since: datetime | None = None
    # What explains the gap in data of its stale (or once stale) alerts (`pipeline.stale.assess`): the incident
    # of the source-down alert ("no GPU data because gpu-node-07 is down"), its alert name, its node, and
    # whether it still fires.
    no_data_source: str | None = None
    no_data_cause: str = ""
    no_data_node: str = ""
    no_data_down: bool = False
    no_data_rank: tuple[bool, bool, datetime, str] | None = None  # `sorting._link`'s, of `no_data_source`
    triage: GpuTriageFacts | None = None  # the GPU triage of its Xid alerts (`pipeline.folding`)


@dataclass(slots=True)
class NodeIncident:
    """A node incident as its last evaluation left it: the alerts sorted into it (muted, held, counting),
    what it says, what a storm reads of it, and the decisions about its alerts before a storm's mutes."""

    group: IncidentGroup
    summary: IncidentSummary
    opening: IncidentSummary | None  # of the alerts that count or are held: what a storm counts of it
    ckey: str | None  # the storm it may roll up into, while it has alerts opening
    first: datetime | None  # when its earliest opening alert first fired
    hold_wake: datetime | None  # the earliest end of a hold-down (or of a stale period) among its alerts
    decisions: dict[str, AlertDecision] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)  # the labels all its alerts share


def triaged_incident(node: NodeIncident, triaged: Described, action_label: str) -> None:
    """The triage of a node incident's Xid alerts in what it says (its facts) and in its labels: the
    action label is its primary root's action even when its alerts disagree, so routes match the root."""
    node.group.triage = triaged.facts
    if action_label:
        node.labels = {**node.labels, action_label: triaged.action}


def worst_severity(alerts: Iterable[AlertView], pipeline: CompiledRules) -> str:
    return aggregate.worst_severity(alerts, severity_label=pipeline.severity_label, severities=pipeline.severities)


def node_facts(
    summary: IncidentSummary, group: IncidentGroup, headline: str, nearby: tuple[Nearby, ...] = ()
) -> NodeFacts:
    """What a node incident's messages state (`headline`: its stored one, `summary.headline`, one object
    for both). The stale counts only while some alert is stale, so what every other incident states
    stays as it was; what explains missing data while stale, and once resolved (its resolved message says
    why data was missing), not in a new firing."""
    stale = bool(group.stale)
    tally = Tally(
        alerts=len(group.alerts),
        firing=group.firing,
        eligible=len(group.eligible),
        muted=group.muted,
        silenced=group.silenced,
        stale=group.no_data if stale else None,
        resolving=len(group.stale) - group.no_data if stale else None,
    )
    no_data = None
    if group.no_data_source is not None and (stale or not group.firing):
        no_data = NoData(group.no_data_source, group.no_data_cause, group.no_data_node, group.no_data_down)
    return NodeFacts(
        headline=headline,
        where=summary.where,
        alertname=summary.what,
        units=summary.units,
        units_total=summary.units_total,
        unit_name=summary.extra.get("unit_name", ""),
        tally=shared_tally(tally),
        no_data_since=group.no_data_since if stale else None,
        no_data=no_data,
        triage=group.triage,  # only when it has one, as the stale counts
        nearby=nearby if group.firing else (),  # neighbours in maintenance, told while it fires
    )


def next_incident_state(
    record: IncidentRecord | None,
    *,
    key: str,
    kind: str,
    rule: str,
    firing: bool,
    eligible: bool,
    severity: str,
    headline: str,
    labels: Mapping[str, str],
    summary: Facts,
    parent: str | None,
    now: datetime,
    activated: datetime | None = None,
) -> IncidentState:
    """`activated`: when the alerts that count now first fired here; the group wait counts from
    there, so it overlaps a hold-down instead of adding to it. Alerts that were all inhibited in the
    last pass (their source resolved) count from now: a target whose own resolve comes a moment after
    its source's (a node back, both its exporters answering again) is not told."""
    reopened = record is None or (not record.firing and firing)
    opened_at = now if reopened else record.opened_at  # type: ignore[union-attr]
    active_since = None
    if eligible:
        if record is not None and record.active_since and not reopened:
            active_since = record.active_since
        elif record is not None and record.inhibited and not reopened:
            active_since = now
        else:
            active_since = min(activated or now, now)
    # Described as its record already describes it (most incidents, most passes): the record's objects, not
    # a copy per pass. The engine holds both for every live incident (30,000 of them in a big fleet).
    if record is not None and record.labels == labels:
        labels = record.labels
    return IncidentState(
        key=key,
        kind=kind,
        rule=rule,
        firing=firing,
        severity=severity,
        headline=headline,
        labels=labels,
        summary=record.summary if record is not None and record.summary == summary else summary,
        parent=parent,
        opened_at=opened_at,
        active_since=active_since,
        resolved_at=None if firing else (record.resolved_at if record and record.resolved_at else now),
        acknowledged=bool(record and record.acknowledged and not reopened),
    )


def message_snapshot(
    state: IncidentState,
    reason: NotifyReason,
    group: IncidentGroup | None,
    now: datetime,
    *,
    span: tuple[datetime | None, datetime | None] = (None, None),
) -> MessageSnapshot:
    """A snapshot of what to say, frozen at decision time; channels render it later. `span`: when the
    alerts of an incident with no group of its own (a storm: `storm_span`) started and ended."""
    alerts: tuple[AlertItem, ...] = ()
    started, ended = span
    if group is not None:
        shown = sorted(group.eligible or group.alerts, key=lambda v: v.fingerprint)[:MAX_ALERTS_IN_MESSAGE]
        alerts = tuple(AlertItem(v.fingerprint, dict(v.labels), v.firing) for v in shown)
        started, ended = alert_times(group, firing=state.firing, opened_at=state.opened_at)
    kind = IncidentKind(state.kind)
    return MessageSnapshot(
        incident=state.key,
        kind=kind,
        reason=reason.value,
        status=AlertStatus.FIRING if state.firing else AlertStatus.RESOLVED,
        severity=state.severity,
        headline=state.headline,
        labels=dict(state.labels),
        summary=state.summary,
        alerts=alerts,
        opened_at=state.opened_at,
        at=now,
        started_at=started,
        ended_at=ended,
    )


def alert_times(group: IncidentGroup, *, firing: bool, opened_at: datetime) -> tuple[datetime | None, datetime | None]:
    """When the incident's alerts say it started (their earliest `startsAt`) and, resolved, ended (the
    latest `endsAt`: the one that resolved it; a stale alert's is when its data stopped), as the source
    saw them: not when alertrouter heard of it, nor when it decided to tell.

    Firing: of the alerts that count (else of all that fire). Resolved: of those that ended since the
    incident opened (an alert over before a reopening is not part of this one), else of all of them.
    None where no alert carries the time."""
    if firing:
        current = group.eligible or [v for v in group.alerts if v.firing]
        return min((v.starts_at for v in current if v.starts_at), default=None), None
    current = [v for v in group.alerts if v.ends_at is not None and v.ends_at >= opened_at] or group.alerts
    started = min((v.starts_at for v in current if v.starts_at), default=None)
    return started, max((v.ends_at for v in current if v.ends_at), default=None)


def storm_span(members: Iterable[IncidentGroup], opened_at: datetime) -> tuple[datetime | None, datetime | None]:
    """When a storm's alerts started and, once none of them fires, ended: of its members' alerts that fire
    or ended since it opened (`alert_times`). A storm that ends while members still fire has no end yet."""
    current = [v for g in members for v in g.alerts if v.firing or v.ends_at is None or v.ends_at >= opened_at]
    started = min((v.starts_at for v in current if v.starts_at), default=None)
    if any(v.firing for v in current):
        return started, None
    return started, max((v.ends_at for v in current if v.ends_at), default=None)


def merge_moved(
    moves: Mapping[str, str],
    groups: Mapping[str, object],
    incidents: Mapping[str, IncidentRecord],
    result: EvalResult,
) -> Mapping[str, IncidentRecord]:
    """Node incidents left by all their alerts for another key: merged into it, not told twice.

    `NodeDown 10.0.0.100` becomes `NodeDown gpu-node-100` when the address is learned. The new
    incident carries on from the old one's record (when it has none of its own), so what a receiver
    was already told is not sent again as new; the old one resolves quietly (`result.moved`), with
    no resolved message about an alert that is still firing under its new name.
    """
    if not moves:
        return incidents
    out = dict(incidents)
    for old, new in sorted(moves.items()):
        record = incidents.get(old)
        if old in groups or record is None or not record.firing:
            continue
        result.moved[old] = new
        if new not in out:
            out[new] = replace(record, key=new)
    return out

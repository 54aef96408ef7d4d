"""Sorting one node incident's alerts into muted (inhibited, silenced), held (hold-down), stale or
resolving, and counting, and what the incident then says of them (`NodeIncident`). Pure: the alerts,
the mutes and the clock are handed in; what the evaluator keeps between passes is its own business."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from datetime import datetime

from alertrouter.model import AlertView
from alertrouter.pipeline.aggregate import IncidentSummary, common_labels, rollup_key, summarize_incident
from alertrouter.pipeline.incident import IncidentGroup, NodeIncident
from alertrouter.pipeline.inhibit import Inhibitor
from alertrouter.pipeline.maintenance import Window
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.silence import Silencer
from alertrouter.pipeline.stale import Reason, StaleRule, Told, assess
from alertrouter.pipeline.types import AlertDecision, Decision
from alertrouter.pipeline.views import AlertViews

__all__ = ["earliest", "sort_incident"]


# Decisions made before inhibition and silences are looked at (`pipeline.stale`).
_UNSORTED = (Decision.STALE, Decision.RESOLVING)
# Muted by someone's choice, a silence or a node's maintenance: counted as silenced (`types.inhibited_only`).
_CHOSEN = (Decision.SILENCED, Decision.MAINTENANCE)


def earliest(*times: datetime | None) -> datetime | None:
    return min((t for t in times if t is not None), default=None)


def sort_incident(
    key: str,
    fps: Collection[str],
    views: AlertViews,
    pipeline: CompiledRules,
    inhibitor: Inhibitor,
    silencer: Silencer,
    now: datetime,
    *,
    kept: Mapping[str, AlertDecision] | None = None,
    told: Told | None = None,
    maintenance: Mapping[str, Window] | None = None,
) -> NodeIncident:
    """Node incident `key` of the alerts `fps` (its members in `views`, at least one): each alert's
    decision before routing, the incident's summary, and what a storm would count of it. `kept`: the
    decisions of its last sort, when only the incident's wake-up has come since (what muted an alert
    then still does: a change of an inhibition or a silence would have made it sorted afresh). `told`:
    when the resolve of a source-down alert's incident is due (`pipeline.stale.Told`). `maintenance`: node ->
    the maintenance window it is in now (`pipeline.maintenance`)."""
    rule = views.placements[next(iter(fps))].rule
    group = IncidentGroup(key, rule)
    decisions: dict[str, AlertDecision] = {}
    hold_wake: datetime | None = None
    stale_rule = pipeline.stale
    for fp in sorted(fps):
        view = views.views[fp]
        group.alerts.append(view)
        if stale_rule.enabled and not view.firing and (node := views.node_of(fp)) is not None:
            decision = _stale(key, group, views, inhibitor, stale_rule, view, node, now, told)
            if decision is not None:
                decisions[fp] = decision
                hold_wake = earliest(hold_wake, decision.stale_until)
                continue
        window = maintenance.get(views.node_of(fp) or "") if maintenance else None
        muted, silence = _mutes(view, key, kept.get(fp) if kept else None, inhibitor, silencer, now, window)
        if muted is not None:
            group.muted += 1
            decisions[fp] = muted
        elif silence is not None:
            group.muted += 1
            group.silenced += 1
            decisions[fp] = silence
        if not view.firing:
            if muted is None and silence is None:
                decisions[fp] = AlertDecision(Decision.RESOLVED, key)
            continue
        group.firing += 1
        if muted is not None or silence is not None:
            continue
        hold = views.placements[fp].hold_down
        if hold and view.first_seen is not None and now < view.first_seen + hold:
            until = view.first_seen + hold
            group.held.append(view)
            group.held_until = until if group.held_until is None else max(group.held_until, until)
            decisions[fp] = AlertDecision(Decision.HELD, key, held_until=until)
            hold_wake = until if hold_wake is None else min(hold_wake, until)
            continue
        group.eligible.append(view)
    return _described(group, decisions, hold_wake, pipeline)


def _stale(
    key: str,
    group: IncidentGroup,
    views: AlertViews,
    inhibitor: Inhibitor,
    stale_rule: StaleRule,
    view: AlertView,
    node: str,
    now: datetime,
    told: Told | None,
) -> AlertDecision | None:
    """A resolved alert of `node` whose resolve waits for its data (`pipeline.stale`): its decision, counted
    in `group` as firing (and as no data unless it is resolving); None when its resolve is told. Either
    way, the source-down alert that would explain a gap is linked to `group` (`_link`)."""
    fp = view.fingerprint
    readings = views.readings
    neighbours = ((views.alerts[o], readings[o]) for o in views.by_node.get(node, ()))
    found = assess(stale_rule, views.alerts[fp], readings.get(fp), neighbours, now, told)
    if found.source is not None:
        _link(group, views, inhibitor, found.source.fingerprint, down=found.source.firing)
    stale = found.stale
    if stale is None:
        return None
    group.firing += 1
    group.stale.append(view)
    resolving = stale.reason == Reason.RESOLVING
    if not resolving:
        group.no_data += 1
        since = group.no_data_since
        group.no_data_since = stale.since if since is None else min(since, stale.since)
    return AlertDecision(
        Decision.RESOLVING if resolving else Decision.STALE,
        key,
        stale_reason=stale.reason.value,
        stale_since=stale.since,
        stale_until=stale.until,
        stale_source=stale.source,
    )


def _described(
    group: IncidentGroup, decisions: dict[str, AlertDecision], hold_wake: datetime | None, pipeline: CompiledRules
) -> NodeIncident:
    """The sorted incident: its summary, what would open a storm of it and which, and the labels its alerts share."""
    rule, key = group.rule, group.key
    # Stale alerts open nothing: a storm they are in stays (its members still fire) but none starts from them.
    opening_views = group.eligible + group.held
    summary = _summary(group, pipeline)
    opening: IncidentSummary | None = None
    ckey: str | None = None
    if rule.rollup is not None and opening_views:
        if group.held:
            opening = summarize_incident(
                rule, key, opening_views, severity_label=pipeline.severity_label, severities=pipeline.severities
            )
        else:  # what opens it is what counts: the summary's alerts, in the same order
            opening = summary
        ckey = rollup_key(rule, opening_views[0].labels)
    first = min((v.first_seen for v in opening_views if v.first_seen), default=None)
    # The summary describes every alert (in the same order) unless some are muted, held or resolved.
    all_described = summary.alerts == len(group.alerts)
    shared = summary.common_labels if all_described else common_labels(a.labels for a in group.alerts)
    return NodeIncident(group, summary, opening, ckey, first, hold_wake, decisions, shared)


def _link(group: IncidentGroup, views: AlertViews, inhibitor: Inhibitor, source: str, *, down: bool) -> None:
    """Name the source-down alert's incident as what explains the group's gap in data (`IncidentGroup`):
    one that still fires first, then one not muted itself (a dead node's DCGMExporterDown is inhibited by
    its NodeDown: NodeDown is the story), then the first to start, then by key: every pass names the same."""
    placement = views.placements.get(source)
    if placement is None:
        return
    muted = inhibitor.mutes(views.views[source]) is not None
    rank = (not down, muted, views.alerts[source].starts_at, placement.key)
    if group.no_data_rank is not None and group.no_data_rank <= rank:
        return
    group.no_data_rank = rank
    group.no_data_source = placement.key
    group.no_data_down = down
    group.no_data_cause = views.alerts[source].labels.get("alertname", "")
    group.no_data_node = views.node_of(source) or ""


def _mutes(
    view: AlertView,
    key: str,
    kept: AlertDecision | None,
    inhibitor: Inhibitor,
    silencer: Silencer,
    now: datetime,
    window: Window | None = None,
) -> tuple[AlertDecision | None, AlertDecision | None]:
    """An alert's maintenance (its node's `window`), else its inhibition, else its silence, as decisions
    (or None); maintenance goes in the second place, a silence's. `kept`: its decision of the last sort,
    when only the incident's wake-up has come since; what muted it then (or nothing) still does, unless
    it was stale then, when no mute was looked for."""
    if kept is not None and kept.decision not in _UNSORTED:
        if kept.decision is Decision.INHIBITED:
            return kept, None
        return None, (kept if kept.decision in _CHOSEN else None)
    if window is not None:
        return None, AlertDecision(Decision.MAINTENANCE, key, maintenance=window)
    muted = inhibitor.mutes(view)
    if muted is not None:
        by, rule = muted.source_fingerprint, muted.rule
        return AlertDecision(Decision.INHIBITED, key, inhibited_by=by, inhibit_rule=rule), None
    # After inhibition, as Alertmanager: an inhibited alert is reported as inhibited, not silenced.
    silence = silencer.mutes(view.labels, now) if silencer else None
    return None, (None if silence is None else AlertDecision(Decision.SILENCED, key, silenced_by=silence.id))


def _summary(group: IncidentGroup, pipeline: CompiledRules) -> IncidentSummary:
    """Counts come from the alerts that count (firing, not muted, not held); an incident with none of
    those (resolved, or all muted) is still described by all of its alerts, but reports nothing firing."""
    described = group.eligible or group.held or group.stale or group.alerts
    summary = summarize_incident(
        group.rule, group.key, described, severity_label=pipeline.severity_label, severities=pipeline.severities
    )
    if described is not group.eligible:
        summary = replace(summary, firing=frozenset())
    return summary

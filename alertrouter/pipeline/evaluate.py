"""One engine pass, pure: from the live alerts and what receivers were told, every alert's decision,
every incident's state, and the notifications to send now. No database, no clock of its own.

Order of the stages: node identity, inhibition (and hold-down), aggregation into node incidents,
storm roll-up into cluster incidents, routing, and the notify decision per incident and receiver.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from alertrouter.labels import alert_title
from alertrouter.model import AlertView, IncidentKind
from alertrouter.pipeline.aggregate import (
    AggregationRule,
    IncidentSummary,
    assign_rule,
    common_labels,
    incident_key,
    rollup_key,
    storm_headline,
    storm_members,
    storm_scope,
    summarize_incident,
)
from alertrouter.pipeline.incident import (
    MAX_ALERTS_IN_MESSAGE,
    IncidentGroup,
    message_snapshot,
    next_incident_state,
    summary_dict,
    worst_severity,
)
from alertrouter.pipeline.inhibit import Inhibitor
from alertrouter.pipeline.nodes import Discovered
from alertrouter.pipeline.route import RouteMatch, match_routes, severity_interval
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.silence import Silence, Silencer
from alertrouter.pipeline.throttle import NotifyState, ThrottlePolicy, needs_update, next_state
from alertrouter.pipeline.timeinterval import IntervalClock, IntervalMute
from alertrouter.pipeline.types import (
    AlertDecision,
    Decision,
    EvalResult,
    IncidentRecord,
    IncidentState,
    Intent,
    LiveAlert,
)

__all__ = ["Evaluator"]


@dataclass(frozen=True, slots=True)
class _Placement:
    """What an alert's labels alone decide, so it is worked out once per fingerprint, not every pass."""

    rule: AggregationRule
    key: str  # its node incident
    hold_down: timedelta | None


def _with_mutes(decision: AlertDecision, mutes: Mapping[str, IntervalMute]) -> AlertDecision:
    """The decision, saying which receivers' routes time intervals mute now, by which, until when."""
    if not mutes:
        return decision
    return replace(
        decision,
        muted_by_interval={r: m.intervals for r, m in mutes.items() if not m.outside_active},
        outside_active={r: m.intervals for r, m in mutes.items() if m.outside_active},
        mute_ends_at=min((m.until for m in mutes.values() if m.until), default=None),
    )


class Evaluator:
    """Keeps the inhibitor (it is incremental) and each alert's placement between passes; the
    incidents, decisions and notifications are recomputed every pass."""

    def __init__(self, pipeline: CompiledRules) -> None:
        self.pipeline = pipeline
        self._nodes = pipeline.nodes
        self._inhibitor = Inhibitor(pipeline.inhibit_rules)
        self._views: dict[str, AlertView] = {}
        self._placements: dict[str, _Placement] = {}
        self._addresses: dict[str, str] = {}  # fingerprint -> the IP address that names its node
        self._keys: dict[str, str] = {}  # fingerprint -> the value its node is looked up by (discovered names)
        self.rekeyed: set[str] = set()  # alerts whose node the last pass renamed
        self._intervals = IntervalClock(pipeline.time_intervals)
        # A route's time-interval mute, worked out once per pass: (mute, active) names -> the mute or None.
        self._mutes: dict[tuple[tuple[str, ...], tuple[str, ...]], IntervalMute | None] = {}

    def _learn(self, learned: Mapping[str, str]) -> set[str]:
        """Take a new learned-alias map; the fingerprints whose node it may rename."""
        before = self._nodes.learned
        if learned == before:
            return set()
        changed = {a for a in before.keys() | learned.keys() if before.get(a) != learned.get(a)}
        self._nodes = replace(self._nodes, learned=dict(learned))
        return {fp for fp, address in self._addresses.items() if address in changed}

    def _discover(self, discovered: Discovered) -> set[str]:
        """Take a new discovered snapshot; the fingerprints whose node or topology labels it may change:
        those looked up by a key whose entry changed, and those on a node whose labels changed."""
        before = self._nodes.discovered
        if discovered is before:
            return set()
        old, new = before.names, discovered.names
        keys = {k for k in old.keys() | new.keys() if old.get(k) != new.get(k)}
        was, now = before.topology, discovered.topology
        nodes = {n for n in was.keys() | now.keys() if was.get(n) != now.get(n)}
        self._nodes = replace(self._nodes, discovered=discovered)
        stale = {fp for fp, key in self._keys.items() if key in keys}
        if nodes:
            label = self._nodes.label
            stale.update(fp for fp, view in self._views.items() if view.labels.get(label) in nodes)
        return stale

    def _sync(
        self, alerts: Iterable[LiveAlert], stale: set[str], placed_before: Mapping[str, str]
    ) -> tuple[dict[str, AlertView], dict[str, str]]:
        """The views of this pass, and the node incidents alerts left for another key (old -> new)."""
        nodes = self._nodes
        views: dict[str, AlertView] = {}
        moves: dict[str, str] = {}
        self.rekeyed = set()
        for a in alerts:
            fp = a.fingerprint
            old = self._views.get(fp)
            relabel = fp in stale
            if old is not None and not relabel and old.firing == a.firing and old.first_seen == a.fired_at:
                views[fp] = old
                continue
            # The labels of a fingerprint never change: a view made again keeps its enrichment, unless
            # a learned alias or a discovered name or topology label changed it.
            labels = old.labels if old is not None and not relabel else nodes.enrich(a.labels)
            view = AlertView(fp, labels, a.firing, a.starts_at, a.fired_at)
            views[fp] = view
            self._inhibitor.update(view)  # a view with other labels is placed again
            if old is None:
                address = nodes.address(a.labels)
                if address is not None:
                    self._addresses[fp] = address
                key = nodes.key(a.labels)
                if key is not None:
                    self._keys[fp] = key
            if old is None or (relabel and labels != old.labels):
                rule = assign_rule(self.pipeline.aggregation, labels)
                placed = _Placement(rule, incident_key(rule, labels), self._inhibitor.hold_down(view))
                if old is not None:
                    self.rekeyed.add(fp)
                    before: str | None = self._placements[fp].key
                else:  # placed by another process (before a restart or a lease takeover), if at all
                    before = placed_before.get(fp)
                if before is not None and before != placed.key:
                    moves[before] = placed.key
                self._placements[fp] = placed
        for gone in self._views.keys() - views.keys():
            self._inhibitor.remove(gone)
            del self._placements[gone]
            self._addresses.pop(gone, None)
            self._keys.pop(gone, None)
        self._views = views
        return views, moves

    def label_of(self, fingerprint: str, name: str) -> str | None:
        """A label of an alert as the last pass saw it, enrichment (node, topology) included."""
        view = self._views.get(fingerprint)
        return None if view is None else view.labels.get(name)

    def evaluate(
        self,
        alerts: Iterable[LiveAlert],
        incidents: Mapping[str, IncidentRecord],
        *,
        now: datetime,
        silences: Sequence[Silence] = (),
        learned: Mapping[str, str] | None = None,
        placed_before: Mapping[str, str] | None = None,
        discovered: Discovered | None = None,
    ) -> EvalResult:
        """`learned`: the learned aliases in force (address -> node); None keeps the last ones.
        `placed_before`: the node incident each alert was last decided under, as stored (fingerprint ->
        key), consulted for alerts this evaluator has not placed yet. A new process places an alert
        under the name learned meanwhile at once; its stored key still says it left the address, and
        the move is made as when a pass re-keys it (`_moved`). `discovered`: what the node lookup found
        (None keeps the last); a change re-keys and re-labels the alerts it concerns in this pass."""
        stale = self._discover(discovered) if discovered is not None else set()
        stale |= self._learn(learned) if learned is not None else set()
        views, moves = self._sync(alerts, stale, placed_before or {})
        result = EvalResult()
        groups: dict[str, IncidentGroup] = {}
        silencer = Silencer(silences)
        change = silencer.next_change(now)
        if change is not None:
            result.wake(change)
        self._mutes = {}
        self._interval_changes(now, result)

        # inhibition, hold-down, aggregation
        for view in views.values():
            placed = self._placements[view.fingerprint]
            key = placed.key
            group = groups.get(key) or groups.setdefault(key, IncidentGroup(key, placed.rule))
            group.alerts.append(view)
            muted = self._inhibitor.mutes(view)
            # After inhibition, as Alertmanager: an inhibited alert is reported as inhibited, not silenced.
            silence = silencer.mutes(view.labels, now) if muted is None and silencer else None
            if muted is not None:
                group.muted += 1
                result.decisions[view.fingerprint] = AlertDecision(
                    Decision.INHIBITED, key, inhibited_by=muted.source_fingerprint, inhibit_rule=muted.rule
                )
            elif silence is not None:
                group.muted += 1
                group.silenced += 1
                result.decisions[view.fingerprint] = AlertDecision(Decision.SILENCED, key, silenced_by=silence.id)
            if not view.firing:
                if muted is None and silence is None:
                    result.decisions[view.fingerprint] = AlertDecision(Decision.RESOLVED, key)
                continue
            group.firing += 1
            if muted is not None or silence is not None:
                continue
            hold = placed.hold_down
            if hold and view.first_seen is not None and now < view.first_seen + hold:
                until = view.first_seen + hold
                group.held.append(view)
                group.held_until = until if group.held_until is None else max(group.held_until, until)
                result.decisions[view.fingerprint] = AlertDecision(Decision.HELD, key, held_until=until)
                result.wake(until)
                continue
            group.eligible.append(view)

        incidents = self._moved(moves, groups, incidents, result)
        summaries = {key: self._summary(g) for key, g in groups.items()}
        clusters = self._rollups(groups, summaries, incidents, now)
        ending = self._storms_ending(groups, incidents, clusters)

        for key, group in groups.items():
            self._incident(group, summaries[key], incidents.get(key), now, result)
        for ckey, (rule, members) in clusters.items():
            self._cluster(ckey, rule, [groups[m] for m in members], incidents.get(ckey), now, result)
        for ckey, members in ending.items():
            self._cluster_ending(incidents[ckey], [groups[m] for m in members], now, result)
        return result

    @staticmethod
    def _storms_ending(
        groups: Mapping[str, IncidentGroup],
        incidents: Mapping[str, IncidentRecord],
        clusters: Mapping[str, tuple[AggregationRule, list[str]]],
    ) -> dict[str, list[str]]:
        """Node incidents stay members of their storm once they joined it, resolved or not: no node tells
        its own resolve (or anything else) on its own while its storm is open. Returns the storms with no
        member opening any more (every node resolved, or all muted), and resolved ones whose resolve is
        not told yet: cluster key -> the node incidents that were its members."""
        out: dict[str, list[str]] = {}
        for ckey, record in incidents.items():
            if record.kind != IncidentKind.CLUSTER:
                continue
            members = sorted(k for k in groups if (r := incidents.get(k)) is not None and r.parent == ckey)
            untold = any(n.firing for n in record.notify.values())
            over = not (record.firing or untold)
            for m in members:
                # after the storm, a node that fires again is a new incident of its own
                if groups[m].parent is None and not (over and (groups[m].eligible or groups[m].held)):
                    groups[m].parent = ckey
            if not over and ckey not in clusters:
                out[ckey] = members
        return out

    def _cluster_ending(
        self, record: IncidentRecord, members: list[IncidentGroup], now: datetime, result: EvalResult
    ) -> None:
        """A storm with nothing left to tell: resolved (with its resolved message where the route sends
        them) when no member fires any more; quiet while members still fire, muted. Like a node
        incident's resolve, it is described by all its alerts: "NodeDown on 8 nodes", not "on 0"."""
        rule = next((r for r in self.pipeline.aggregation if r.name == record.rule), None)
        still = any(m.firing for m in members)
        headline, labels = record.headline, dict(record.labels)
        alerts = [v for m in members for v in m.alerts]
        if rule is not None and rule.rollup is not None and alerts:
            p = self.pipeline
            summaries = [
                summarize_incident(rule, m.key, m.alerts, severity_label=p.severity_label, severities=p.severities)
                for m in members
            ]
            headline = storm_headline(alerts[0].alertname, summaries, rule.rollup.scope_labels, rule.unit_name)
            labels = {k: v for k, v in common_labels(v.labels for v in alerts).items() if k != p.nodes.label}
        state = next_incident_state(
            record,
            key=record.key,
            kind=IncidentKind.CLUSTER,
            rule=record.rule,
            firing=still,
            eligible=False,
            severity=record.severity,
            headline=headline,
            labels=labels,
            summary={**record.summary, "headline": headline, "alerts": 0},
            parent=None,
            now=now,
        )
        result.incidents[record.key] = state
        if rule is None:  # its rule is gone from the config: it resolves without a word
            return
        routes = self._routes(labels, record.severity)
        self._notify(state, rule, routes, frozenset(), None, record, now, result, quiet=still)

    @staticmethod
    def _moved(
        moves: Mapping[str, str],
        groups: Mapping[str, IncidentGroup],
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

    def _summary(self, group: IncidentGroup) -> IncidentSummary:
        """Counts come from the alerts that count (firing, not muted, not held); an incident with none of
        those (resolved, or all muted) is still described by all of its alerts, but reports nothing firing."""
        p = self.pipeline
        described = group.eligible or group.held or group.alerts
        summary = summarize_incident(
            group.rule, group.key, described, severity_label=p.severity_label, severities=p.severities
        )
        if described is not group.eligible:
            summary = replace(summary, firing=frozenset())
        return summary

    def _rollups(
        self,
        groups: Mapping[str, IncidentGroup],
        summaries: Mapping[str, IncidentSummary],
        incidents: Mapping[str, IncidentRecord],
        now: datetime,
    ) -> dict[str, tuple[AggregationRule, list[str]]]:
        """Cluster key -> (rule, member node-incident keys), for storms that roll up now."""
        candidates: dict[str, dict[str, datetime]] = defaultdict(dict)
        rules: dict[str, AggregationRule] = {}
        for key, group in groups.items():
            # Incidents still in hold-down count too: a storm is recognised as it arrives, not 30 s later.
            opening = group.eligible + group.held
            if group.rule.rollup is None or not opening:
                continue
            ckey = rollup_key(group.rule, opening[0].labels)
            if ckey is None:
                continue
            record = incidents.get(key)
            first = min((v.first_seen for v in opening if v.first_seen), default=now)
            candidates[ckey][key] = record.active_since if record and record.active_since else first
            rules[ckey] = group.rule
        out: dict[str, tuple[AggregationRule, list[str]]] = {}
        for ckey, opened_at in candidates.items():
            rule = rules[ckey]
            assert rule.rollup is not None
            existing = incidents.get(ckey)
            is_open = existing is not None and existing.firing
            members = storm_members(rule.rollup, opened_at, now=now, cluster_open=is_open)
            if members:
                out[ckey] = (rule, sorted(members))
                for m in members:
                    groups[m].parent = ckey
        return out

    def _interval_changes(self, now: datetime, result: EvalResult) -> None:
        """Wake when a time interval starts or ends: what a muted route holds back is sent then, and the
        decisions of the alerts it routes change."""
        for name in self.pipeline.time_intervals:
            change = self._intervals.next_change(name, now)
            if change is not None:
                result.wake(change)

    def _mute(self, route: RouteMatch, now: datetime) -> IntervalMute | None:
        if not route.mute_time_intervals and not route.active_time_intervals:
            return None
        key = (route.mute_time_intervals, route.active_time_intervals)
        if key not in self._mutes:
            self._mutes[key], _ = self._intervals.route_mute(
                mute=route.mute_time_intervals, active=route.active_time_intervals, at=now
            )
        return self._mutes[key]

    def _routes(self, labels: Mapping[str, str], severity: str) -> list[RouteMatch]:
        routed = dict(labels)
        if severity:
            routed[self.pipeline.severity_label] = severity
        seen: set[str] = set()
        out = []
        for match in match_routes(self.pipeline.route, routed):
            if match.receiver not in seen:  # two branches reaching one receiver send one message
                seen.add(match.receiver)
                out.append(match)
        return out

    def _incident(
        self,
        group: IncidentGroup,
        summary: IncidentSummary,
        record: IncidentRecord | None,
        now: datetime,
        result: EvalResult,
    ) -> None:
        all_labels = common_labels(a.labels for a in group.alerts)
        severity = summary.severity or worst_severity(group.alerts, self.pipeline)
        state = next_incident_state(
            record,
            key=group.key,
            kind=IncidentKind.NODE,
            rule=group.rule.name,
            firing=group.firing > 0,
            eligible=bool(group.eligible),
            severity=severity,
            headline=summary.headline,
            labels=all_labels,
            summary=summary_dict(summary, group),
            parent=group.parent,
            now=now,
            activated=min((v.first_seen for v in group.eligible if v.first_seen), default=None),
        )
        result.incidents[group.key] = state
        routes = self._routes(all_labels, severity)
        routed_to = tuple(r.receiver for r in routes)
        mutes = {r.receiver: m for r in routes if (m := self._mute(r, now)) is not None}
        next_send: datetime | None = None
        notified = False
        if group.parent is None:
            notified, next_send = self._notify(
                state,
                group.rule,
                routes,
                summary.firing,
                group,
                record,
                now,
                result,
                quiet=group.muted > 0 or bool(group.held),
            )
        if group.parent is not None:
            mutes = {}  # a rolled-up incident is told by its storm's routes (`_cluster`)
        all_muted = bool(routes) and len(mutes) == len(routes)
        for view in group.eligible:
            decision = self._eligible_decision(
                group, record, routed_to, next_send, notified=notified, all_muted=all_muted
            )
            result.decisions[view.fingerprint] = _with_mutes(decision, mutes)

    @staticmethod
    def _eligible_decision(
        group: IncidentGroup,
        record: IncidentRecord | None,
        routed_to: tuple[str, ...],
        next_send: datetime | None,
        *,
        notified: bool,
        all_muted: bool,
    ) -> AlertDecision:
        """The decision about a firing alert that counts (neither muted by another alert nor held)."""
        if group.parent is not None:
            return AlertDecision(
                Decision.ROLLED_UP, group.parent, routed_to=routed_to, aggregation_rule=group.rule.name
            )
        if all_muted:  # every receiver's route is muted by a time interval: nothing goes out now
            return AlertDecision(Decision.MUTED_BY_INTERVAL, group.key, routed_to=routed_to)
        if len(group.eligible) > 1:
            return AlertDecision(
                Decision.AGGREGATED,
                group.key,
                routed_to=routed_to,
                next_send_at=next_send,
                aggregation_rule=group.rule.name,
            )
        if not notified and record is not None and any(record.notify.get(r) for r in routed_to):
            return AlertDecision(Decision.THROTTLED, group.key, routed_to=routed_to, next_send_at=next_send)
        return AlertDecision(Decision.NOTIFY, group.key, routed_to=routed_to, next_send_at=next_send)

    def _cluster(
        self,
        key: str,
        rule: AggregationRule,
        members: list[IncidentGroup],
        record: IncidentRecord | None,
        now: datetime,
        result: EvalResult,
    ) -> None:
        assert rule.rollup is not None
        # A storm is told as it arrives: members' alerts still in hold-down count (node messages wait for
        # them; a cluster message does not, so it would otherwise undercount the storm it announces).
        p = self.pipeline
        member_summaries = [
            summarize_incident(
                rule, m.key, m.eligible + m.held, severity_label=p.severity_label, severities=p.severities
            )
            for m in members
        ]
        opening = [v for m in members for v in (m.eligible + m.held)]
        alertname = alert_title(opening[0].labels) if opening else ""
        headline = storm_headline(alertname, member_summaries, rule.rollup.scope_labels, rule.unit_name)
        labels = common_labels(v.labels for v in opening)
        labels = {k: v for k, v in labels.items() if k != self.pipeline.nodes.label}
        severity = worst_severity(opening, self.pipeline)
        firing = frozenset().union(*(s.firing for s in member_summaries))
        summary = {
            "headline": headline,
            "nodes": len(members),
            "units": sum(len(s.units) for s in member_summaries),
            "members": [s.headline for s in member_summaries][:MAX_ALERTS_IN_MESSAGE],
            "alerts": len(firing),
            # the facts messages word the storm from, in each receiver's language (alertrouter.i18n)
            "alertname": alertname,
            "unit_name": rule.unit_name,
            "scope": [list(pair) for pair in storm_scope(member_summaries, rule.rollup.scope_labels)],
            "member_facts": [
                {"where": s.where, "units": len(s.units), "units_total": s.units_total}
                for s in member_summaries[:MAX_ALERTS_IN_MESSAGE]
            ],
        }
        state = next_incident_state(
            record,
            key=key,
            kind=IncidentKind.CLUSTER,
            rule=rule.name,
            firing=any(m.firing for m in members),
            eligible=bool(firing),
            severity=severity,
            headline=headline,
            labels=labels,
            summary=summary,
            parent=None,
            now=now,
            activated=min((v.first_seen for v in opening if v.first_seen), default=None),
        )
        result.incidents[key] = state
        routes = self._routes(labels, severity)
        self._notify(state, rule, routes, firing, None, record, now, result, quiet=False)
        mutes = {r.receiver: m for r in routes if (m := self._mute(r, now)) is not None}
        if mutes:  # the storm's message is what its members' alerts wait on
            all_muted = len(mutes) == len(routes)
            for member in members:
                for view in member.eligible:
                    decision = result.decisions[view.fingerprint]
                    if all_muted:
                        decision = AlertDecision(
                            Decision.MUTED_BY_INTERVAL, key, routed_to=tuple(r.receiver for r in routes)
                        )
                    result.decisions[view.fingerprint] = _with_mutes(decision, mutes)

    def _notify(
        self,
        state: IncidentState,
        rule: AggregationRule,
        routes: list[RouteMatch],
        firing: frozenset[str],
        group: IncidentGroup | None,
        record: IncidentRecord | None,
        now: datetime,
        result: EvalResult,
        *,
        quiet: bool,
    ) -> tuple[bool, datetime | None]:
        """Decide per receiver; returns (whether anything was intended, the earliest next send)."""
        sent = False
        earliest: datetime | None = None
        for route in routes:
            previous = record.notify.get(route.receiver) if record else None
            if self._mute(route, now) is not None:
                # Sends nothing while muted; its notify state stays, so what still fires when the mute
                # ends is told then. As in Alertmanager, a resolve during the mute is never told.
                if not firing and not quiet and previous is not None and previous.firing:
                    result.notify_states[(state.key, route.receiver)] = NotifyState(previous.last_sent_at, frozenset())
                continue
            if group is not None and group.held_until is not None and (previous is None or not previous.firing):
                # The first message waits for the incident's alerts in hold-down: "6/8 GPUs", not "1/8" then
                # "6/8"; a hold-down never lasts longer than its rule says.
                result.wake(group.held_until)
                earliest = group.held_until if earliest is None else min(earliest, group.held_until)
                continue
            if not firing and quiet:
                # Nothing to show, but not because it is over: muted or held alerts are not resolved
                # (and a resolved target that is still muted gets no resolved message, as in Alertmanager).
                continue
            policy = ThrottlePolicy(
                group_wait=rule.group_wait if rule.group_wait is not None else route.policy.group_wait,
                group_interval=rule.group_interval if rule.group_interval is not None else route.policy.group_interval,
                repeat_interval=severity_interval(route.policy, state.severity),
                send_resolved=route.policy.send_resolved,
                max_repeats=route.policy.max_repeats,
            )
            decision = needs_update(
                previous,
                firing,
                active_since=state.active_since,
                now=now,
                policy=policy,
                acknowledged=state.acknowledged,
            )
            if decision.reason is None:
                if decision.next_at is not None:
                    result.wake(decision.next_at)
                    earliest = decision.next_at if earliest is None else min(earliest, decision.next_at)
                continue
            new = next_state(previous, decision.reason, firing, now)
            # When the receiver is next due (a repeat), so an idle engine wakes for it.
            follow = needs_update(
                new, firing, active_since=state.active_since, now=now, policy=policy, acknowledged=state.acknowledged
            )
            if follow.next_at is not None:
                result.wake(follow.next_at)
                earliest = follow.next_at if earliest is None else min(earliest, follow.next_at)
            result.notify_states[(state.key, route.receiver)] = new
            result.intents.append(
                Intent(state.key, route.receiver, decision.reason, message_snapshot(state, decision.reason, group, now))
            )
            sent = True
        return sent, earliest

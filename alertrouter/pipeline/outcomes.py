"""What the engine's passes leave, and the telling that leaves it: each node incident's and storm's state,
its routes' notify decision, and its alerts' decisions, kept between passes so that an incremental pass
works out again only what its changes touch (`pipeline.evaluate`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from alertrouter.message.facts import Nearby
from alertrouter.model import IncidentKind
from alertrouter.pipeline.incident import NodeIncident, next_incident_state, node_facts, storm_span, worst_severity
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.sorting import earliest
from alertrouter.pipeline.storms import Storms, ending_state, storm_state
from alertrouter.pipeline.telling import Teller, with_mutes
from alertrouter.pipeline.timeinterval import IntervalMute
from alertrouter.pipeline.types import AlertDecision, Decision, EvalResult, IncidentRecord, IncidentState
from alertrouter.pipeline.wakeups import Wakeups

__all__ = ["Outcomes"]


class Outcomes:
    """The node incidents as last sorted, every alert's decision (and how many of each), every incident's
    state and when it asked to be evaluated again; shared with the `Evaluator` that sorts and re-keys them."""

    def __init__(self, pipeline: CompiledRules, teller: Teller, storms: Storms) -> None:
        self.pipeline = pipeline
        self._teller = teller
        self._storms = storms
        self.groups: dict[str, NodeIncident] = {}
        self._muting_storms: set[str] = set()  # storms whose routes a time interval mutes
        self.decisions: dict[str, AlertDecision] = {}
        self.counts: Counter[str] = Counter()
        self.states: dict[str, IncidentState] = {}
        self.wakeups = Wakeups()  # incident key -> when it asked to be evaluated again
        # A node incident's neighbours in maintenance, from its labels (`pipeline.maintenance.Maintained`).
        self.nearby: Callable[[Mapping[str, str]], tuple[Nearby, ...]] = lambda labels: ()

    def set_decision(self, fp: str, decision: AlertDecision, result: EvalResult) -> None:
        old = self.decisions.get(fp)
        if old is not None:
            self.counts[old.decision.value] -= 1
        self.decisions[fp] = decision
        self.counts[decision.decision.value] += 1
        result.decided.add(fp)

    def drop_decision(self, fp: str) -> None:
        old = self.decisions.pop(fp, None)
        if old is not None:
            self.counts[old.decision.value] -= 1

    def tell_storm(self, ckey: str, incidents: Mapping[str, IncidentRecord], now: datetime, result: EvalResult) -> None:
        """Evaluate storm `ckey` as its membership was left: rolling up, ending, or not (any more) one."""
        members = self._storms.members.get(ckey)
        ending = self._storms.ending.get(ckey)
        if members:
            rule = self._storms.rule(ckey)
            record = incidents.get(ckey)
            tally = self._storms.tally(ckey, self.groups)
            state, firing = storm_state(ckey, rule, tally, record, now, self.pipeline)
            self.states[ckey] = state
            result.evaluated.add(ckey)
            routes = self._teller.routes(state.labels, state.severity)
            groups = self.groups  # its members' alerts are looked at only when a message is made
            _, earliest = self._teller.notify(
                state,
                rule,
                routes,
                firing,
                None,
                record,
                now,
                result,
                quiet=False,
                span=lambda: storm_span((groups[m].group for m in members if m in groups), state.opened_at),
            )
            self.wakeups.wake_at(ckey, earliest)
            mutes = self._teller.mutes(routes, now)
            nodes = tally.member_nodes() if mutes or ckey in self._muting_storms else []
            self._storm_mutes(ckey, nodes, mutes, tuple(r.receiver for r in routes), result)
        elif ending is not None:
            record = incidents[ckey]
            nodes = [self.groups[m] for m in ending]
            state, gone_rule = ending_state(record, nodes, now, self.pipeline)
            self.states[ckey] = state
            result.evaluated.add(ckey)
            self._storm_mutes(ckey, nodes, {}, (), result)
            earliest = None
            if gone_rule is not None:  # else its rule is gone from the config: it resolves without a word
                routes = self._teller.routes(state.labels, state.severity)
                still = state.firing
                _, earliest = self._teller.notify(
                    state,
                    gone_rule,
                    routes,
                    frozenset(),
                    None,
                    record,
                    now,
                    result,
                    quiet=still,
                    span=lambda: storm_span((n.group for n in nodes), state.opened_at),
                )
            self.wakeups.wake_at(ckey, earliest)
        else:
            self.states.pop(ckey, None)
            self.wakeups.wake_at(ckey, None)
            self._storm_mutes(ckey, [], {}, (), result)

    def _storm_mutes(
        self,
        key: str,
        members: Sequence[NodeIncident],
        mutes: Mapping[str, IntervalMute],
        routed_to: tuple[str, ...],
        result: EvalResult,
    ) -> None:
        """The storm's message is what its members' alerts wait on: when time intervals mute its routes,
        their decisions say so. When they no longer do, the members' own decisions stand again."""
        if not mutes:
            if key in self._muting_storms:
                self._muting_storms.discard(key)
                for member in members:
                    for fp, decision in member.decisions.items():
                        self.set_decision(fp, decision, result)
            return
        self._muting_storms.add(key)
        all_muted = len(mutes) == len(routed_to)
        for member in members:
            for view in member.group.eligible:
                decision = member.decisions[view.fingerprint]
                if all_muted:
                    decision = AlertDecision(Decision.MUTED_BY_INTERVAL, key, routed_to=routed_to)
                self.set_decision(view.fingerprint, with_mutes(decision, mutes), result)

    def tell_node(self, node: NodeIncident, record: IncidentRecord | None, now: datetime, result: EvalResult) -> None:
        group, summary, all_labels = node.group, node.summary, node.labels
        severity = summary.severity or worst_severity(group.alerts, self.pipeline)
        headline = summary.headline
        state = next_incident_state(
            record,
            key=group.key,
            kind=IncidentKind.NODE,
            rule=group.rule.name,
            firing=group.firing > 0,
            eligible=bool(group.eligible),
            severity=severity,
            headline=headline,
            labels=all_labels,
            summary=node_facts(summary, group, headline, self.nearby(all_labels)),
            parent=group.parent,
            now=now,
            activated=min((v.first_seen for v in group.eligible if v.first_seen), default=None),
        )
        self.states[group.key] = state
        result.evaluated.add(group.key)
        routes = self._teller.routes(all_labels, severity)
        routed_to = tuple(r.receiver for r in routes)
        mutes = self._teller.mutes(routes, now)
        next_send: datetime | None = None
        notified = False
        if group.parent is None:
            notified, next_send = self._teller.notify(
                state,
                group.rule,
                routes,
                summary.firing,
                group,
                record,
                now,
                result,
                quiet=group.muted > 0 or bool(group.held) or bool(group.stale),
            )
        if group.parent is not None:
            mutes = {}  # a rolled-up incident is told by its storm's routes (`tell_storm`)
        all_muted = bool(routes) and len(mutes) == len(routes)
        if group.eligible:  # the same for every alert that counts: one object they all share
            decision = self._teller.eligible_decision(
                group, record, routed_to, next_send, notified=notified, all_muted=all_muted
            )
            decision = with_mutes(decision, mutes)
            for view in group.eligible:
                node.decisions[view.fingerprint] = decision
        for fp, decision in node.decisions.items():
            self.set_decision(fp, decision, result)
        self.wakeups.wake_at(group.key, earliest(node.hold_wake, next_send))

"""Storms across passes: which node incidents roll up into a cluster incident now, which stay members
of one they joined until it is over, and what a storm's incident says (while it rolls up, and while it
ends). Membership is kept per storm and worked out again only for the storms a pass's changes concern.

Roll-up: more than `threshold` node incidents of one roll-up key opening within `window` become one
cluster incident, which later node incidents of the key join for as long as it stays open. A node
incident that joined a storm stays its member, resolved or not, until the storm is over: no node tells
its own resolve (or anything else) on its own while its storm is open; after the storm, a node that
fires again is a new incident of its own.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import replace
from datetime import datetime
from typing import TypeVar

from alertrouter.labels import alert_title
from alertrouter.message.facts import MemberFacts, StormFacts, Tally, shared_tally
from alertrouter.model import IncidentKind
from alertrouter.pipeline.aggregate import (
    AggregationRule,
    common_labels,
    counted_storm_headline,
    rolls_up,
    scope_of,
    storm_headline,
    summarize_incident,
)
from alertrouter.pipeline.incident import MAX_ALERTS_IN_MESSAGE, NodeIncident, next_incident_state
from alertrouter.pipeline.openings import Openings
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.tally import StormTally
from alertrouter.pipeline.types import IncidentRecord, IncidentState

__all__ = ["Storms", "ending_state", "storm_state"]

_T = TypeVar("_T")


def _keep(into: dict[str, _T], key: str, value: _T | None) -> None:
    """Hold `value` under `key`, or nothing when it is empty."""
    if value:
        into[key] = value
    else:
        into.pop(key, None)


class Storms:
    def __init__(self) -> None:
        self._candidates: dict[str, dict[str, AggregationRule]] = defaultdict(dict)  # ckey -> node key -> rule
        self.members: dict[str, frozenset[str]] = {}  # ckey -> node keys it rolls up now
        self._kept: dict[str, set[str]] = {}  # ckey -> the members it keeps until it is over
        self.ending: dict[str, list[str]] = {}  # ckey -> its members, while it ends
        self._rollup_parent: dict[str, str] = {}
        self._ending_parent: dict[str, str] = {}
        self._children: dict[str, set[str]] = defaultdict(set)  # parent in a node's record -> node keys
        self._record_parent: dict[str, str] = {}
        self._tallies: dict[str, StormTally] = {}  # ckey -> its members' sums, while it rolls up
        self._touched: dict[str, set[str]] = defaultdict(set)  # ckey -> node keys evaluated since its tally
        # ckey -> when its candidates opened, while it is not rolling up; the candidates evaluated since
        self._openings: dict[str, Openings] = {}
        self._reopened: dict[str, set[str]] = defaultdict(set)

    def tally(self, ckey: str, nodes: Mapping[str, NodeIncident]) -> StormTally:
        """The sums over the members storm `ckey` rolls up now (`membership` worked them out)."""
        tally = self._tallies.get(ckey)
        if tally is None:
            tally = self._tallies[ckey] = StormTally()
        tally.update(self.members.get(ckey, frozenset()), nodes, self._touched.pop(ckey, set()))
        return tally

    def forget_sums(self) -> None:
        """Sum every storm afresh at its next evaluation, and its candidates' openings (a full pass does)."""
        self._tallies.clear()
        self._touched.clear()
        self._openings.clear()
        self._reopened.clear()

    def keys(self) -> set[str]:
        """Every storm held: candidates, rolling up, ending."""
        return {k for k, c in self._candidates.items() if c} | self.members.keys() | self.ending.keys()

    def rule(self, ckey: str) -> AggregationRule:
        return next(iter(self._candidates[ckey].values()))

    def candidate(self, key: str, before: str | None, ckey: str | None, rule: AggregationRule) -> None:
        """Node incident `key`, evaluated again, may roll up into `ckey` now (None: into none), and could
        into `before`."""
        for storm in (before, ckey):  # a storm without a tally (or openings) yet sums every member
            if storm is None:
                continue
            if storm in self._tallies:
                self._touched[storm].add(key)
            self.reopened(key, storm)
        if before is not None and before != ckey:
            self._candidates[before].pop(key, None)
        if ckey is not None:
            self._candidates[ckey][key] = rule

    def reopened(self, key: str, ckey: str) -> None:
        """When node incident `key`, a candidate of storm `ckey`, opened may differ: it was evaluated again
        (`candidate`), or has another record (its `active_since`; nothing the tally sums changed)."""
        if ckey in self._openings:
            self._reopened[ckey].add(key)

    def record_parent(self, key: str, parent: str | None) -> set[str]:
        """A node incident's record names `parent` now; the storms this concerns."""
        storms: set[str] = set()
        before = self._record_parent.get(key)
        if before is not None and before != parent:
            self._children[before].discard(key)
            storms.add(before)
        if parent is None:
            self._record_parent.pop(key, None)
        else:
            self._children[parent].add(key)
            self._record_parent[key] = parent
            storms.add(parent)
        return storms

    def named_by(self, key: str) -> str | None:
        """The storm a node incident's record names as its parent."""
        return self._record_parent.get(key)

    def nodes_of(self, ckey: str) -> frozenset[str] | set[str]:
        """The node incidents whose parent storm `ckey` is now: those it rolls up, and those it keeps
        while it ends (see `parent`)."""
        members, kept = self.members.get(ckey, frozenset()), self._kept.get(ckey)
        return members | kept if kept else members

    def parent(self, key: str) -> str | None:
        """The storm a node incident belongs to: the one rolling it up now, else the one it joined."""
        return self._rollup_parent.get(key) or self._ending_parent.get(key)

    def _openings_of(
        self,
        ckey: str,
        candidates: Mapping[str, AggregationRule],
        incidents: Mapping[str, IncidentRecord],
        nodes: Mapping[str, NodeIncident],
    ) -> Openings:
        """When storm `ckey`'s candidates opened: their record's `active_since`, else their first alert's
        first sighting (None: now). Worked out for every candidate the first time, then for those evaluated
        again since (a changed record is evaluated again too)."""
        openings = self._openings.get(ckey)
        if openings is None:
            openings = self._openings[ckey] = Openings()
            again: Iterable[str] = candidates
        else:
            again = self._reopened.pop(ckey, ())
        for key in again:
            if key not in candidates:
                openings.discard(key)
                continue
            own = incidents.get(key)
            openings.set(key, own.active_since if own and own.active_since else nodes[key].first)
        return openings

    def _drop_openings(self, ckey: str) -> None:
        self._openings.pop(ckey, None)
        self._reopened.pop(ckey, None)

    def membership(
        self,
        ckey: str,
        incidents: Mapping[str, IncidentRecord],
        nodes: Mapping[str, NodeIncident],
        now: datetime,
    ) -> set[str]:
        """Work out which node incidents storm `ckey` takes in now (a roll-up) or keeps; returns the node
        incidents whose storm this changed. A storm holds a thousand members: only what can differ from
        the last time is worked out member by member."""
        record = incidents.get(ckey)
        members = self._members_now(ckey, record, incidents, nodes, now)
        kept: set[str] = set()
        ending: list[str] | None = None
        if record is not None and record.kind == IncidentKind.CLUSTER:
            kept, ending = self._kept_now(ckey, record, nodes, members)
        before_members = self.members.get(ckey, frozenset())
        before_kept = self._kept.get(ckey, set())
        # The node incidents whose parent this may change: those whose entry under this storm goes or comes.
        # A node incident is a candidate of one storm and a child of one, so only this storm names it in
        # `rollup` and `ending_of` while it stays: those that stay need no look.
        rollup, ending_of = self._rollup_parent, self._ending_parent
        left, joined = before_members - members, members - before_members
        let_go, kept_now = before_kept - kept, kept - before_kept
        concerned = set(left) | let_go
        concerned.update(k for k in joined if rollup.get(k) != ckey)
        concerned.update(k for k in kept_now if ending_of.get(k) != ckey)
        before = {k: self.parent(k) for k in concerned}
        for k in left:
            if rollup.get(k) == ckey:
                del rollup[k]
        for k in joined:
            rollup[k] = ckey
        for k in let_go:
            if ending_of.get(k) == ckey:
                del ending_of[k]
        for k in kept_now:
            ending_of[k] = ckey
        _keep(self.members, ckey, members)
        if not members:
            self._tallies.pop(ckey, None)
            self._touched.pop(ckey, None)
        _keep(self._kept, ckey, kept)
        _keep(self.ending, ckey, ending)
        return {k for k in concerned if self.parent(k) != before[k]}

    def _members_now(
        self,
        ckey: str,
        record: IncidentRecord | None,
        incidents: Mapping[str, IncidentRecord],
        nodes: Mapping[str, NodeIncident],
        now: datetime,
    ) -> frozenset[str]:
        """The node incidents storm `ckey` rolls up now: every candidate while its incident is open or while
        they roll up (`rolls_up` over their openings in the rule's window), else none."""
        candidates = self._candidates.get(ckey) or {}
        if not candidates:
            self._drop_openings(ckey)
            return frozenset()
        rule = next(iter(candidates.values()))
        assert rule.rollup is not None
        if record is not None and record.firing:  # an open storm takes in every candidate
            self._drop_openings(ckey)
            return frozenset(candidates)
        openings = self._openings_of(ckey, candidates, incidents, nodes)
        if rolls_up(rule.rollup, openings.since(now - rule.rollup.window)):
            return frozenset(candidates)
        return frozenset()

    def _kept_now(
        self, ckey: str, record: IncidentRecord, nodes: Mapping[str, NodeIncident], members: frozenset[str]
    ) -> tuple[set[str], list[str] | None]:
        """The node incidents storm `ckey`'s incident keeps until it is over (every child while it fires or
        a receiver was not told of its resolve; once over, those still counting), and the members it ends
        on when it rolls up none any more (None: it does not end now)."""
        kids = self._children.get(ckey, set()) & nodes.keys()
        untold = any(n.firing for n in record.notify.values())
        if not (record.firing or untold):
            return {m for m in kids if not (nodes[m].group.eligible or nodes[m].group.held)}, None
        return kids, None if members else sorted(kids)


def storm_state(
    key: str,
    rule: AggregationRule,
    tally: StormTally,
    record: IncidentRecord | None,
    now: datetime,
    pipeline: CompiledRules,
) -> tuple[IncidentState, Set[str]]:
    """A rolling-up storm's incident, and the alerts that count for it, from its members' sums (`tally`).
    It is told as it arrives: members' alerts still in hold-down count (node messages wait for them; a
    cluster message does not, so it would otherwise undercount the storm it announces). Each member's part
    (`NodeIncident.opening`) was worked out with the member: the labels common to all their alerts are
    those common to the members' common labels."""
    assert rule.rollup is not None
    first = tally.first_opening()
    views = first.group.eligible + first.group.held if first is not None else []
    alertname = alert_title(views[0].labels) if views else ""
    shared = tally.shared()
    scope = scope_of(shared, rule.rollup.scope_labels)
    headline = counted_storm_headline(alertname, tally.nodes, scope, tally.units, rule.unit_name)
    labels = {k: v for k, v in shared.items() if k != pipeline.nodes.label}
    firing = tally.firing
    head = tally.first_parts(MAX_ALERTS_IN_MESSAGE)
    summary = StormFacts(
        headline=headline,
        nodes=tally.members,
        units=tally.units,
        members=tuple(s.headline for s in head),
        tally=shared_tally(Tally(alerts=len(firing))),
        # the facts messages word the storm from, in each receiver's language (alertrouter.message.i18n)
        alertname=alertname,
        unit_name=rule.unit_name,
        scope=tuple(scope),
        member_facts=tuple(MemberFacts(s.where, len(s.units), s.units_total) for s in head),
    )
    state = next_incident_state(
        record,
        key=key,
        kind=IncidentKind.CLUSTER,
        rule=rule.name,
        firing=tally.any_firing,
        eligible=bool(firing),
        severity=tally.severity(pipeline.severities),
        headline=headline,
        labels=labels,
        summary=summary,
        parent=None,
        now=now,
        activated=tally.activated,
    )
    return state, firing


def ending_state(
    record: IncidentRecord, members: Sequence[NodeIncident], now: datetime, pipeline: CompiledRules
) -> tuple[IncidentState, AggregationRule | None]:
    """A storm with nothing left to tell, and its rule (None: gone from the config; it resolves without a
    word): resolved when no member fires any more; quiet while members still fire, muted. Like a node
    incident's resolve, it is described by all its alerts: "NodeDown on 8 nodes", not "on 0"."""
    rule = next((r for r in pipeline.aggregation if r.name == record.rule), None)
    still = any(m.group.firing for m in members)
    headline, labels = record.headline, dict(record.labels)
    alerts = [v for m in members for v in m.group.alerts]
    if rule is not None and rule.rollup is not None and alerts:
        p = pipeline
        summaries = [
            summarize_incident(
                rule, m.group.key, m.group.alerts, severity_label=p.severity_label, severities=p.severities
            )
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
        summary=_ended(record, headline),
        parent=None,
        now=now,
    )
    return state, rule


def _ended(record: IncidentRecord, headline: str) -> StormFacts:
    """A storm's summary as it ends: as last stated, with the headline of all its alerts and none counting."""
    facts = record.summary if isinstance(record.summary, StormFacts) else StormFacts()
    return replace(facts, headline=headline, tally=shared_tally(replace(facts.tally, alerts=0)))

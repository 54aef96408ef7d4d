"""One engine pass, pure: from the live alerts and what receivers were told, every alert's decision,
every incident's state, and the notifications to send now. No database, no clock of its own.

Order of the stages: node identity, inhibition (and hold-down), aggregation into node incidents,
storm roll-up into cluster incidents, routing, and the notify decision per incident and receiver.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TypeVar

from alertrouter.labels import alert_title, matches_all
from alertrouter.model import AlertView, IncidentKind
from alertrouter.pipeline.aggregate import (
    AggregationRule,
    IncidentSummary,
    assign_rule,
    common_labels,
    incident_key,
    rollup_key,
    severity_rank,
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

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class _Placement:
    """What an alert's labels alone decide, so it is worked out once per fingerprint, not every pass."""

    rule: AggregationRule
    key: str  # its node incident
    hold_down: timedelta | None


@dataclass(slots=True)
class _Node:
    """A node incident as its last evaluation left it: the alerts sorted into it (muted, held, counting),
    what it says, what a storm reads of it, and the decisions about its alerts before a storm's mutes."""

    group: IncidentGroup
    summary: IncidentSummary
    opening: IncidentSummary | None  # of the alerts that count or are held: what a storm counts of it
    ckey: str | None  # the storm it may roll up into, while it has alerts opening
    first: datetime | None  # when its earliest opening alert first fired
    hold_wake: datetime | None  # the earliest end of a hold-down among its alerts
    decisions: dict[str, AlertDecision] = field(default_factory=dict)


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


def _earliest(*times: datetime | None) -> datetime | None:
    return min((t for t in times if t is not None), default=None)


def _keep(into: dict[str, _T], key: str, value: _T | None) -> None:
    """Hold `value` under `key`, or nothing when it is empty."""
    if value:
        into[key] = value
    else:
        into.pop(key, None)


class Evaluator:
    """Evaluates incrementally: a pass works out again only what its changes can touch, and keeps the
    rest as the pass that last evaluated it left it.

    What a node incident decides depends on its alerts (their firing state, labels, first firing),
    the inhibitions and silences muting them, its stored record (what receivers were told, an
    acknowledgement), the storm it belongs to, and the clock only through the times it asked to be
    woken at (a hold-down ending, a group wait, a repeat) and the time intervals of its routes. So a
    pass re-evaluates the incidents of changed alerts, of the targets a changed inhibition source can
    mute or release, of the alerts a silence that started, ended or changed matches, whose record
    changed (by identity: `next_records` and the engine keep an unchanged record's object), and
    whose wake-up is due; the storms of those; and the members a storm took in or let go. A change of
    a time interval's state, or `full=True`, evaluates everything: the periodic safety net, and the
    oracle the incremental passes are tested against (`tests/pipeline/test_incremental.py`).
    """

    def __init__(self, pipeline: CompiledRules) -> None:
        self.pipeline = pipeline
        self._nodes = pipeline.nodes
        self._inhibitor = Inhibitor(pipeline.inhibit_rules)
        self._alerts: dict[str, LiveAlert] = {}
        self._views: dict[str, AlertView] = {}
        self._placements: dict[str, _Placement] = {}
        self._addresses: dict[str, str] = {}  # fingerprint -> the IP address that names its node
        self._keys: dict[str, str] = {}  # fingerprint -> the value its node is looked up by (discovered names)
        self.rekeyed: set[str] = set()  # alerts whose node the last pass renamed
        self._intervals = IntervalClock(pipeline.time_intervals)
        # A route's time-interval mute, worked out once per pass: (mute, active) names -> the mute or None.
        self._mutes: dict[tuple[tuple[str, ...], tuple[str, ...]], IntervalMute | None] = {}
        # What the passes left: node incidents and their alerts, storms, decisions, states, wake-ups.
        self._members: dict[str, set[str]] = {}  # node incident key -> its alerts
        self._groups: dict[str, _Node] = {}
        self._candidates: dict[str, dict[str, AggregationRule]] = defaultdict(dict)  # ckey -> node key -> rule
        self._storm_members: dict[str, frozenset[str]] = {}  # ckey -> node keys it rolls up now
        self._rollup_parent: dict[str, str] = {}
        self._ending_parent: dict[str, str] = {}
        self._children: dict[str, set[str]] = defaultdict(set)  # parent key in a node's record -> node keys
        self._record_parent: dict[str, str] = {}
        self._kept: dict[str, set[str]] = {}  # storm key -> members it keeps until it is over
        self._ending: dict[str, list[str]] = {}  # storm key -> its members, while it is ending
        self._muting_storms: set[str] = set()  # storms whose routes a time interval mutes
        self._decisions: dict[str, AlertDecision] = {}
        self._counts: Counter[str] = Counter()
        self._states: dict[str, IncidentState] = {}
        self._seen: dict[str, IncidentRecord] = {}  # the records the last pass was given
        self._wakes: dict[str, datetime] = {}  # incident key -> when it asked to be evaluated again
        self._wake_heap: list[tuple[datetime, str]] = []
        self._silences_active: frozenset[Silence] = frozenset()
        self._interval_change: datetime | None = None
        self._evaluated_once = False

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

    def _place(self, fp: str, key: str | None) -> None:
        """Move an alert's membership to node incident `key` (None: it is gone)."""
        before = self._placements.get(fp)
        if before is not None and before.key != key:
            members = self._members.get(before.key)
            if members is not None:
                members.discard(fp)
                if not members:
                    del self._members[before.key]
        if key is not None:
            self._members.setdefault(key, set()).add(fp)

    def _sync(
        self,
        changed: Iterable[LiveAlert],
        removed: Iterable[str],
        stale: set[str],
        placed_before: Mapping[str, str],
    ) -> tuple[set[str], dict[str, str]]:
        """Take the changed and removed alerts; the node incidents whose alerts changed, and those
        alerts left for another key (old -> new)."""
        nodes = self._nodes
        dirty: set[str] = set()
        moves: dict[str, str] = {}
        self.rekeyed = set()
        todo: dict[str, LiveAlert] = {}
        for a in changed:
            self._alerts[a.fingerprint] = a
            todo[a.fingerprint] = a
        for fp in stale:
            if fp not in todo and fp in self._alerts:
                todo[fp] = self._alerts[fp]
        gone = set(removed)
        for fp in gone:
            todo.pop(fp, None)
        for fp, a in todo.items():
            old = self._views.get(fp)
            relabel = fp in stale
            if old is not None and not relabel and old.firing == a.firing and old.first_seen == a.fired_at:
                continue
            # The labels of a fingerprint never change: a view made again keeps its enrichment, unless
            # a learned alias or a discovered name or topology label changed it.
            labels = old.labels if old is not None and not relabel else nodes.enrich(a.labels)
            view = AlertView(fp, labels, a.firing, a.starts_at, a.fired_at)
            self._views[fp] = view
            self._inhibitor.update(view)  # a view with other labels is placed again
            self._inhibitor.track(view)
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
                    dirty.add(self._placements[fp].key)
                else:  # placed by another process (before a restart or a lease takeover), if at all
                    before = placed_before.get(fp)
                if before is not None and before != placed.key:
                    moves[before] = placed.key
                self._place(fp, placed.key)
                self._placements[fp] = placed
            dirty.add(self._placements[fp].key)
        for fp in gone:
            self._alerts.pop(fp, None)
            if self._views.pop(fp, None) is None:
                continue
            self._inhibitor.remove(fp)
            self._inhibitor.untrack(fp)
            self._drop_decision(fp)
            dirty.add(self._placements[fp].key)
            self._place(fp, None)
            del self._placements[fp]
            self._addresses.pop(fp, None)
            self._keys.pop(fp, None)
        return dirty, moves

    def holds(self, key: str) -> bool:
        """Whether an incident is still described by live alerts (a node incident's, or a storm's)."""
        return key in self._groups or key in self._states

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
        full: bool = False,
    ) -> EvalResult:
        """A pass over the whole set of live alerts (those missing from `alerts` are gone); it evaluates
        what changed since the last pass, or everything with `full`. See `evaluate_changes`."""
        changed = []
        live: set[str] = set()
        for a in alerts:
            live.add(a.fingerprint)
            if self._alerts.get(a.fingerprint) != a:
                changed.append(a)
        removed = [fp for fp in self._alerts if fp not in live]
        return self.evaluate_changes(
            changed,
            removed,
            incidents,
            now=now,
            silences=silences,
            learned=learned,
            placed_before=placed_before,
            discovered=discovered,
            full=full,
        )

    def evaluate_changes(
        self,
        changed: Iterable[LiveAlert],
        removed: Iterable[str],
        incidents: Mapping[str, IncidentRecord],
        *,
        now: datetime,
        silences: Sequence[Silence] = (),
        learned: Mapping[str, str] | None = None,
        placed_before: Mapping[str, str] | None = None,
        discovered: Discovered | None = None,
        full: bool = False,
    ) -> EvalResult:
        """A pass given the alerts that changed (new, or another firing state or labels) and those gone
        since the last pass. `incidents`: every incident record, as the store holds them.
        `learned`: the learned aliases in force (address -> node); None keeps the last ones.
        `placed_before`: the node incident each alert was last decided under, as stored (fingerprint ->
        key), consulted for alerts this evaluator has not placed yet. A new process places an alert
        under the name learned meanwhile at once; its stored key still says it left the address, and
        the move is made as when a pass re-keys it (`_moved`). `discovered`: what the node lookup found
        (None keeps the last); a change re-keys and re-labels the alerts it concerns in this pass."""
        stale = self._discover(discovered) if discovered is not None else set()
        stale |= self._learn(learned) if learned is not None else set()
        dirty, moves = self._sync(changed, removed, stale, placed_before or {})
        result = EvalResult()
        silencer = Silencer(silences)
        self._mutes = {}
        full = full or not self._evaluated_once or (self._interval_change is not None and now >= self._interval_change)
        self._evaluated_once = True

        # what else the changes touch: inhibition targets, silences, records, wake-ups
        touched = self._inhibitor.affected()
        active = frozenset(s for s in silences if s.matchers and s.active(now))
        if active != self._silences_active:
            flipped = active ^ self._silences_active
            for fp, view in self._views.items():
                if any(matches_all(s.matchers, view.labels) for s in flipped):
                    touched.add(fp)
            self._silences_active = active
        dirty.update(self._placements[fp].key for fp in touched if fp in self._placements)
        storms = self._records_changed(incidents, dirty)
        due = self._due(now)
        dirty.update(k for k in due if k in self._members or k in self._groups)
        storms.update(k for k in due if k not in self._members)
        if full:
            dirty.update(self._members)
            dirty.update(self._groups)
            storms.update(k for k, c in self._candidates.items() if c)
            storms.update(self._storm_members)
            storms.update(self._ending)
            storms.update(k for k, r in incidents.items() if r.kind == IncidentKind.CLUSTER)
            storms.update(k for k, s in self._states.items() if s.kind == IncidentKind.CLUSTER)

        # inhibition, hold-down, aggregation: the node incidents whose alerts or mutes may have changed
        for key in sorted(dirty):
            storms.update(self._sort(key, silencer, now))
        given = incidents
        incidents = self._moved(moves, self._members, incidents, result)

        # storms: which node incidents they take in (or keep) now
        regrouped: set[str] = set()
        for ckey in sorted(storms):
            regrouped |= self._membership(ckey, incidents, now)
        for key in sorted(dirty | regrouped):
            node = self._groups.get(key)
            if node is None:
                continue
            node.group.parent = self._rollup_parent.get(key) or self._ending_parent.get(key)
            self._incident(node, incidents.get(key), now, result)
        for ckey in sorted(storms):
            self._storm(ckey, incidents, now, result)

        result.decisions = dict(self._decisions)
        result.incidents = dict(self._states)
        result.counts = {k: n for k, n in self._counts.items() if n}
        change = silencer.next_change(now)
        if change is not None:
            result.wake(change)
        self._interval_changes(now, result)
        heap = self._wake_heap
        while heap and self._wakes.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)  # a wake-up asked for before the incident was evaluated again
        if heap:
            result.wake(heap[0][0])
        self._seen = dict(given)
        return result

    def _records_changed(self, incidents: Mapping[str, IncidentRecord], dirty: set[str]) -> set[str]:
        """Records that are not the objects the last pass was given: their node incidents are evaluated
        again (into `dirty`), and the storms they are or name as parent (returned)."""
        storms: set[str] = set()
        seen = self._seen
        changed = [k for k, r in incidents.items() if seen.get(k) is not r]
        changed += [k for k in seen if k not in incidents]
        for key in changed:
            record = incidents.get(key)
            if record is not None and record.kind == IncidentKind.CLUSTER:
                storms.add(key)
                continue
            dirty.add(key)
            parent = record.parent if record is not None else None
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

    def _due(self, now: datetime) -> set[str]:
        """The incidents whose wake-up time has come."""
        out: set[str] = set()
        heap = self._wake_heap
        while heap and heap[0][0] <= now:
            at, key = heapq.heappop(heap)
            if self._wakes.get(key) == at:
                del self._wakes[key]
                out.add(key)
        return out

    def _set_wake(self, key: str, at: datetime | None) -> None:
        if at is None:
            self._wakes.pop(key, None)
        elif self._wakes.get(key) != at:
            self._wakes[key] = at
            heapq.heappush(self._wake_heap, (at, key))

    def _set_decision(self, fp: str, decision: AlertDecision, result: EvalResult) -> None:
        old = self._decisions.get(fp)
        if old is not None:
            self._counts[old.decision.value] -= 1
        self._decisions[fp] = decision
        self._counts[decision.decision.value] += 1
        result.decided.add(fp)

    def _drop_decision(self, fp: str) -> None:
        old = self._decisions.pop(fp, None)
        if old is not None:
            self._counts[old.decision.value] -= 1

    def _sort(self, key: str, silencer: Silencer, now: datetime) -> set[str]:
        """Sort a node incident's alerts into muted, held and counting (inhibition, silences, hold-down)
        and describe it; returns the storms this may concern (the one it may roll up into, before and
        now, and the one its record names as parent)."""
        storms: set[str] = set()
        old = self._groups.get(key)
        if old is not None and old.ckey is not None:
            storms.add(old.ckey)
        if (parent := self._record_parent.get(key)) is not None:
            storms.add(parent)
        fps = self._members.get(key)
        if not fps:
            if old is not None:  # its alerts are gone: so is the incident from what passes evaluate
                del self._groups[key]
                self._states.pop(key, None)
                self._set_wake(key, None)
                if old.ckey is not None:
                    self._candidates[old.ckey].pop(key, None)
            return storms
        rule = self._placements[next(iter(fps))].rule
        group = IncidentGroup(key, rule)
        decisions: dict[str, AlertDecision] = {}
        hold_wake: datetime | None = None
        for fp in sorted(fps):
            view = self._views[fp]
            group.alerts.append(view)
            muted = self._inhibitor.mutes(view)
            # After inhibition, as Alertmanager: an inhibited alert is reported as inhibited, not silenced.
            silence = silencer.mutes(view.labels, now) if muted is None and silencer else None
            if muted is not None:
                group.muted += 1
                decisions[fp] = AlertDecision(
                    Decision.INHIBITED, key, inhibited_by=muted.source_fingerprint, inhibit_rule=muted.rule
                )
            elif silence is not None:
                group.muted += 1
                group.silenced += 1
                decisions[fp] = AlertDecision(Decision.SILENCED, key, silenced_by=silence.id)
            if not view.firing:
                if muted is None and silence is None:
                    decisions[fp] = AlertDecision(Decision.RESOLVED, key)
                continue
            group.firing += 1
            if muted is not None or silence is not None:
                continue
            hold = self._placements[fp].hold_down
            if hold and view.first_seen is not None and now < view.first_seen + hold:
                until = view.first_seen + hold
                group.held.append(view)
                group.held_until = until if group.held_until is None else max(group.held_until, until)
                decisions[fp] = AlertDecision(Decision.HELD, key, held_until=until)
                hold_wake = until if hold_wake is None else min(hold_wake, until)
                continue
            group.eligible.append(view)
        opening_views = group.eligible + group.held
        opening: IncidentSummary | None = None
        ckey: str | None = None
        if rule.rollup is not None and opening_views:
            p = self.pipeline
            opening = summarize_incident(
                rule, key, opening_views, severity_label=p.severity_label, severities=p.severities
            )
            ckey = rollup_key(rule, opening_views[0].labels)
        first = min((v.first_seen for v in opening_views if v.first_seen), default=None)
        self._groups[key] = _Node(group, self._summary(group), opening, ckey, first, hold_wake, decisions)
        if old is not None and old.ckey is not None and old.ckey != ckey:
            self._candidates[old.ckey].pop(key, None)
        if ckey is not None:
            self._candidates[ckey][key] = rule
            storms.add(ckey)
        return storms

    def _parent(self, key: str) -> str | None:
        """The storm a node incident belongs to: the one rolling it up now, else the one it joined."""
        return self._rollup_parent.get(key) or self._ending_parent.get(key)

    def _membership(self, ckey: str, incidents: Mapping[str, IncidentRecord], now: datetime) -> set[str]:
        """Work out which node incidents storm `ckey` takes in now (a roll-up) or keeps (one that
        joined it stays a member while it is open: no node tells its own resolve, or anything else, on
        its own; after the storm, a node that fires again is a new incident of its own). Returns the
        node incidents whose storm this changed."""
        candidates = self._candidates.get(ckey) or {}
        record = incidents.get(ckey)
        members: frozenset[str] = frozenset()
        if candidates:
            rule = next(iter(candidates.values()))
            assert rule.rollup is not None
            opened: dict[str, datetime] = {}
            for key in candidates:
                own = incidents.get(key)
                opened[key] = own.active_since if own and own.active_since else (self._groups[key].first or now)
            is_open = record is not None and record.firing
            members = storm_members(rule.rollup, opened, now=now, cluster_open=is_open)
        kept: set[str] = set()
        ending: list[str] | None = None
        if record is not None and record.kind == IncidentKind.CLUSTER:
            kids = sorted(k for k in self._children.get(ckey, ()) if k in self._groups)
            untold = any(n.firing for n in record.notify.values())
            over = not (record.firing or untold)
            for m in kids:
                group = self._groups[m].group
                if not (over and (group.eligible or group.held)):
                    kept.add(m)
            if not over and not members:
                ending = kids
        before_members = self._storm_members.get(ckey, frozenset())
        before_kept = self._kept.get(ckey, set())
        concerned = before_members | members | before_kept | kept
        before = {k: self._parent(k) for k in concerned}
        for k in before_members - members:
            if self._rollup_parent.get(k) == ckey:
                del self._rollup_parent[k]
        for k in members:
            self._rollup_parent[k] = ckey
        for k in before_kept - kept:
            if self._ending_parent.get(k) == ckey:
                del self._ending_parent[k]
        for k in kept:
            self._ending_parent[k] = ckey
        _keep(self._storm_members, ckey, members)
        _keep(self._kept, ckey, kept)
        _keep(self._ending, ckey, ending)
        return {k for k in concerned if self._parent(k) != before[k]}

    def _storm(self, ckey: str, incidents: Mapping[str, IncidentRecord], now: datetime, result: EvalResult) -> None:
        """Evaluate storm `ckey` as `_membership` left it: rolling up, ending, or not (any more) one."""
        members = self._storm_members.get(ckey)
        ending = self._ending.get(ckey)
        if members:
            rule = next(iter(self._candidates[ckey].values()))
            self._cluster(ckey, rule, [self._groups[m] for m in sorted(members)], incidents.get(ckey), now, result)
        elif ending is not None:
            self._cluster_ending(incidents[ckey], [self._groups[m] for m in ending], now, result)
        else:
            self._states.pop(ckey, None)
            self._set_wake(ckey, None)
            self._storm_mutes(ckey, [], {}, (), result)

    def _cluster_ending(self, record: IncidentRecord, members: list[_Node], now: datetime, result: EvalResult) -> None:
        """A storm with nothing left to tell: resolved (with its resolved message where the route sends
        them) when no member fires any more; quiet while members still fire, muted. Like a node
        incident's resolve, it is described by all its alerts: "NodeDown on 8 nodes", not "on 0"."""
        rule = next((r for r in self.pipeline.aggregation if r.name == record.rule), None)
        still = any(m.group.firing for m in members)
        headline, labels = record.headline, dict(record.labels)
        alerts = [v for m in members for v in m.group.alerts]
        if rule is not None and rule.rollup is not None and alerts:
            p = self.pipeline
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
            summary={**record.summary, "headline": headline, "alerts": 0},
            parent=None,
            now=now,
        )
        self._states[record.key] = state
        result.evaluated.add(record.key)
        self._storm_mutes(record.key, [], {}, (), result)
        if rule is None:  # its rule is gone from the config: it resolves without a word
            self._set_wake(record.key, None)
            return
        routes = self._routes(labels, record.severity)
        _, earliest = self._notify(state, rule, routes, frozenset(), None, record, now, result, quiet=still)
        self._set_wake(record.key, earliest)

    @staticmethod
    def _moved(
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

    def _interval_changes(self, now: datetime, result: EvalResult) -> None:
        """Wake when a time interval starts or ends: what a muted route holds back is sent then, and the
        decisions of the alerts it routes change (that pass evaluates everything)."""
        self._interval_change = None
        for name in self.pipeline.time_intervals:
            change = self._intervals.next_change(name, now)
            if change is not None:
                result.wake(change)
                self._interval_change = change if self._interval_change is None else min(self._interval_change, change)

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

    def _incident(self, node: _Node, record: IncidentRecord | None, now: datetime, result: EvalResult) -> None:
        group, summary = node.group, node.summary
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
        self._states[group.key] = state
        result.evaluated.add(group.key)
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
            node.decisions[view.fingerprint] = _with_mutes(decision, mutes)
        for fp, decision in node.decisions.items():
            self._set_decision(fp, decision, result)
        self._set_wake(group.key, _earliest(node.hold_wake, next_send))

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
        members: list[_Node],
        record: IncidentRecord | None,
        now: datetime,
        result: EvalResult,
    ) -> None:
        assert rule.rollup is not None
        # A storm is told as it arrives: members' alerts still in hold-down count (node messages wait for
        # them; a cluster message does not, so it would otherwise undercount the storm it announces).
        # Each member's part (`_Node.opening`) is worked out when the member is: the labels common to
        # all their alerts are those common to the members' common labels.
        parts = [m.opening for m in members if m.opening is not None]
        first = next((m.group.eligible + m.group.held for m in members if m.opening is not None), [])
        alertname = alert_title(first[0].labels) if first else ""
        headline = storm_headline(alertname, parts, rule.rollup.scope_labels, rule.unit_name)
        labels = common_labels(s.common_labels for s in parts)
        labels = {k: v for k, v in labels.items() if k != self.pipeline.nodes.label}
        severity = min(
            (s.severity for s in parts), key=lambda v: severity_rank(v, self.pipeline.severities), default=""
        )
        firing = frozenset().union(*(s.firing for s in parts))
        summary = {
            "headline": headline,
            "nodes": len(members),
            "units": sum(len(s.units) for s in parts),
            "members": [s.headline for s in parts[:MAX_ALERTS_IN_MESSAGE]],
            "alerts": len(firing),
            # the facts messages word the storm from, in each receiver's language (alertrouter.i18n)
            "alertname": alertname,
            "unit_name": rule.unit_name,
            "scope": [list(pair) for pair in storm_scope(parts, rule.rollup.scope_labels)],
            "member_facts": [
                {"where": s.where, "units": len(s.units), "units_total": s.units_total}
                for s in parts[:MAX_ALERTS_IN_MESSAGE]
            ],
        }
        state = next_incident_state(
            record,
            key=key,
            kind=IncidentKind.CLUSTER,
            rule=rule.name,
            firing=any(m.group.firing for m in members),
            eligible=bool(firing),
            severity=severity,
            headline=headline,
            labels=labels,
            summary=summary,
            parent=None,
            now=now,
            activated=min((m.first for m in members if m.first), default=None),
        )
        self._states[key] = state
        result.evaluated.add(key)
        routes = self._routes(labels, severity)
        _, earliest = self._notify(state, rule, routes, firing, None, record, now, result, quiet=False)
        self._set_wake(key, earliest)
        mutes = {r.receiver: m for r in routes if (m := self._mute(r, now)) is not None}
        self._storm_mutes(key, members, mutes, tuple(r.receiver for r in routes), result)

    def _storm_mutes(
        self,
        key: str,
        members: Sequence[_Node],
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
                        self._set_decision(fp, decision, result)
            return
        self._muting_storms.add(key)
        all_muted = len(mutes) == len(routed_to)
        for member in members:
            for view in member.group.eligible:
                decision = member.decisions[view.fingerprint]
                if all_muted:
                    decision = AlertDecision(Decision.MUTED_BY_INTERVAL, key, routed_to=routed_to)
                self._set_decision(view.fingerprint, _with_mutes(decision, mutes), result)

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
        """Decide per receiver; returns (whether anything was intended, the earliest time this incident
        must be looked at again: a hold-down's end, a group wait, the next repeat)."""
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
                    earliest = decision.next_at if earliest is None else min(earliest, decision.next_at)
                continue
            new = next_state(previous, decision.reason, firing, now)
            # When the receiver is next due (a repeat), so an idle engine wakes for it.
            follow = needs_update(
                new, firing, active_since=state.active_since, now=now, policy=policy, acknowledged=state.acknowledged
            )
            if follow.next_at is not None:
                earliest = follow.next_at if earliest is None else min(earliest, follow.next_at)
            result.notify_states[(state.key, route.receiver)] = new
            result.intents.append(
                Intent(state.key, route.receiver, decision.reason, message_snapshot(state, decision.reason, group, now))
            )
            sent = True
        return sent, earliest

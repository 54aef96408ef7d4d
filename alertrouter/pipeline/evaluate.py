"""One engine pass, pure: from the live alerts and what receivers were told, every alert's decision,
every incident's state, and the notifications to send now. No database, no clock of its own.

Order of the stages: node identity (`views`), staleness of resolved alerts (`stale`: a resolve that
came with its node going dark is not told), inhibition (and hold-down), aggregation into node
incidents, storm roll-up into cluster incidents (`storms`), routing and the notify decision per
incident and receiver (`telling`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime
from functools import partial
from types import MappingProxyType

from alertrouter.model import IncidentKind
from alertrouter.pipeline.incident import (
    NodeIncident,
    merge_moved,
    next_incident_state,
    storm_span,
    summary_dict,
    worst_severity,
)
from alertrouter.pipeline.inhibit import Inhibitor
from alertrouter.pipeline.nodes import Discovered
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.silence import Silence, Silencer
from alertrouter.pipeline.sorting import earliest, sort_incident
from alertrouter.pipeline.storms import Storms, ending_state, storm_state
from alertrouter.pipeline.telling import Teller, with_mutes
from alertrouter.pipeline.timeinterval import IntervalMute
from alertrouter.pipeline.types import (
    AlertDecision,
    Decision,
    EvalResult,
    IncidentRecord,
    IncidentState,
    LiveAlert,
)
from alertrouter.pipeline.views import AlertViews
from alertrouter.pipeline.wakeups import Wakeups

__all__ = ["Evaluator"]


def _nothing() -> None:
    pass


class Evaluator:
    """Evaluates incrementally: a pass works out again only what its changes can touch, and keeps the
    rest as the pass that last evaluated it left it.

    What a node incident decides depends on its alerts (their firing state, labels, first firing),
    the inhibitions and silences muting them, its stored record (what receivers were told, an
    acknowledgement), the storm it belongs to, and the clock only through the times it asked to be
    woken at (a hold-down ending, a group wait, a repeat) and the time intervals of its routes. So a
    pass re-evaluates the incidents of changed alerts, of the targets a changed inhibition source can
    mute or release, of the nodes where an alert staleness reads changed (a NodeDown firing makes the
    node's resolved GPU alerts stale), of the alerts a silence that started, ended or changed matches,
    whose record changed (by identity: `next_records` and the engine keep an unchanged record's
    object), and whose wake-up is due; the storms of those; and the members a storm took in or let go. A change of
    a time interval's state, or `full=True`, evaluates everything: the periodic safety net, and the
    oracle the incremental passes are tested against (`tests/pipeline/test_incremental.py`).
    """

    def __init__(self, pipeline: CompiledRules, *, courtesy: Callable[[], None] | None = None) -> None:
        """`courtesy`: called between items of a pass's loops (an alert, an incident, a storm), by a
        pass run in a worker thread to let the event loop in (`alertrouter.courtesy`)."""
        self.pipeline = pipeline
        self._courtesy = courtesy or _nothing
        self._inhibitor = Inhibitor(pipeline.inhibit_rules)
        stale = pipeline.stale
        self._views = AlertViews(
            pipeline.aggregation,
            pipeline.nodes,
            self._inhibitor,
            stale.reading if stale.enabled else None,
            courtesy=self._courtesy,
        )
        self._teller = Teller(pipeline)
        self._storms = Storms()
        # What the passes left: node incidents, decisions, incident states, wake-ups.
        self._groups: dict[str, NodeIncident] = {}
        self._muting_storms: set[str] = set()  # storms whose routes a time interval mutes
        self._decisions: dict[str, AlertDecision] = {}
        self._counts: Counter[str] = Counter()
        self._states: dict[str, IncidentState] = {}
        self._seen: dict[str, IncidentRecord] = {}  # the records the last pass was given
        self._wakeups = Wakeups()  # incident key -> when it asked to be evaluated again
        self._silences_active: frozenset[Silence] = frozenset()
        self._interval_change: datetime | None = None
        self._evaluated_once = False
        # Node incident -> the incidents whose resolve its stale alerts wait for (`pipeline.stale.Told`): sorted
        # again when one of those records changes; their messages go first in a pass.
        self._waits: dict[str, set[str]] = {}
        self._given: Mapping[str, IncidentRecord] = {}
        self._dues: dict[str, datetime | None] = {}  # this pass's `Teller.resolve_due`, by incident key

    @property
    def rekeyed(self) -> set[str]:
        """The alerts whose node the last pass renamed."""
        return self._views.rekeyed

    def holds(self, key: str) -> bool:
        """Whether an incident is still described by live alerts (a node incident's, or a storm's)."""
        return key in self._groups or key in self._states

    def label_of(self, fingerprint: str, name: str) -> str | None:
        """A label of an alert as the last pass saw it, enrichment (node, topology) included."""
        return self._views.label_of(fingerprint, name)

    def alerts_of(self, key: str) -> list[str]:
        """The alerts decided under incident `key` as the last pass left them (a node incident's own, a
        storm's rolled up), by fingerprint: found through its members, not among every decision."""
        members, decisions = self._views.members, self._decisions
        nodes = (key, *self._storms.nodes_of(key))
        fps = {fp for n in nodes for fp in members.get(n, ()) if (d := decisions.get(fp)) and d.incident == key}
        return sorted(fps)

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
            if self._views.alerts.get(a.fingerprint) != a:
                changed.append(a)
        removed = [fp for fp in self._views.alerts if fp not in live]
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
        records_changed: Collection[str] | None = None,
        due_max: int | None = None,
    ) -> EvalResult:
        """A pass given the alerts that changed (new, or another firing state or labels) and those gone
        since the last pass. `incidents`: every incident record, as the store holds them.
        `learned`: the learned aliases in force (address -> node); None keeps the last ones.
        `placed_before`: the node incident each alert was last decided under, as stored (fingerprint ->
        key), consulted for alerts this evaluator has not placed yet. A new process places an alert
        under the name learned meanwhile at once; its stored key still says it left the address, and
        the move is made as when a pass re-keys it (`_moved`). `discovered`: what the node lookup found
        (None keeps the last); a change re-keys and re-labels the alerts it concerns in this pass.
        `records_changed`: the keys whose record may be another object than the last pass was given
        (the engine knows what it wrote and read); None: every record is compared. `due_max`: when more
        wake-ups than this have come, an incremental pass takes none of them: they stay due, for the
        next pass (`EvalResult.deferred`; `wake_at` is then no later than `now`)."""
        views = self._views
        stale = views.discover(discovered) if discovered is not None else set()
        stale |= views.learn(learned) if learned is not None else set()
        synced = views.sync(changed, removed, stale, placed_before or {})
        for fp in synced.gone:
            self._drop_decision(fp)
        dirty = synced.dirty
        if self.pipeline.stale.enabled:
            # An alert's staleness reads the other alerts of its node: a change to one is a change to all.
            dirty |= views.on_nodes(synced.nodes)
        result = EvalResult()
        silencer = Silencer(silences)
        interval_change = self._teller.new_pass(now)
        full = full or not self._evaluated_once or (self._interval_change is not None and now >= self._interval_change)
        self._evaluated_once = True

        # what else the changes touch: inhibition targets, silences, records, wake-ups
        touched = self._inhibitor.affected()
        active = frozenset(s for s in silences if s.matchers and s.active(now))
        if active != self._silences_active:
            touched |= views.matching(s.matchers for s in active ^ self._silences_active)
            self._silences_active = active
        dirty.update(views.placements[fp].key for fp in touched if fp in views.placements)
        storms, retold, new_records = self._records_changed(incidents, records_changed)
        self._given, self._dues = incidents, {}
        if self._waits and new_records:  # the resolve they waited for may have been told
            told = set(new_records)
            dirty.update(k for k, keys in self._waits.items() if not keys.isdisjoint(told))
        due, result.deferred = self._wakeups.due(now, None if full else due_max)
        # An incident sorted again only because its wake-up came (a hold-down ending, a repeat) keeps its
        # alerts' mutes: a change of an inhibition or a silence would have made it dirty above.
        woken = set() if full else {k for k in due if k in self._groups and k not in dirty}
        dirty.update(k for k in due if k in views.members or k in self._groups)
        storms.update(k for k in due if k not in views.members)
        if full:
            self._storms.forget_sums()  # and every storm summed afresh: the incremental one's oracle
            dirty.update(views.members)
            dirty.update(self._groups)
            storms |= self._storms.keys()
            storms.update(k for k, r in incidents.items() if r.kind == IncidentKind.CLUSTER)
            storms.update(k for k, s in self._states.items() if s.kind == IncidentKind.CLUSTER)

        # inhibition, hold-down, aggregation: the node incidents whose alerts or mutes may have changed
        courtesy = self._courtesy
        for key in sorted(dirty):
            courtesy()
            storms |= self._sort(key, silencer, now, woken=key in woken)
        retold -= dirty
        for key in retold:
            storms |= self._record_changed(key)
        given = incidents
        incidents = merge_moved(synced.moves, views.members, incidents, result)

        # storms: which node incidents they take in (or keep) now; then each incident told
        regrouped: set[str] = set()
        for ckey in sorted(storms):
            courtesy()
            regrouped |= self._storms.membership(ckey, incidents, self._groups, now)
        for key in sorted(dirty | regrouped | retold):
            courtesy()
            node = self._groups.get(key)
            if node is not None:
                node.group.parent = self._storms.parent(key)
                self._incident(node, incidents.get(key), now, result)
        for ckey in sorted(storms):
            courtesy()
            self._storm(ckey, incidents, now, result)

        # Read-only views of what the evaluator holds, not copies (a copy of 100,000 decisions per pass
        # cost more than a 100-alert pass's evaluation): valid until the next pass.
        if self._waits and len(result.intents) > 1:
            # A node's recovery before its GPUs' in the same pass: the incidents waited for tell first.
            first = set().union(*self._waits.values())
            result.intents.sort(key=lambda i: i.incident not in first)
        result.decisions = MappingProxyType(self._decisions)
        result.incidents = MappingProxyType(self._states)
        result.counts = {k: n for k, n in self._counts.items() if n}
        for wake in (silencer.next_change(now), interval_change):
            if wake is not None:
                result.wake(wake)
        self._interval_change = interval_change
        if (wake := self._wakeups.earliest()) is not None:
            result.wake(wake)
        self._remember(given, new_records if records_changed is not None else None)
        return result

    def _remember(self, given: Mapping[str, IncidentRecord], keys: Iterable[str] | None) -> None:
        """Keep the records this pass was given (those of `keys`; None: all) for the next to compare."""
        if keys is None:
            self._seen = dict(given)
            return
        for key in keys:
            if (record := given.get(key)) is None:
                self._seen.pop(key, None)
            else:
                self._seen[key] = record

    def _records_changed(
        self, incidents: Mapping[str, IncidentRecord], keys: Collection[str] | None
    ) -> tuple[set[str], set[str], list[str]]:
        """Records that are not the objects the last pass was given (looked for among `keys` when given,
        else among all). Returns the storms they are or name as parent, the node incidents to tell again
        (`_record_changed`), and the keys of those records."""
        storms: set[str] = set()
        nodes: set[str] = set()
        seen = self._seen
        if keys is None:
            changed = [k for k, r in incidents.items() if seen.get(k) is not r]
            changed += [k for k in seen if k not in incidents]
        else:
            changed = [k for k in keys if seen.get(k) is not incidents.get(k)]
        for key in changed:
            record = incidents.get(key)
            if record is not None and record.kind == IncidentKind.CLUSTER:
                storms.add(key)
                continue
            nodes.add(key)
            storms |= self._storms.record_parent(key, record.parent if record is not None else None)
        return storms, nodes, changed

    def _record_changed(self, key: str) -> set[str]:
        """A node incident whose record changed and whose alerts did not: told again (`_incident`: what
        receivers were told, its opening, its acknowledgement), not sorted again (`_sort` reads no record).
        Returns the storm it may roll up into, which counts its opening again (the record's `active_since`);
        the one its record names as parent is `_records_changed`'s. Most such records are the previous
        pass's own writes: a storm's thousand members written as they roll up, told again here at a
        fraction of sorting their alerts again."""
        node = self._groups.get(key)
        if node is None or node.ckey is None:
            return set()
        self._storms.reopened(key, node.ckey)
        return {node.ckey}

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

    def _sort(self, key: str, silencer: Silencer, now: datetime, *, woken: bool = False) -> set[str]:
        """Sort a node incident's alerts into muted, held and counting (inhibition, silences, hold-down)
        and describe it (`pipeline.sorting`); returns the storms this may concern (the one it may roll up
        into, before and now, and the one its record names as parent). `woken`: only its wake-up is why
        (its alerts keep their mutes: `sort_incident`'s `kept`)."""
        storms: set[str] = set()
        old = self._groups.get(key)
        if old is not None and old.ckey is not None:
            storms.add(old.ckey)
        if (parent := self._storms.named_by(key)) is not None:
            storms.add(parent)
        views = self._views
        fps = views.members.get(key)
        self._waits.pop(key, None)
        if not fps:
            if old is not None:  # its alerts are gone: so is the incident from what passes evaluate
                del self._groups[key]
                self._states.pop(key, None)
                self._wakeups.wake_at(key, None)
                self._storms.candidate(key, old.ckey, None, old.group.rule)
            return storms
        kept = old.decisions if woken and old is not None else None
        told = partial(self._resolve_due, key, now)
        node = sort_incident(key, fps, views, self.pipeline, self._inhibitor, silencer, now, kept=kept, told=told)
        self._groups[key] = node
        ckey = node.ckey
        self._storms.candidate(key, old.ckey if old is not None else None, ckey, node.group.rule)
        if ckey is not None:
            storms.add(ckey)
        return storms

    def _resolve_due(self, waiting: str, now: datetime, source: str) -> datetime | None:
        """When the resolve of the incident telling about source-down alert `source` is due (its storm's, when
        rolled up), for node incident `waiting`, which is sorted again when that incident's record changes."""
        placement = self._views.placements.get(source)
        if placement is None:
            return None
        key = placement.key
        record = self._given.get(key)
        if record is not None and record.parent is not None:
            key, record = record.parent, self._given.get(record.parent)
        self._waits.setdefault(waiting, set()).add(key)
        if key not in self._dues:
            self._dues[key] = None if record is None else self._teller.resolve_due(record, placement.rule, now)
        return self._dues[key]

    def _storm(self, ckey: str, incidents: Mapping[str, IncidentRecord], now: datetime, result: EvalResult) -> None:
        """Evaluate storm `ckey` as its membership was left: rolling up, ending, or not (any more) one."""
        members = self._storms.members.get(ckey)
        ending = self._storms.ending.get(ckey)
        if members:
            rule = self._storms.rule(ckey)
            record = incidents.get(ckey)
            tally = self._storms.tally(ckey, self._groups)
            state, firing = storm_state(ckey, rule, tally, record, now, self.pipeline)
            self._states[ckey] = state
            result.evaluated.add(ckey)
            routes = self._teller.routes(state.labels, state.severity)
            groups = self._groups  # its members' alerts are looked at only when a message is made
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
            self._wakeups.wake_at(ckey, earliest)
            mutes = self._teller.mutes(routes, now)
            nodes = tally.member_nodes() if mutes or ckey in self._muting_storms else []
            self._storm_mutes(ckey, nodes, mutes, tuple(r.receiver for r in routes), result)
        elif ending is not None:
            record = incidents[ckey]
            nodes = [self._groups[m] for m in ending]
            state, gone_rule = ending_state(record, nodes, now, self.pipeline)
            self._states[ckey] = state
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
            self._wakeups.wake_at(ckey, earliest)
        else:
            self._states.pop(ckey, None)
            self._wakeups.wake_at(ckey, None)
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
                        self._set_decision(fp, decision, result)
            return
        self._muting_storms.add(key)
        all_muted = len(mutes) == len(routed_to)
        for member in members:
            for view in member.group.eligible:
                decision = member.decisions[view.fingerprint]
                if all_muted:
                    decision = AlertDecision(Decision.MUTED_BY_INTERVAL, key, routed_to=routed_to)
                self._set_decision(view.fingerprint, with_mutes(decision, mutes), result)

    def _incident(self, node: NodeIncident, record: IncidentRecord | None, now: datetime, result: EvalResult) -> None:
        group, summary, all_labels = node.group, node.summary, node.labels
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
            mutes = {}  # a rolled-up incident is told by its storm's routes (`_storm`)
        all_muted = bool(routes) and len(mutes) == len(routes)
        if group.eligible:  # the same for every alert that counts: one object they all share
            decision = self._teller.eligible_decision(
                group, record, routed_to, next_send, notified=notified, all_muted=all_muted
            )
            decision = with_mutes(decision, mutes)
            for view in group.eligible:
                node.decisions[view.fingerprint] = decision
        for fp, decision in node.decisions.items():
            self._set_decision(fp, decision, result)
        self._wakeups.wake_at(group.key, earliest(node.hold_wake, next_send))

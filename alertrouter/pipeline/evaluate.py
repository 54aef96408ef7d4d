"""One engine pass, pure: from the live alerts and what receivers were told, every alert's decision,
every incident's state, and the notifications to send now. No database, no clock of its own.

Order of the stages: node identity (`views`), staleness of resolved alerts (`stale`: a resolve that
came with its node going dark is not told), inhibition (and hold-down), aggregation into node
incidents, storm roll-up into cluster incidents (`storms`), routing and the notify decision per
incident and receiver (`telling`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from types import MappingProxyType

from alertrouter.model import IncidentKind
from alertrouter.pipeline.folding import FoldingInhibitor
from alertrouter.pipeline.incident import merge_moved, triaged_incident
from alertrouter.pipeline.maintenance import Maintained, Window
from alertrouter.pipeline.nodes import Discovered
from alertrouter.pipeline.outcomes import Outcomes
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.silence import Silence, Silencer
from alertrouter.pipeline.sorting import sort_incident
from alertrouter.pipeline.storms import Storms
from alertrouter.pipeline.telling import Teller
from alertrouter.pipeline.types import EvalResult, IncidentRecord, LiveAlert
from alertrouter.pipeline.views import AlertViews

__all__ = ["Evaluator"]


def _nothing() -> None:
    pass


@dataclass(slots=True)
class _Work:
    """A pass's work: the node incidents to sort again (`dirty`), the storms to evaluate, the node incidents
    to tell again for their record alone (`retold`), the changed records' keys, and the incidents sorted
    again only because their wake-up came (`woken`: their alerts keep their mutes)."""

    dirty: set[str]
    storms: set[str]
    retold: set[str]
    new_records: list[str]
    woken: set[str]


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
        pass run in a worker thread to let the event loop in (`alertrouter.process.courtesy`)."""
        self.pipeline = pipeline
        self._courtesy = courtesy or _nothing
        self._inhibitor = FoldingInhibitor(pipeline.inhibit_rules, pipeline.follow_ons, pipeline.nodes.label)
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
        # What the passes left: node incidents, decisions, incident states, wake-ups (pipeline/outcomes.py).
        self._out = Outcomes(pipeline, self._teller, self._storms)
        self._seen: dict[str, IncidentRecord] = {}  # the records the last pass was given
        self._silences_active: frozenset[Silence] = frozenset()
        self._maintenance = Maintained()  # the nodes in maintenance (`pipeline.maintenance`)
        self._out.nearby = self._maintenance.nearby
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
        return key in self._out.groups or key in self._out.states

    def label_of(self, fingerprint: str, name: str) -> str | None:
        """A label of an alert as the last pass saw it, enrichment (node, topology) included."""
        return self._views.label_of(fingerprint, name)

    def alerts_of(self, key: str) -> list[str]:
        """The alerts decided under incident `key` as the last pass left them (a node incident's own, a
        storm's rolled up), by fingerprint: found through its members, not among every decision."""
        members, decisions = self._views.members, self._out.decisions
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
        maintenance: Sequence[Window] = (),
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
            maintenance=maintenance,
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
        maintenance: Sequence[Window] = (),
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
        next pass (`EvalResult.deferred`; `wake_at` is then no later than `now`). `maintenance`: the windows
        in force now or later (`pipeline.maintenance`); a node entering or leaving one is a change."""
        views = self._views
        stale = views.discover(discovered) if discovered is not None else set()
        stale |= views.learn(learned) if learned is not None else set()
        synced = views.sync(changed, removed, stale, placed_before or {})
        for fp in synced.gone:
            self._out.drop_decision(fp)
        dirty = synced.dirty
        if self.pipeline.stale.enabled:
            # An alert's staleness reads the other alerts of its node: a change to one is a change to all.
            dirty |= views.on_nodes(synced.nodes)
        touched = views.matching(self._maintenance.update(maintenance, views.nodes, now))
        dirty.update(views.placements[fp].key for fp in touched if fp in views.placements)
        result = EvalResult()
        silencer = Silencer(silences)
        interval_change = self._teller.new_pass(now)
        full = full or not self._evaluated_once or (self._interval_change is not None and now >= self._interval_change)
        self._evaluated_once = True
        work = self._touched(dirty, incidents, silences, records_changed, now, full=full, due_max=due_max, out=result)
        self._sort_and_tell(work, silencer, synced.moves, incidents, now, result)
        self._finish(result, silencer, interval_change, now)
        self._remember(incidents, work.new_records if records_changed is not None else None)
        return result

    def _touched(
        self,
        dirty: set[str],
        incidents: Mapping[str, IncidentRecord],
        silences: Sequence[Silence],
        records_changed: Collection[str] | None,
        now: datetime,
        *,
        full: bool,
        due_max: int | None,
        out: EvalResult,
    ) -> _Work:
        """What else the changes touch, beside the node incidents of the changed alerts (`dirty`): inhibition
        targets, silences, records, wake-ups; everything on a `full` pass. Sets `out.deferred`."""
        views = self._views
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
        due, out.deferred = self._out.wakeups.due(now, None if full else due_max)
        groups = self._out.groups
        # An incident sorted again only because its wake-up came (a hold-down ending, a repeat) keeps its
        # alerts' mutes: a change of an inhibition or a silence would have made it dirty above.
        woken = set() if full else {k for k in due if k in groups and k not in dirty}
        dirty.update(k for k in due if k in views.members or k in groups)
        storms.update(k for k in due if k not in views.members)
        if full:
            self._storms.forget_sums()  # and every storm summed afresh: the incremental one's oracle
            dirty.update(views.members)
            dirty.update(groups)
            storms |= self._storms.keys()
            storms.update(k for k, r in incidents.items() if r.kind == IncidentKind.CLUSTER)
            storms.update(k for k, s in self._out.states.items() if s.kind == IncidentKind.CLUSTER)
        return _Work(dirty, storms, retold, new_records, woken)

    def _sort_and_tell(
        self,
        work: _Work,
        silencer: Silencer,
        moves: Mapping[str, str],
        incidents: Mapping[str, IncidentRecord],
        now: datetime,
        result: EvalResult,
    ) -> None:
        """Inhibition, hold-down, aggregation of the node incidents whose alerts or mutes may have changed;
        then which node incidents the storms take in (or keep) now; then each incident told, with the records
        of incidents whose alerts moved to another node merged (`merge_moved`)."""
        courtesy = self._courtesy
        dirty, storms, retold = work.dirty, work.storms, work.retold
        for key in sorted(dirty):
            courtesy()
            storms |= self._sort(key, silencer, now, woken=key in work.woken)
        retold -= dirty
        for key in retold:
            storms |= self._record_changed(key)
        incidents = merge_moved(moves, self._views.members, incidents, result)
        regrouped: set[str] = set()
        for ckey in sorted(storms):
            courtesy()
            regrouped |= self._storms.membership(ckey, incidents, self._out.groups, now)
        for key in sorted(dirty | regrouped | retold):
            courtesy()
            node = self._out.groups.get(key)
            if node is not None:
                node.group.parent = self._storms.parent(key)
                self._out.tell_node(node, incidents.get(key), now, result)
        for ckey in sorted(storms):
            courtesy()
            self._out.tell_storm(ckey, incidents, now, result)

    def _finish(self, result: EvalResult, silencer: Silencer, interval_change: datetime | None, now: datetime) -> None:
        """The pass's intents in order, what the evaluator holds, and when the next pass is due."""
        if self._waits and len(result.intents) > 1:
            # A node's recovery before its GPUs' in the same pass: the incidents waited for tell first.
            first = set().union(*self._waits.values())
            result.intents.sort(key=lambda i: i.incident not in first)
        # Read-only views of what the evaluator holds, not copies (a copy of 100,000 decisions per pass
        # cost more than a 100-alert pass's evaluation): valid until the next pass.
        result.decisions = MappingProxyType(self._out.decisions)
        result.incidents = MappingProxyType(self._out.states)
        result.counts = {k: n for k, n in self._out.counts.items() if n}
        for wake in (silencer.next_change(now), interval_change, self._maintenance.next_change):
            if wake is not None:
                result.wake(wake)
        self._interval_change = interval_change
        if (wake := self._out.wakeups.earliest()) is not None:
            result.wake(wake)

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
        """A node incident whose record changed and whose alerts did not: told again (`Outcomes.tell_node`: what
        receivers were told, its opening, its acknowledgement), not sorted again (`_sort` reads no record).
        Returns the storm it may roll up into, which counts its opening again (the record's `active_since`);
        the one its record names as parent is `_records_changed`'s. Most such records are the previous
        pass's own writes: a storm's thousand members written as they roll up, told again here at a
        fraction of sorting their alerts again."""
        node = self._out.groups.get(key)
        if node is None or node.ckey is None:
            return set()
        self._storms.reopened(key, node.ckey)
        return {node.ckey}

    def _sort(self, key: str, silencer: Silencer, now: datetime, *, woken: bool = False) -> set[str]:
        """Sort a node incident's alerts into muted, held and counting (inhibition, silences, hold-down)
        and describe it (`pipeline.sorting`); returns the storms this may concern (the one it may roll up
        into, before and now, and the one its record names as parent). `woken`: only its wake-up is why
        (its alerts keep their mutes: `sort_incident`'s `kept`)."""
        storms: set[str] = set()
        old = self._out.groups.get(key)
        if old is not None and old.ckey is not None:
            storms.add(old.ckey)
        if (parent := self._storms.named_by(key)) is not None:
            storms.add(parent)
        views = self._views
        fps = views.members.get(key)
        self._waits.pop(key, None)
        if not fps:
            if old is not None:  # its alerts are gone: so is the incident from what passes evaluate
                del self._out.groups[key]
                self._out.states.pop(key, None)
                self._out.wakeups.wake_at(key, None)
                self._storms.candidate(key, old.ckey, None, old.group.rule)
            return storms
        kept = old.decisions if woken and old is not None else None
        told = partial(self._resolve_due, key, now)
        maintained = self._maintenance.active
        node = sort_incident(
            key, fps, views, self.pipeline, self._inhibitor, silencer, now, kept=kept, told=told, maintenance=maintained
        )
        if (triaged := self._inhibitor.describe(node.group.alerts)) is not None:
            triaged_incident(node, triaged, self.pipeline.follow_ons.action_label)
        self._out.groups[key] = node
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

"""What the engine's passes see of the live alerts, kept between passes: each alert's view (labels
enriched with its node and topology), its placement (aggregation rule, node incident, hold-down), the
members of each node incident, and the inhibitor's index of them. Only the alerts that changed, left,
or were renamed by a learned alias or a discovered name are worked out again."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta

from alertrouter.labels import Matcher, matches_all
from alertrouter.model import AlertView
from alertrouter.pipeline.aggregate import AggregationRule, assign_rule, incident_key
from alertrouter.pipeline.inhibit import Inhibitor
from alertrouter.pipeline.nodes import Discovered, NodeIdentity
from alertrouter.pipeline.stale import Reading
from alertrouter.pipeline.types import LiveAlert

__all__ = ["AlertViews", "Placement", "Synced"]


@dataclass(frozen=True, slots=True)
class Placement:
    """What an alert's labels alone decide, so it is worked out once per fingerprint, not every pass."""

    rule: AggregationRule
    key: str  # its node incident
    hold_down: timedelta | None


@dataclass(slots=True)
class Synced:
    """What taking a pass's changes did: the node incidents whose alerts changed, the node incidents
    all of whose alerts left for another key (old -> new), and the alerts that are gone."""

    dirty: set[str]
    moves: dict[str, str]
    gone: list[str]
    nodes: set[str] = field(default_factory=set)  # the nodes of the alerts that changed or left


class AlertViews:
    def __init__(
        self,
        aggregation: Sequence[AggregationRule],
        nodes: NodeIdentity,
        inhibitor: Inhibitor,
        read: Callable[[Mapping[str, str]], Reading | None] | None = None,
        *,
        courtesy: Callable[[], None],
    ) -> None:
        """`read`: what staleness reads of an alert's enriched labels (`StaleRule.reading`), None for the
        alerts it does not read; those it does (targets and source-down alerts) are the ones `by_node`
        indexes and `Synced.nodes` reports. None: staleness reads nothing. `courtesy`: called before each
        alert `sync` takes (`Evaluator`)."""
        self._read = read
        self._courtesy = courtesy
        self._aggregation = aggregation
        self.nodes = nodes
        self.inhibitor = inhibitor
        self.alerts: dict[str, LiveAlert] = {}
        self.views: dict[str, AlertView] = {}
        self.placements: dict[str, Placement] = {}
        self.members: dict[str, set[str]] = {}  # node incident key -> its alerts
        self.by_node: dict[str, set[str]] = {}  # node label value -> the alerts staleness reads on it
        self.readings: dict[str, Reading] = {}  # fingerprint -> what staleness reads of it, for those alerts
        self._addresses: dict[str, str] = {}  # fingerprint -> the IP address that names its node
        self._keys: dict[str, str] = {}  # fingerprint -> the value its node is looked up by (discovered names)
        self.rekeyed: set[str] = set()  # alerts whose node the last sync renamed

    def learn(self, learned: Mapping[str, str]) -> set[str]:
        """Take a new learned-alias map; the fingerprints whose node it may rename."""
        before = self.nodes.learned
        if learned == before:
            return set()
        changed = {a for a in before.keys() | learned.keys() if before.get(a) != learned.get(a)}
        self.nodes = replace(self.nodes, learned=dict(learned))
        return {fp for fp, address in self._addresses.items() if address in changed}

    def discover(self, discovered: Discovered) -> set[str]:
        """Take a new discovered snapshot; the fingerprints whose node or topology labels it may change:
        those looked up by a key whose entry changed, and those on a node whose labels changed."""
        before = self.nodes.discovered
        if discovered is before:
            return set()
        old, new = before.names, discovered.names
        keys = {k for k in old.keys() | new.keys() if old.get(k) != new.get(k)}
        was, now = before.topology, discovered.topology
        nodes = {n for n in was.keys() | now.keys() if was.get(n) != now.get(n)}
        self.nodes = replace(self.nodes, discovered=discovered)
        stale = {fp for fp, key in self._keys.items() if key in keys}
        if nodes:
            label = self.nodes.label
            stale.update(fp for fp, view in self.views.items() if view.labels.get(label) in nodes)
        return stale

    def matching(self, matcher_sets: Iterable[Sequence[Matcher]]) -> set[str]:
        """The alerts whose labels match every matcher of any of the sets (a silence that flipped)."""
        sets = list(matcher_sets)
        if not sets:
            return set()
        return {fp for fp, v in self.views.items() if any(matches_all(m, v.labels) for m in sets)}

    def label_of(self, fingerprint: str, name: str) -> str | None:
        """A label of an alert as the last sync saw it, enrichment (node, topology) included."""
        view = self.views.get(fingerprint)
        return None if view is None else view.labels.get(name)

    def node_of(self, fp: str) -> str | None:
        view = self.views.get(fp)
        return None if view is None else view.labels.get(self.nodes.label)

    def on_nodes(self, nodes: Iterable[str]) -> set[str]:
        """The node incidents that have an alert on any of `nodes`."""
        placements = self.placements
        return {placements[fp].key for n in nodes for fp in self.by_node.get(n, ())}

    def _reindex(self, fp: str, old: AlertView | None, labels: Mapping[str, str], out: Synced) -> None:
        """Index a (re)made view by its node if staleness reads it; its nodes, before and now, are touched."""
        label = self.nodes.label
        was = old.labels.get(label) if old is not None else None
        if was is not None and fp not in self.by_node.get(was, ()):
            was = None
        if old is not None and labels is old.labels:  # the same labels read the same (firing or not)
            reading = self.readings.get(fp)
        else:
            reading = self._read(labels) if self._read is not None else None
        if reading is None:
            self.readings.pop(fp, None)
        else:
            self.readings[fp] = reading
        node = labels.get(label) if reading is not None else None
        self._index_node(fp, was, node)
        out.nodes.update(n for n in (was, node) if n)

    def _index_node(self, fp: str, before: str | None, after: str | None) -> None:
        if before == after:
            return
        if before is not None and (fps := self.by_node.get(before)) is not None:
            fps.discard(fp)
            if not fps:
                del self.by_node[before]
        if after is not None:
            self.by_node.setdefault(after, set()).add(fp)

    def _place(self, fp: str, key: str | None) -> None:
        """Move an alert's membership to node incident `key` (None: it is gone)."""
        before = self.placements.get(fp)
        if before is not None and before.key != key:
            members = self.members.get(before.key)
            if members is not None:
                members.discard(fp)
                if not members:
                    del self.members[before.key]
        if key is not None:
            self.members.setdefault(key, set()).add(fp)

    def sync(
        self,
        changed: Iterable[LiveAlert],
        removed: Iterable[str],
        stale: set[str],
        placed_before: Mapping[str, str],
    ) -> Synced:
        """Take the changed and removed alerts, and re-enrich the `stale` ones. `placed_before`: the node
        incident each alert was last decided under, as stored, for alerts not placed here yet."""
        nodes = self.nodes
        out = Synced(set(), {}, [])
        self.rekeyed = set()
        todo, timed, gone = self._take(changed, removed, stale)
        courtesy = self._courtesy
        for fp, a in todo.items():
            courtesy()
            old = self.views.get(fp)
            relabel = fp in stale
            # A resolved alert's end is told ("lasted"): a new endsAt of one makes its view again.
            ended = a.firing or (old is not None and old.ends_at == a.ends_at)
            if old is not None and not relabel and old.firing == a.firing and old.first_seen == a.fired_at and ended:
                if fp in timed:
                    out.dirty.add(self.placements[fp].key)
                    if (node := old.labels.get(nodes.label)) is not None and fp in self.by_node.get(node, ()):
                        out.nodes.add(node)
                continue
            # The labels of a fingerprint never change: a view made again keeps its enrichment, unless
            # a learned alias or a discovered name or topology label changed it.
            labels = old.labels if old is not None and not relabel else nodes.enrich(a.labels)
            view = AlertView(fp, labels, a.firing, a.starts_at, a.fired_at, None if a.firing else a.ends_at)
            self.views[fp] = view
            self._reindex(fp, old, labels, out)
            self.inhibitor.update(view)  # a view with other labels is placed again
            self.inhibitor.track(view)
            if old is None:
                address = nodes.address(a.labels)
                if address is not None:
                    self._addresses[fp] = address
                key = nodes.key(a.labels)
                if key is not None:
                    self._keys[fp] = key
            if old is None or (relabel and labels != old.labels):
                rule = assign_rule(self._aggregation, labels)
                # One key string per node incident, not one per alert (a node's GPUs share it).
                placed = Placement(rule, sys.intern(incident_key(rule, labels)), self.inhibitor.hold_down(view))
                if old is not None:
                    self.rekeyed.add(fp)
                    before: str | None = self.placements[fp].key
                    out.dirty.add(self.placements[fp].key)
                else:  # placed by another process (before a restart or a lease takeover), if at all
                    before = placed_before.get(fp)
                if before is not None and before != placed.key:
                    out.moves[before] = placed.key
                self._place(fp, placed.key)
                self.placements[fp] = placed
            out.dirty.add(self.placements[fp].key)
        self._drop(gone, out)
        return out

    def _take(
        self, changed: Iterable[LiveAlert], removed: Iterable[str], stale: set[str]
    ) -> tuple[dict[str, LiveAlert], set[str], set[str]]:
        """Hold the changed alerts; returns the alerts to make views of again (the changed and the `stale`
        ones, but the removed), those whose times alone changed, and the removed."""
        todo: dict[str, LiveAlert] = {}
        timed: set[str] = set()  # alerts whose times alone changed (staleness reads them)
        for a in changed:
            prev = self.alerts.get(a.fingerprint)
            if prev is not None and (prev.starts_at, prev.ends_at) != (a.starts_at, a.ends_at):
                timed.add(a.fingerprint)
            self.alerts[a.fingerprint] = a
            todo[a.fingerprint] = a
        for fp in stale:
            if fp not in todo and fp in self.alerts:
                todo[fp] = self.alerts[fp]
        gone = set(removed)
        for fp in gone:
            todo.pop(fp, None)
        return todo, timed, gone

    def _drop(self, gone: set[str], out: Synced) -> None:
        """Let go of the removed alerts: their views, readings, inhibitions and placements."""
        nodes = self.nodes
        for fp in sorted(gone):
            self.alerts.pop(fp, None)
            left = self.views.pop(fp, None)
            if left is None:
                continue
            if (node := left.labels.get(nodes.label)) is not None and fp in self.by_node.get(node, ()):
                self._index_node(fp, node, None)
                out.nodes.add(node)
            self.readings.pop(fp, None)
            self.inhibitor.remove(fp)
            self.inhibitor.untrack(fp)
            out.dirty.add(self.placements[fp].key)
            out.gone.append(fp)
            self._place(fp, None)
            del self.placements[fp]
            self._addresses.pop(fp, None)
            self._keys.pop(fp, None)

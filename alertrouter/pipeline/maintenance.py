"""Maintenance: a node-scoped cousin of a silence. An alert whose node is in maintenance is decided
`maintenance`: stored and shown, never sent; a resolve meanwhile is not told either. When the window
ends while the alert still fires, its incident is told at once: the group wait counts from the alert's
first firing, as after a silence (`types.inhibited_only`).

A window names a node as people write it (a name, an IP, an alias); `InMaintenance` meets it with
alerts through the node identity (`pipeline.nodes`), so `10.0.0.7` matches the alerts of the node
that address is known as.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial

from alertrouter.labels import Matcher, MatchType
from alertrouter.message.facts import Nearby
from alertrouter.pipeline.nodes import NodeIdentity

__all__ = [
    "CLUSTER",
    "CORDONED",
    "EFFECTS",
    "FOREVER",
    "MANUAL",
    "NEIGHBOURS",
    "InMaintenance",
    "Maintained",
    "TaintRule",
    "Window",
    "canonical_node",
    "cluster_windows",
]

NEIGHBOURS = "rack"  # nodes with the same value of this topology label are neighbours
MANUAL = "manual"  # started by a person (CLI, API, console)
CLUSTER = "cluster"  # read from the cluster by the node lookup: a cordon or a configured taint
CORDONED = "cordoned"  # the reason of a cordoned node (`kube_node_spec_unschedulable == 1`)
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")  # Kubernetes' taint effects
FOREVER = datetime.max.replace(tzinfo=UTC)  # the end of a cluster window: when the cluster says so


@dataclass(frozen=True, slots=True)
class Window:
    id: str
    node: str
    starts_at: datetime
    ends_at: datetime
    reason: str = ""
    by: str = ""
    source: str = MANUAL

    def active(self, now: datetime) -> bool:
        return self.starts_at <= now < self.ends_at


@dataclass(frozen=True, slots=True)
class TaintRule:
    """A taint that puts a node in maintenance: its key, and when given its value and effect too."""

    key: str
    value: str | None = None
    effect: str | None = None

    def matches(self, key: str, value: str, effect: str) -> bool:
        if key != self.key:
            return False
        return (self.value is None or value == self.value) and (self.effect is None or effect == self.effect)


def cluster_windows(held: Mapping[str, tuple[str, datetime]]) -> list[Window]:
    """The lookup's nodes under repair as windows without an end: each lasts while the cluster says so."""
    return [Window(f"{CLUSTER}:{n}", n, since, FOREVER, why, "", CLUSTER) for n, (why, since) in sorted(held.items())]


class InMaintenance:
    """The windows in force, by node (canonical, through `canonical`). Deterministic: of several windows
    on one node, the one that started first (then by id) is the one an alert names."""

    def __init__(self, windows: Iterable[Window] = (), canonical: Callable[[str], str] = str) -> None:
        self._windows = sorted(windows, key=lambda w: (w.starts_at, w.id))
        self._canonical = canonical

    def __bool__(self) -> bool:
        return bool(self._windows)

    def active(self, now: datetime) -> Mapping[str, Window]:
        """Canonical node -> the window it is in now."""
        out: dict[str, Window] = {}
        for window in self._windows:
            if window.active(now):
                out.setdefault(self._canonical(window.node), window)
        return out

    def next_change(self, now: datetime) -> datetime | None:
        """When a window starts or ends next: the engine must look again then, alerts or not."""
        times = [t for w in self._windows for t in (w.starts_at, w.ends_at) if now < t < FOREVER]
        return min(times, default=None)


def canonical_node(nodes: NodeIdentity, name: str) -> str:
    """The node a window's name is, as alerts are placed: an address or alias through the topology's
    aliases, the lookup and learned aliases; a name that none of those maps is taken as it is."""
    return replace(nodes, sources=("instance",)).node_of({"instance": name}) or name


class Maintained:
    """What the evaluator holds of maintenance between passes: the nodes in maintenance now and when
    that changes next by time alone."""

    def __init__(self) -> None:
        self.active: Mapping[str, Window] = {}
        self.next_change: datetime | None = None
        self._label = "node"
        self._by_rack: dict[str, list[tuple[str, Window]]] = {}  # rack -> (node, window) in maintenance

    def nearby(self, labels: Mapping[str, str]) -> tuple[Nearby, ...]:
        """The nodes in maintenance in the rack of the node `labels` name (itself left out), by name."""
        rack, node = labels.get(NEIGHBOURS), labels.get(self._label)
        if not rack or not self._by_rack:
            return ()
        found = (w for n, w in self._by_rack.get(rack, ()) if n != node)
        return tuple(Nearby(w.node, w.reason, w.ends_at if w.ends_at < FOREVER else None) for w in found)

    def update(self, windows: Sequence[Window], nodes: NodeIdentity, now: datetime) -> list[list[Matcher]]:
        """Take this pass's windows; matchers (on `nodes.label`) for the alerts of every node that entered
        or left maintenance, or whose window changed: their incidents are sorted again."""
        held = nodes.discovered.maintenance
        if not windows and not held and not self.active:
            self.next_change, self._by_rack = None, {}
            return []
        if held:
            windows = [*windows, *cluster_windows(held)]
        index = InMaintenance(windows, partial(canonical_node, nodes))
        active = index.active(now)
        changed = sorted(n for n in active.keys() | self.active.keys() if active.get(n) != self.active.get(n))
        self.active, self.next_change, self._label = active, index.next_change(now), nodes.label
        self._by_rack = {}
        for node, window in sorted(active.items()):
            rack = (nodes.topology.get(node) or nodes.discovered.topology.get(node) or {}).get(NEIGHBOURS)
            if rack:
                self._by_rack.setdefault(rack, []).append((node, window))
        return [[Matcher(nodes.label, MatchType.EQ, node)] for node in changed]

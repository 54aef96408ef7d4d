"""What the lookup knows between refreshes: every claim and topology label with when an answer last
had it, and the `Discovered` snapshot resolved from them. Pure bookkeeping, the clock given.

A claim is kept for `keep_for` after the last answer that had it, so neither a Prometheus that is
down nor a series that vanished with its node (a dead node-exporter's `node_uname_info` goes stale
in five minutes; the node's NodeDown needs its name then) drops a name at once. A series that fails
keeps its claims; a series that answers replaces them, except those it no longer has, which age.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import NamedTuple

from alertrouter.discovery.parse import RANKS, Claim
from alertrouter.pipeline.nodes import NOTHING_DISCOVERED, Discovered

__all__ = ["Book", "Entry", "Resolved"]


class Entry(NamedTuple):
    """A claim in force, as shown by the API: the winning claim of its key (a tuple: one per address
    and pod of a big cluster, 300,000 made every refresh)."""

    key: str
    node: str
    source: str
    first_seen: datetime
    last_seen: datetime
    losers: tuple[str, ...] = ()  # other nodes claiming the key, that lost (see RANKS)


@dataclass(frozen=True, slots=True)
class Resolved:
    discovered: Discovered
    entries: tuple[Entry, ...]
    conflicts: tuple[Entry, ...]  # entries whose key is claimed by other nodes at the same rank
    # entries by source, every source of RANKS (counted with them, off the event loop: 300,000 in a big cluster)
    by_source: Mapping[str, int] = field(default_factory=lambda: dict.fromkeys(RANKS, 0))


def _nothing() -> None:
    pass


class Book:
    def __init__(self, keep_for: timedelta) -> None:
        self.keep_for = keep_for
        self._claims: dict[str, dict[Claim, tuple[datetime, datetime]]] = {}  # series -> claim -> first, last
        self._answered: dict[str, datetime] = {}  # series -> its last successful answer
        self._topology: dict[str, tuple[dict[str, str], datetime]] = {}  # node -> labels, last seen
        self._maintenance: dict[str, tuple[str, datetime, datetime]] = {}  # node -> reason, since, last seen
        self.resolved = Resolved(NOTHING_DISCOVERED, (), ())

    def took(
        self, series: str, claims: Iterable[Claim], now: datetime, courtesy: Callable[[], None] = _nothing
    ) -> None:
        """A successful answer of `series`. `courtesy`: called before each claim, when this runs in a worker
        thread (`alertrouter.process.courtesy`), as in `resolve`."""
        before = self._claims.get(series, {})
        fresh = {}
        for c in claims:
            courtesy()
            fresh[c] = (before[c][0] if c in before else now, now)
        for claim, seen in before.items():
            if claim not in fresh:
                fresh[claim] = seen  # gone from the answer: ages out after keep_for
        # Replaced, not changed in place: this runs in a worker thread while the API may read `sources`.
        self._claims = {**self._claims, series: fresh}
        self._answered[series] = now

    def took_topology(self, topology: Mapping[str, Mapping[str, str]], now: datetime) -> None:
        """A successful answer of `kube_node_labels` (already mapped to alertrouter labels)."""
        for node, labels in topology.items():
            self._topology[node] = (dict(labels), now)

    def took_maintenance(self, held: Mapping[str, str], now: datetime) -> None:
        """A successful read of the cordons and taints (`discovery.cordons`): a node it no longer has leaves
        maintenance at once (what still fires on it is told at once); one still held keeps its start, unless
        the reason changed."""
        before = self._maintenance
        self._maintenance = {
            node: (why, before[node][1] if node in before and before[node][0] == why else now, now)
            for node, why in held.items()
        }

    def resolve(self, now: datetime, courtesy: Callable[[], None] = _nothing) -> bool:
        """Drop what was last seen `keep_for` ago and work out the snapshot; True if it changed.
        `courtesy`: called before each claim and each key, when this runs in a worker thread."""
        cutoff = now - self.keep_for
        self._claims = {
            series: {c: seen for c, seen in claims.items() if seen[1] > cutoff}
            for series, claims in self._claims.items()
        }
        self._topology = {n: v for n, v in self._topology.items() if v[1] > cutoff}
        self._maintenance = {n: v for n, v in self._maintenance.items() if v[2] > cutoff}

        by_key: dict[str, list[tuple[bool, Claim, datetime, datetime]]] = {}
        for series, claims in self._claims.items():
            answered = self._answered[series]
            for claim, (first, last) in claims.items():
                courtesy()
                by_key.setdefault(claim.key, []).append((last < answered, claim, first, last))
        nodes = {c.node for claims in self._claims.values() for c in claims}
        entries, conflicts = [], []
        # In no given order (sorting 300,000 keys held the interpreter, a C call the event loop waits out).
        for key, found in by_key.items():
            courtesy()
            if len(found) == 1:  # claimed once, by one node: nearly every key of a big cluster
                _, best, first, last = found[0]
                if not (best.source == "kube_pod_info/pod" and key in nodes):
                    entries.append(Entry(key, best.node, best.source, first, last))
                continue
            # what its series' latest answer still says over what only ages (an address reused), then
            # the lowest rank, then the newest answer (a renamed address), then the smallest name
            found.sort(key=lambda f: (f[0], f[1].rank, -f[3].timestamp(), f[1].node))
            _, best, first, last = found[0]
            if best.source == "kube_pod_info/pod" and key in nodes:
                continue  # a pod named like a node: the name stays the node's
            losers = tuple(sorted({c.node for _, c, _, _ in found[1:] if c.node != best.node}))
            entry = Entry(key, best.node, best.source, first, last, losers)
            entries.append(entry)
            if any(not aged and c.rank == best.rank and c.node != best.node for aged, c, _, _ in found[1:]):
                conflicts.append(entry)
        conflicts.sort(key=lambda e: e.key)  # they are logged: a few, in key order
        by_source = dict.fromkeys(RANKS, 0)
        for entry in entries:
            by_source[entry.source] += 1
        names = {e.key: e.node for e in entries}
        topology = {n: labels for n, (labels, _) in sorted(self._topology.items())}
        held = {n: (why, since) for n, (why, since, _) in sorted(self._maintenance.items())}
        old = self.resolved.discovered
        if names == old.names and topology == old.topology and held == old.maintenance:
            self.resolved = Resolved(old, tuple(entries), tuple(conflicts), by_source)
            return False
        self.resolved = Resolved(Discovered(names, topology, held), tuple(entries), tuple(conflicts), by_source)
        return True

    def sources(self) -> dict[str, int]:
        """How many claims each source holds (for the API)."""
        out = dict.fromkeys(RANKS, 0)
        for claims in self._claims.values():
            for claim in claims:
                out[claim.source] += 1
        return out

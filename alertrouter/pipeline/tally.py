"""A rolling-up storm's sums over its members, kept from pass to pass.

A storm of a thousand nodes changes a few members at a time: a webhook of a hundred alerts touches a dozen
nodes. What its incident says (the labels all members share, the worst severity, the alerts that count,
the units, the first members in key order) is summed here per member and updated for the members that
changed, found by identity: a node incident evaluated again is a new `NodeIncident`. A storm seen for the
first time, or after a full pass (which starts every tally afresh), is summed member by member; the
incremental engine's property test compares the two.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Hashable, Iterator, Mapping, Sequence, Set
from datetime import datetime
from itertools import islice
from typing import Any, TypeVar

from alertrouter.pipeline.aggregate import IncidentSummary, severity_rank
from alertrouter.pipeline.incident import NodeIncident

__all__ = ["StormAlerts", "StormTally"]

_K = TypeVar("_K", bound=Hashable)
TOLD_KEPT = 4  # sets a receiver was told whose untold alerts a tally keeps up to date (one per receiver)


class StormTally:
    def __init__(self) -> None:
        self._nodes: dict[str, NodeIncident] = {}  # member key -> its node incident as last summed
        self._order: list[str] = []  # the member keys, sorted
        # The labels all parts share are among any one part's: the (label, value) pairs of one part, the
        # anchor, each with the number of parts that have it. Counting every part's pairs instead held a
        # tuple per member and unique label (`Hostname`, `instance`) for as long as the storm lasted.
        self._anchor: IncidentSummary | None = None
        self._pairs: dict[tuple[str, str], int] = {}
        self._recount = False  # the anchor left or changed: count afresh once the update is done
        self._severities: Counter[str] = Counter()
        self._firsts: Counter[datetime] = Counter()
        self._parts = 0  # members with an opening part (alerts that count or are held)
        self._units = 0
        self._alerts = 0
        self._firing_members = 0
        self._activated: datetime | None = None
        # Updated in place by the parts that left and came: a copy per pass cost the storm's size.
        self._union: set[str] = set()
        # What receivers were told (by identity: a set told is never changed), each with the alerts
        # that count and are not in it, updated like the union (`StormAlerts.__le__`).
        self._untold: dict[int, tuple[frozenset[str], set[str]]] = {}

    def update(self, members: Set[str], nodes: Mapping[str, NodeIncident], touched: Set[str] | None = None) -> None:
        """Bring the sums to `members` (node keys) as `nodes` describes them now. `touched`: the members
        evaluated again since the last update, when the caller knows them (else every member is looked at)."""
        old = self._nodes
        removed: list[frozenset[str]] = []
        added: list[frozenset[str]] = []
        for key in old.keys() - members:
            self._take(old.pop(key), removed)
            del self._order[bisect_left(self._order, key)]
        changed = set(members - old.keys())  # the members new or evaluated again since the last update
        for key in changed:
            insort(self._order, key)
            node = old[key] = nodes[key]
            self._add(node, added)
        for key in members if touched is None else touched & members:
            node, before = nodes[key], old[key]
            if before is not node:
                self._take(before, removed)
                old[key] = node
                self._add(node, added)
                changed.add(key)
        if self._recount or (self._anchor is None and self._parts):
            self._count_pairs(changed)
        if removed or added:
            union = self._union
            for part in removed:
                union.difference_update(part)
            for part in added:
                union.update(part)
            for told, untold in self._untold.values():
                for part in removed:
                    untold.difference_update(part)
                for part in added:
                    untold.update(part - told)
            if len(union) != self._alerts:  # members' alerts shared (never expected): sum afresh
                self._union = set().union(*(p.firing for p in self.parts()))
                self._untold.clear()

    def _add(self, node: NodeIncident, added: list[frozenset[str]]) -> None:
        if node.group.firing:
            self._firing_members += 1
        if node.first is not None:
            self._firsts[node.first] += 1
            if self._activated is None or node.first < self._activated:
                self._activated = node.first
        part = node.opening
        if part is not None:
            self._parts += 1
            if self._anchor is not None and not self._recount:
                self._count(part, 1)
            self._severities[part.severity] += 1
            self._units += len(part.units)
            self._alerts += len(part.firing)
            added.append(part.firing)

    def _take(self, node: NodeIncident, removed: list[frozenset[str]]) -> None:
        if node.group.firing:
            self._firing_members -= 1
        if node.first is not None:
            _drop(self._firsts, node.first)
            if node.first == self._activated and node.first not in self._firsts:
                self._activated = min(self._firsts, default=None)
        part = node.opening
        if part is not None:
            self._parts -= 1
            if part is self._anchor:
                self._recount = True
            elif not self._recount:
                self._count(part, -1)
            _drop(self._severities, part.severity)
            self._units -= len(part.units)
            self._alerts -= len(part.firing)
            removed.append(part.firing)

    def _count_pairs(self, changed: Set[str]) -> None:
        """Take a part as the anchor and count its pairs over every part: the last member's in key order
        that this update did not change (else the last one's). A count over every part is what a storm
        of a thousand members costs; the members a pass changes are the likeliest to change at the next
        one (a flapping node, a webhook re-sent), and an anchor among them was counted afresh each time."""
        anchor = None
        for key in reversed(self._order):
            part = self._nodes[key].opening
            if part is not None and (anchor is None or key not in changed):
                anchor = part
                if key not in changed:
                    break
        self._anchor = anchor
        self._pairs = dict.fromkeys(self._anchor.common_labels.items(), 0) if self._anchor is not None else {}
        for part in self.parts():
            self._count(part, 1)
        self._recount = False

    def _count(self, part: IncidentSummary, step: int) -> None:
        """Count `part` in (1) or out (-1) of the anchor's pairs it has."""
        pairs = self._pairs
        for pair in part.common_labels.items():
            if (count := pairs.get(pair)) is not None:
                pairs[pair] = count + step

    # -- what the storm's incident says ---------------------------------------------------------------
    @property
    def members(self) -> int:
        return len(self._order)

    @property
    def nodes(self) -> int:
        """Members with a part: the nodes a storm's headline counts."""
        return self._parts

    @property
    def units(self) -> int:
        return self._units

    @property
    def firing(self) -> StormAlerts:
        """The alerts that count, over every member: a view, valid until the next update (what a
        receiver was told keeps a copy: `throttle.next_state`)."""
        return StormAlerts(self)

    def all_told(self, told: Set[Any]) -> bool:
        """Whether every alert that counts is in `told`: worked out whole the first time a set is asked
        about, then from the alerts not in it, kept up to date by each update."""
        if not isinstance(told, frozenset):
            return self._union <= told
        entry = self._untold.get(id(told))  # the entry holds the set: its id is no other's meanwhile
        if entry is None:
            if len(self._untold) >= TOLD_KEPT:
                del self._untold[next(iter(self._untold))]
            entry = self._untold[id(told)] = (told, self._union - told)
        return not entry[1]

    @property
    def any_firing(self) -> bool:
        return self._firing_members > 0

    @property
    def activated(self) -> datetime | None:
        """When the earliest member's earliest opening alert first fired."""
        return self._activated

    def member_nodes(self) -> list[NodeIncident]:
        """Every member, in key order (for what needs each of them: a time interval's mutes)."""
        return [self._nodes[k] for k in self._order]

    def parts(self) -> list[IncidentSummary]:
        return [p for k in self._order if (p := self._nodes[k].opening) is not None]

    def first_parts(self, count: int) -> list[IncidentSummary]:
        """The first `count` members' parts in key order."""
        parts = (self._nodes[k].opening for k in self._order)
        return list(islice((p for p in parts if p is not None), count))

    def first_opening(self) -> NodeIncident | None:
        """The first member in key order with a part."""
        return next((n for k in self._order if (n := self._nodes[k]).opening is not None), None)

    def shared(self) -> Mapping[str, str]:
        """The labels every member's part has with the same value, in the first part's order (its own
        labels when it is the only one)."""
        first = self.first_opening()
        if first is None or first.opening is None:
            return {}
        common = first.opening.common_labels
        if self._parts == 1:
            return common
        pairs, parts = self._pairs, self._parts
        return {n: v for n, v in common.items() if pairs.get((n, v)) == parts}

    def severity(self, order: Sequence[str]) -> str:
        """The worst of the parts' severities ("" without parts); between severities of one rank
        (unknown ones), the first part's in key order."""
        ranked = sorted(self._severities, key=lambda s: severity_rank(s, order))
        if len(ranked) < 2 or severity_rank(ranked[0], order) != severity_rank(ranked[1], order):
            return ranked[0] if ranked else ""
        return min((p.severity for p in self.parts()), key=lambda s: severity_rank(s, order))


def _drop(counts: Counter[_K], key: _K) -> None:
    left = counts[key] - 1
    if left > 0:
        counts[key] = left
    else:
        del counts[key]


class StormAlerts(Set[str]):
    """The alerts that count for a storm, as its tally holds them now (valid until its next update). Each
    pass asks whether they are all among what a receiver was told (`<=`, `throttle.needs_update`): that is
    answered from the tally's alerts not in the told set, not by looking up the storm's 11,000 alerts."""

    __slots__ = ("_tally",)

    def __init__(self, tally: StormTally) -> None:
        self._tally = tally

    def __contains__(self, fingerprint: object) -> bool:
        return fingerprint in self._tally._union

    def __iter__(self) -> Iterator[str]:
        return iter(self._tally._union)

    def __len__(self) -> int:
        return len(self._tally._union)

    def __le__(self, other: Set[Any]) -> bool:
        return self._tally.all_told(other)

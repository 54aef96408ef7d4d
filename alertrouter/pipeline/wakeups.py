"""When each incident asked to be evaluated again (a hold-down ending, a group wait, a repeat), and
which of those times have come: what lets an incremental pass leave every other incident alone."""

from __future__ import annotations

import heapq
from datetime import datetime

__all__ = ["Wakeups"]


class Wakeups:
    """One wake-up time per incident key, the earliest found in O(log n).

    A heap of (time, key) with the times in force by key beside it: asking for another time leaves the
    old entry in the heap, where it is recognised as outdated (the key's time differs) and dropped
    when it comes to the top, rather than searched for."""

    __slots__ = ("_at", "_heap")

    def __init__(self) -> None:
        self._at: dict[str, datetime] = {}
        self._heap: list[tuple[datetime, str]] = []

    def wake_at(self, key: str, at: datetime | None) -> None:
        """`key` asks to be evaluated at `at`, instead of any earlier request; None: at no time."""
        if at is None:
            self._at.pop(key, None)
        elif self._at.get(key) != at:
            self._at[key] = at
            heapq.heappush(self._heap, (at, key))

    def due(self, now: datetime, most: int | None = None) -> tuple[set[str], bool]:
        """The keys whose time has come (no longer asked for), and False; or, when more than `most`
        have come, none of them and True: they stay due, all for one later pass (half of a storm's
        hold-downs ended and half not is a state no pass at any time would see)."""
        heap = self._heap
        found: dict[str, datetime] = {}  # a key may be in the heap twice (set, cleared, set again)
        while heap and heap[0][0] <= now:
            at, key = heapq.heappop(heap)
            if self._at.get(key) == at:  # else asked for before the incident was evaluated again
                found[key] = at
        if most is not None and len(found) > most:
            for key, at in found.items():
                heapq.heappush(heap, (at, key))
            return set(), True
        for key in found:
            del self._at[key]
        return set(found), False

    def earliest(self) -> datetime | None:
        """The earliest time any key asked for, or None."""
        heap = self._heap
        while heap and self._at.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)  # outdated: asked for before the incident was evaluated again
        return heap[0][0] if heap else None

"""When each candidate of a storm that is not rolling up opened, kept in time order from pass to pass.

Whether such a storm starts is a count: more than `threshold` of its candidates opened within `window`
of now (`aggregate.rolls_up`). Two thousand nodes with a week-old warning of one alertname are
candidates of one storm that never starts, and each webhook touching one of them asked the question
again: a walk over every candidate per pass, the one part of a pass that grew with the cluster. Kept
sorted, the count is a binary search, and a pass updates only the candidates it evaluated again.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from datetime import datetime

__all__ = ["Openings"]


class Openings:
    def __init__(self) -> None:
        self._at: dict[str, datetime | None] = {}  # candidate -> when it opened (None: it opens now)
        self._times: list[datetime] = []  # the known times, sorted (one entry per candidate)
        self._now = 0  # candidates that open now, whenever now is: always within the window

    def __len__(self) -> int:
        return len(self._at)

    def set(self, key: str, at: datetime | None) -> None:
        """Candidate `key` opened `at` (None: it has no time of its own, so it opens at each pass's now)."""
        self.discard(key)
        self._at[key] = at
        if at is None:
            self._now += 1
        else:
            insort(self._times, at)

    def discard(self, key: str) -> None:
        """`key` is no candidate any more."""
        if key not in self._at:
            return
        at = self._at.pop(key)
        if at is None:
            self._now -= 1
        else:
            del self._times[bisect_left(self._times, at)]

    def since(self, start: datetime) -> int:
        """How many candidates opened at `start` or later."""
        return self._now + len(self._times) - bisect_left(self._times, start)

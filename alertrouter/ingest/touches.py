"""The write-behind buffer of refreshes that change nothing but `last_seen` and `endsAt`: ingest fills
it, maintenance flushes it."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

__all__ = ["TouchBuffer"]


class TouchBuffer:
    """Refreshes that change nothing but `last_seen` (and a firing alert's `endsAt`).

    Most webhooks are re-sends of unchanged groups; writing each one would make the common
    case the expensive one. Losing this buffer in a crash loses only `last_seen` precision:
    `endsAt` refreshes are re-sent by the sender long before they matter (Prometheus every
    minute for an `endsAt` four minutes ahead).
    """

    def __init__(self) -> None:
        self._seen: dict[str, datetime] = {}
        self._extended: dict[str, tuple[datetime, datetime]] = {}

    def __len__(self) -> int:
        return len(self._seen) + len(self._extended)

    def seen_many(self, fingerprints: Iterable[str], at: datetime) -> None:
        for fp in fingerprints:
            self._seen[fp] = at

    def add(self, seen: Iterable[tuple[str, datetime]], extended: Iterable[tuple[str, datetime, datetime]]) -> None:
        for fp, at in seen:
            self._seen[fp] = at
        for fp, starts_at, ends_at in extended:
            self._extended[fp] = (starts_at, ends_at)

    def take(self) -> tuple[list[tuple[str, datetime]], list[tuple[str, datetime, datetime]]]:
        seen = sorted(self._seen.items())
        extended = sorted((fp, s, e) for fp, (s, e) in self._extended.items())
        self._seen, self._extended = {}, {}
        return seen, extended

    def put_back(self, seen: list[tuple[str, datetime]], extended: list[tuple[str, datetime, datetime]]) -> None:
        """After a failed flush: keep what was taken unless something newer arrived meanwhile."""
        for fp, at in seen:
            self._seen.setdefault(fp, at)
        for fp, s, e in extended:
            self._extended.setdefault(fp, (s, e))

"""The node names the engine learns from live alerts' claims (an alert that carries both an address and
a node name says "this address is that node"), kept between passes by the lease holder.

A pass looks only at the addresses whose claims changed since the last one (an alert came, changed or
left), except when an alias in force is due to be re-confirmed: then at every claim. The map of aliases
in force is rebuilt only when an alias was written or one expires.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from alertrouter.pipeline import aliases

__all__ = ["Claims", "Learning"]


@dataclass(frozen=True, slots=True)
class Learning:
    """What one pass learns: the rows to write, the book after them, and the map in force after them
    (None: the map has not changed)."""

    learnt: list[aliases.LearnedAlias]
    merged: Mapping[str, aliases.LearnedAlias]
    learned: dict[str, str] | None
    every_claim: bool


class Claims:
    def __init__(self, ttl: timedelta) -> None:
        self._ttl = ttl
        self._refresh = aliases.refresh_every(ttl)
        # The learned aliases as stored (None: read them at the next pass).
        self.book: dict[str, aliases.LearnedAlias] | None = None
        self._sightings: dict[str, aliases.Sighting] = {}  # fingerprint -> its alert's claim
        self._by_address: dict[str, dict[str, aliases.Sighting]] = {}  # the same claims by address
        self._changed: set[str] = set()  # addresses whose claims changed since the last pass
        self._refresh_at: datetime | None = None  # when the next alias is due to be re-confirmed
        self._learned: dict[str, str] | None = None  # the map in force
        self.expiry: datetime | None = None  # when the next alias in force expires

    def claim(self, fp: str, seen: aliases.Sighting | None) -> None:
        """An alert's claim, new or changed, or gone with the alert (None)."""
        old = self._sightings.pop(fp, None)
        if old is not None:
            claims = self._by_address[old.claim.address]
            del claims[fp]
            if not claims:
                del self._by_address[old.claim.address]
            self._changed.add(old.claim.address)
        if seen is not None:
            self._sightings[fp] = seen
            self._by_address.setdefault(seen.claim.address, {})[fp] = seen
            self._changed.add(seen.claim.address)

    def learn(self, now: datetime) -> Learning:
        """Learn from the claims that may say something new (`book` must be read first)."""
        book = self.book
        assert book is not None
        every_claim = self._refresh_at is None or now >= self._refresh_at
        claims: Iterable[aliases.Sighting]
        if every_claim:
            claims = self._sightings.values()
        else:  # only the addresses whose claims changed can have a new best claim
            claims = [s for address in self._changed for s in self._by_address.get(address, {}).values()]
        learnt = aliases.learn(book, claims, now=now, refresh=self._refresh)
        if learnt or self._learned is None or (self.expiry is not None and now >= self.expiry):
            merged = {**book, **{a.address: a for a in learnt}}
            return Learning(learnt, merged, aliases.active(merged, now=now, ttl=self._ttl), every_claim)
        return Learning(learnt, book, None, every_claim)

    def written(self, learning: Learning, now: datetime) -> None:
        """The pass that learnt `learning` committed: take it as the book."""
        if learning.merged is not self.book:
            self.book = dict(learning.merged)
        self._changed.clear()
        if learning.learned is not None:
            self._learned = learning.learned
            self.expiry = aliases.next_expiry(learning.merged, now=now, ttl=self._ttl)
        refresh = self._refresh
        if learning.every_claim:
            due = (a.last_seen + refresh for address, a in learning.merged.items() if address in self._by_address)
            self._refresh_at = min(due, default=now + refresh)
        elif learning.learnt:
            self._refresh_at = min(
                [self._refresh_at or now + refresh, *(a.last_seen + refresh for a in learning.learnt)]
            )

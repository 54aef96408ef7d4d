"""The node names the engine learns from live alerts' claims (an alert that carries both an address and
a node name says "this address is that node"), kept between passes by the lease holder.

A pass looks only at the addresses whose claims changed since the last one (an alert came, changed or
left), and at those holding a move back (`aliases.Held`: the lookup may have come to agree, or the
alert that claimed it may have left), except when an alias in force is due to be re-confirmed: then at
every claim. The map of aliases in force is rebuilt only when an alias was written or one expires.

Whether a move is held is derived each pass from the live claims and the lookup, so a restart or
another replica taking the lease (which rebuilds the claims from the live alerts) decides the same. The
held move is stored with its alias all the same: every replica's API and console show it from the store,
and a new leader that finds it there neither logs nor counts it again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from alertrouter.metrics import Metrics
from alertrouter.pipeline import aliases
from alertrouter.pipeline.nodes import Discovered

__all__ = ["Claims", "Learning"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Learning:
    """What one pass learns: the rows to write, the book after them, and the map in force after them
    (None: the map has not changed)."""

    learnt: list[aliases.LearnedAlias]
    merged: Mapping[str, aliases.LearnedAlias]
    learned: dict[str, str] | None
    every_claim: bool


class Claims:
    def __init__(self, ttl: timedelta, metrics: Metrics | None = None) -> None:
        self._ttl = ttl
        self._refresh = aliases.refresh_every(ttl)
        self._metrics = metrics
        # The learned aliases as stored (None: read them at the next pass).
        self.book: dict[str, aliases.LearnedAlias] | None = None
        self._sightings: dict[str, aliases.Sighting] = {}  # fingerprint -> its alert's claim
        self._by_address: dict[str, dict[str, aliases.Sighting]] = {}  # the same claims by address
        self._changed: set[str] = set()  # addresses whose claims changed since the last pass
        self._held: set[str] | None = None  # addresses whose alias holds a move (None: not worked out)
        self._refresh_at: datetime | None = None  # when the next alias is due to be re-confirmed
        self._learned: dict[str, str] | None = None  # the map in force
        self.expiry: datetime | None = None  # when the next alias in force expires
        if metrics is not None:  # a new leader (or none) until the book is read
            metrics.node_alias_held.set(0)

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

    def learn(self, now: datetime, discovered: Discovered | None = None) -> Learning:
        """Learn from the claims that may say something new (`book` must be read first); `discovered`:
        what the Prometheus lookup names, which lets a held move go ahead."""
        book = self.book
        assert book is not None
        if self._held is None:
            self._held = {address for address, a in book.items() if a.held is not None}
        every_claim = self._refresh_at is None or now >= self._refresh_at
        claims: Iterable[aliases.Sighting]
        if every_claim:
            claims = self._sightings.values()
        else:  # only these addresses can have a new best claim, or a held move to settle
            look = self._changed | self._held
            claims = [s for address in look for s in self._by_address.get(address, {}).values()]
        learnt = aliases.learn(
            book,
            claims,
            now=now,
            refresh=self._refresh,
            ttl=self._ttl,
            confirmed=discovered.names if discovered is not None else None,
            addresses=self._held,
        )
        if learnt or self._learned is None or (self.expiry is not None and now >= self.expiry):
            merged = {**book, **{a.address: a for a in learnt}}
            return Learning(learnt, merged, aliases.active(merged, now=now, ttl=self._ttl), every_claim)
        return Learning(learnt, book, None, every_claim)

    def written(self, learning: Learning, now: datetime) -> None:
        """The pass that learnt `learning` committed: take it as the book, and say what changed."""
        before = self.book or {}
        held = self._held if self._held is not None else set()
        for alias in learning.learnt:
            self._report(before.get(alias.address), alias, now)
            if alias.held is None:
                held.discard(alias.address)
            else:
                held.add(alias.address)
        self._held = held
        if self._metrics is not None:
            self._metrics.node_alias_held.set(len(held))
        if learning.merged is not self.book:
            self.book = dict(learning.merged)
        self._changed.clear()
        if learning.learned is not None:
            self._learned = learning.learned
            self.expiry = aliases.next_expiry(learning.merged, now=now, ttl=self._ttl)
        refresh = self._refresh
        # A held alias is looked at in every pass (and may have no live claim of its own): not a reason
        # to look at every claim.
        if learning.every_claim:
            due = (
                a.last_seen + refresh
                for address, a in learning.merged.items()
                if address in self._by_address and address not in held
            )
            self._refresh_at = min(due, default=now + refresh)
        elif learning.learnt:
            self._refresh_at = min(
                [
                    self._refresh_at or now + refresh,
                    *(a.last_seen + refresh for a in learning.learnt if a.address not in held),
                ]
            )

    def _report(self, old: aliases.LearnedAlias | None, alias: aliases.LearnedAlias, now: datetime) -> None:
        """Log a move, a newly held move (once: `since` is kept while the same name is held, also in the
        store), and a held move let go."""
        if alias.changed_at == now:
            log.warning(
                "address %s now names node %s (was %s): claimed by %s %s",
                alias.address,
                alias.node,
                alias.previous_node,
                alias.alertname,
                alias.fingerprint,
            )
        elif alias.held is not None and alias.held.since == now:
            log.warning(
                "address %s stays node %s: only %s %s claims it is %s; held until another alert or the "
                "Prometheus lookup says so too",
                alias.address,
                alias.node,
                alias.held.alertname,
                alias.held.fingerprint,
                alias.held.node,
            )
            if self._metrics is not None:
                self._metrics.node_alias_conflicts.inc()
        elif alias.held is None and old is not None and old.held is not None:
            log.info(
                "address %s stays node %s: the move to %s is no longer held", alias.address, alias.node, old.held.node
            )

"""Learned aliases: which node an IP address is, as alerts that carry both have said.

Pure bookkeeping over a book of `LearnedAlias` rows (the store keeps them, `engine.runner` reads and
writes them): `learn` turns the claims of the live alerts into the rows to write, `active` the rows
into the address -> node map that `NodeIdentity.learned` consults after `topology.aliases`.

- A claim is re-confirmed while an alert that makes it is live; `last_seen` is written again only
  when it is `refresh` old, so a pass over thousands of firing alerts writes nothing new.
- An alias not confirmed for `ttl` is ignored (and pruned by housekeeping).
- A conflict (one address claimed by two names) goes to the claim of the alert that fired last; the
  row keeps the name it had and when it changed (`previous_node`, `changed_at`), so the API and the
  console show the flip instead of it happening silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from alertrouter.pipeline.nodes import NodeClaim, NodeIdentity
from alertrouter.pipeline.types import LiveAlert

__all__ = ["LearnedAlias", "Sighting", "active", "learn", "next_expiry", "refresh_every", "sighting"]


@dataclass(frozen=True, slots=True)
class LearnedAlias:
    address: str
    node: str
    first_seen: datetime
    last_seen: datetime
    alertname: str  # the alert it was last learned from
    fingerprint: str
    previous_node: str | None = None  # the name it had before the last conflict
    changed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Sighting:
    """A claim made by a live alert; `at` (when the alert fired) ranks conflicting claims."""

    claim: NodeClaim
    fingerprint: str
    alertname: str
    at: datetime


def sighting(nodes: NodeIdentity, alert: LiveAlert) -> Sighting | None:
    """The claim an alert makes, if any (its labels never change: worked out once per fingerprint)."""
    claim = nodes.claim(alert.labels) if nodes.learned_ttl > timedelta(0) else None
    if claim is None:
        return None
    return Sighting(claim, alert.fingerprint, alert.labels.get("alertname", ""), alert.fired_at or alert.starts_at)


def refresh_every(ttl: timedelta) -> timedelta:
    """How old `last_seen` may get before a live claim writes it again: a tenth of the TTL, at most 1h."""
    return min(ttl / 10, timedelta(hours=1))


def learn(
    book: Mapping[str, LearnedAlias], sightings: Iterable[Sighting], *, now: datetime, refresh: timedelta
) -> list[LearnedAlias]:
    """The rows to write (new, renamed or re-confirmed), by address."""
    best: dict[str, Sighting] = {}
    for s in sightings:
        current = best.get(s.claim.address)
        # the claim of the alert that fired last; ties by name, so the outcome never depends on order
        if current is None or (s.at, s.claim.node) > (current.at, current.claim.node):
            best[s.claim.address] = s
    out: list[LearnedAlias] = []
    for address, s in sorted(best.items()):
        old = book.get(address)
        node = s.claim.node
        if old is None:
            out.append(LearnedAlias(address, node, now, now, s.alertname, s.fingerprint))
        elif old.node != node:
            out.append(
                replace(
                    old,
                    node=node,
                    last_seen=now,
                    alertname=s.alertname,
                    fingerprint=s.fingerprint,
                    previous_node=old.node,
                    changed_at=now,
                )
            )
        elif now - old.last_seen >= refresh:
            out.append(replace(old, last_seen=now, alertname=s.alertname, fingerprint=s.fingerprint))
    return out


def active(book: Mapping[str, LearnedAlias], *, now: datetime, ttl: timedelta) -> dict[str, str]:
    """Address -> node for the aliases confirmed within `ttl`."""
    return {a.address: a.node for a in book.values() if now - a.last_seen < ttl}


def next_expiry(book: Mapping[str, LearnedAlias], *, now: datetime, ttl: timedelta) -> datetime | None:
    """When the next alias in force stops being so (a pass then re-keys its alerts), or None."""
    return min((a.last_seen + ttl for a in book.values() if now - a.last_seen < ttl), default=None)

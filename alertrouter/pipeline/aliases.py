"""Learned aliases: which node an IP address is, as alerts that carry both have said.

Pure bookkeeping over a book of `LearnedAlias` rows (the store keeps them, `engine.runner` reads and
writes them): `learn` turns the claims of the live alerts into the rows to write, `active` the rows
into the address -> node map that `NodeIdentity.learned` consults after `topology.aliases`.

- A claim is re-confirmed while an alert that makes it is live; `last_seen` is written again only
  when it is `refresh` old, so a pass over thousands of firing alerts writes nothing new.
- An alias not confirmed for `ttl` is ignored (and pruned by housekeeping).
- An address nobody holds (new, or its alias expired) is learned from one alert.
- A conflict (one address claimed by two names) goes to the claim of the alert that fired last, but a
  move away from an alias in force needs a second alert (another fingerprint) making the same claim,
  or the Prometheus lookup naming that node for the address: one alert carrying `instance` and `node`
  must not re-attribute a node's NodeDown (and so mute another node's GPU alerts). Until then the move
  is held (`Held`, shown by the API and the console). A move keeps the name the row had and when it
  changed (`previous_node`, `changed_at`), so the flip is shown instead of happening silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from alertrouter.pipeline.nodes import NodeClaim, NodeIdentity
from alertrouter.pipeline.types import LiveAlert

__all__ = [
    "AGREEING",
    "Held",
    "LearnedAlias",
    "Sighting",
    "active",
    "learn",
    "next_expiry",
    "refresh_every",
    "sighting",
]

AGREEING = 2  # distinct alerts that must claim a new name before an alias in force moves to it


@dataclass(frozen=True, slots=True)
class Held:
    """A move not made: the latest claim names `node`, but only one alert (`fingerprint`) makes it and
    the lookup does not say so. `since`: when it was first held (kept while the same name is held, so
    a restart or another leader re-deriving it logs and counts nothing again)."""

    node: str
    alertname: str
    fingerprint: str
    since: datetime


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
    held: Held | None = None  # a move to another name waiting for a second alert or the lookup


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
    book: Mapping[str, LearnedAlias],
    sightings: Iterable[Sighting],
    *,
    now: datetime,
    refresh: timedelta,
    ttl: timedelta,
    confirmed: Mapping[str, str] | None = None,
    addresses: Iterable[str] = (),
) -> list[LearnedAlias]:
    """The rows to write (new, moved, held, released or re-confirmed), by address.

    `sightings` must hold every live claim on each address it mentions (agreement is counted among
    them). `confirmed`: address -> node as the Prometheus lookup names it. `addresses`: more addresses
    whose claims are all in `sightings` although none may be (a held move whose alert left is let go)."""
    claims: dict[str, list[Sighting]] = {address: [] for address in addresses}
    for s in sightings:
        claims.setdefault(s.claim.address, []).append(s)
    confirmed = confirmed or {}
    out: list[LearnedAlias] = []
    for address, made in sorted(claims.items()):
        old = book.get(address)
        if not made:
            if old is not None and old.held is not None:
                out.append(replace(old, held=None))
            continue
        row = _learn_one(address, old, made, now=now, refresh=refresh, ttl=ttl, confirmed=confirmed.get(address))
        if row is not None:
            out.append(row)
    return out


def _learn_one(
    address: str,
    old: LearnedAlias | None,
    made: list[Sighting],
    *,
    now: datetime,
    refresh: timedelta,
    ttl: timedelta,
    confirmed: str | None,
) -> LearnedAlias | None:
    # the claim of the alert that fired last; ties by name and alert, so the outcome never depends on order
    best = max(made, key=lambda s: (s.at, s.claim.node, s.fingerprint))
    node = best.claim.node
    if old is None:
        return LearnedAlias(address, node, now, now, best.alertname, best.fingerprint)
    if old.node == node:
        if now - old.last_seen >= refresh:
            return replace(old, last_seen=now, alertname=best.alertname, fingerprint=best.fingerprint, held=None)
        return replace(old, held=None) if old.held is not None else None
    in_force = now - old.last_seen < ttl
    agreeing = len({s.fingerprint for s in made if s.claim.node == node})
    if not in_force or agreeing >= AGREEING or confirmed == node:
        return replace(
            old,
            node=node,
            last_seen=now,
            alertname=best.alertname,
            fingerprint=best.fingerprint,
            previous_node=old.node,
            changed_at=now,
            held=None,
        )
    since = old.held.since if old.held is not None and old.held.node == node else now
    row = replace(old, held=Held(node, best.alertname, best.fingerprint, since))
    # the name in force stays confirmed by its own alerts meanwhile
    mine = [s for s in made if s.claim.node == old.node]
    if mine and now - old.last_seen >= refresh:
        own = max(mine, key=lambda s: (s.at, s.fingerprint))
        row = replace(row, last_seen=now, alertname=own.alertname, fingerprint=own.fingerprint)
    return row if row != old else None


def active(book: Mapping[str, LearnedAlias], *, now: datetime, ttl: timedelta) -> dict[str, str]:
    """Address -> node for the aliases confirmed within `ttl`."""
    return {a.address: a.node for a in book.values() if now - a.last_seen < ttl}


def next_expiry(book: Mapping[str, LearnedAlias], *, now: datetime, ttl: timedelta) -> datetime | None:
    """When the next alias in force stops being so (a pass then re-keys its alerts), or None."""
    return min((a.last_seen + ttl for a in book.values() if now - a.last_seen < ttl), default=None)

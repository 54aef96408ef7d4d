"""An alert as received and as stored, and the state machine deciding what the one changes in the other."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar, dataclass_transform

from alertrouter.model import AlertStatus

__all__ = ["AlertState", "IncomingAlert", "ResolvedBy", "Transition", "decide_transition"]


class ResolvedBy(enum.StrEnum):
    """Who ended an episode: the sender said so, or its `endsAt` passed without a refresh."""

    SOURCE = "source"
    TIMEOUT = "timeout"


_T = TypeVar("_T")


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def _record(cls: type[_T]) -> type[_T]:
    """A dataclass with slots that the type checker holds immutable, as if frozen, but that is built
    at the cost of a plain one: for the types made once or twice per alert received.

    A frozen dataclass's `__init__` sets each field through `object.__setattr__`, several times the
    cost of a plain one's, for types built per alert received.
    Nothing assigns to their fields (`mypy --strict` refuses it, as for a frozen one); like the
    frozen ones they are not hashable in practice, since their mappings are not."""
    return dataclass(slots=True)(cls)


@_record
class IncomingAlert:
    """One alert as received, normalised from either ingest shape.

    `ends_at` is None for a firing alert with no expiry (Alertmanager webhooks send
    `0001-01-01T00:00:00Z` for firing alerts); API v2 alerts carry a future `ends_at`
    after which they resolve unless refreshed.
    """

    fingerprint: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    status: AlertStatus
    starts_at: datetime
    ends_at: datetime | None
    generator_url: str = ""

    @property
    def alertname(self) -> str:
        return self.labels.get("alertname", "")


@_record
class AlertState:
    """What the store holds about one fingerprint: its latest episode."""

    fingerprint: str
    status: AlertStatus
    starts_at: datetime
    ends_at: datetime | None
    annotations: Mapping[str, str] = field(default_factory=dict)
    resolved_by: ResolvedBy | None = None
    episodes: int = 1
    fired_at: datetime | None = None  # when we received this episode's first firing


class Transition(enum.StrEnum):
    """What an incoming alert does to the stored state; only some kinds write."""

    NEW_FIRING = "new_firing"  # first time seen, firing: new alert, new episode
    NEW_RESOLVED = "new_resolved"  # first time seen, already resolved: recorded, closed episode
    RESOLVED = "resolved"  # the firing episode ended
    REFIRED = "refired"  # a resolved alert fires again: a new episode
    REVIVED = "revived"  # an episode that had only timed out is refreshed by its sender
    CLOSED_EPISODE = "closed_episode"  # a whole newer episode we never saw firing, already resolved
    ANNOTATIONS_CHANGED = "annotations_changed"
    EXTENDED = "extended"  # only `ends_at` moved: batched with last_seen, no transaction
    UNCHANGED = "unchanged"
    STALE = "stale"  # older than what we hold (out of order, or a late HA duplicate): ignored

    @property
    def writes(self) -> bool:
        """Whether the transition must be committed before the webhook is answered."""
        return self not in _NO_WRITE

    @property
    def opens_episode(self) -> bool:
        return self in (Transition.NEW_FIRING, Transition.REFIRED)


_NO_WRITE = frozenset({Transition.EXTENDED, Transition.UNCHANGED, Transition.STALE})


def decide_transition(current: AlertState | None, incoming: IncomingAlert) -> Transition:
    """Decide what `incoming` changes, given what the store holds for its fingerprint.

    Episodes are identified by `starts_at`. The rules, in the order that matters:
    - an explicit resolve from the sender is authoritative for its episode: a firing copy of
      the same episode arriving later (an HA twin, a retry) is stale, not a re-fire;
    - an episode that ended only because `ends_at` passed (the sender went quiet) is revived by
      a refresh of the same episode, as Alertmanager merges overlapping alerts;
    - a resolve for an older episode than the current one is stale.
    """
    if current is None:
        return Transition.NEW_FIRING if incoming.status is AlertStatus.FIRING else Transition.NEW_RESOLVED

    if incoming.status is AlertStatus.FIRING:
        if current.status is AlertStatus.FIRING:
            if incoming.annotations != current.annotations:  # mappings compare by items, whatever their type
                return Transition.ANNOTATIONS_CHANGED
            if incoming.ends_at != current.ends_at:
                return Transition.EXTENDED
            return Transition.UNCHANGED
        if incoming.starts_at > current.starts_at:
            return Transition.REFIRED
        if current.resolved_by is ResolvedBy.TIMEOUT and (
            current.ends_at is None or incoming.starts_at <= current.ends_at
        ):
            return Transition.REVIVED
        return Transition.STALE

    # incoming resolved
    if incoming.starts_at < current.starts_at:
        return Transition.STALE
    if current.status is AlertStatus.FIRING:
        return Transition.RESOLVED
    if incoming.starts_at > current.starts_at:
        return Transition.CLOSED_EPISODE
    return Transition.UNCHANGED

"""The delivery loop's decisions, as pure functions: message kind, backoff, what to send with a budget."""

from __future__ import annotations

import random
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import timedelta

from alertrouter.channels.base import MessageKind
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.model import IncidentKind
from alertrouter.pipeline.throttle import NotifyReason

__all__ = ["Batch", "backoff", "message_kind", "plan_batches"]


def message_kind(snapshot: MessageSnapshot) -> MessageKind:
    """Which template an outbox snapshot is rendered with."""
    if snapshot.resolved:
        return MessageKind.RESOLVED
    if snapshot.kind is IncidentKind.CLUSTER:
        return MessageKind.CLUSTER
    return MessageKind.FIRING if snapshot.reason == NotifyReason.FIRST else MessageKind.UPDATE


def backoff(attempts: int, *, initial: timedelta, maximum: timedelta, rng: random.Random | None = None) -> timedelta:
    """Exponential backoff with full jitter in its upper half: attempt 1 waits ~initial, doubling up to
    `maximum`, so many robots failing together do not retry in lockstep."""
    base = min(maximum.total_seconds(), initial.total_seconds() * 2 ** max(attempts - 1, 0))
    jitter = (rng or random).uniform(0.5, 1.0)
    return timedelta(seconds=base * jitter)


@dataclass(frozen=True, slots=True)
class Batch:
    """Deliveries to send as one message: a single one, or several coalesced (worst severity first)."""

    ids: tuple[int, ...]

    @property
    def coalesced(self) -> bool:
        return len(self.ids) > 1


def plan_batches(
    pending: Sequence[int], *, budget: int | None, coalesce_backlog: bool, alone: AbstractSet[int] = frozenset()
) -> list[Batch]:
    """What to send now from a channel's due deliveries (ids ordered worst severity first, then oldest).

    `budget`: messages the robot may still take in its rate window (None: unlimited). When the backlog
    fits, each is sent as it is. When it does not, or right after the vendor blocked the robot, the whole
    backlog becomes one coalesced message rather than waiting an hour in a queue (the vendor's advice).
    `alone`: deliveries that failed for a reason of their own (see `delivery.policy`); each is sent as a
    message of its own, after the coalesced one and within the budget, so one that cannot be sent never
    takes others down with it.
    """
    if not pending or (budget is not None and budget <= 0):
        return []
    if not coalesce_backlog and (budget is None or len(pending) <= budget):
        return [Batch((i,)) for i in pending]
    together = tuple(i for i in pending if i not in alone)
    batches = [Batch(together)] if together else []
    batches += [Batch((i,)) for i in pending if i in alone]
    return batches if budget is None else batches[:budget]

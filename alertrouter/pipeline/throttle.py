"""When an incident's receiver is told something: a pure function that returns the reason, or when to look again.

Alertmanager's rules (`needsUpdate`), per incident and receiver: tell at once (after the group wait) on
the first firing, when the set of firing alerts grows (at most once per group interval), when the
incident resolves (if `send_resolved`), and otherwise only when the repeat interval has passed. Two
departures, both to bound noise: a *partial* resolve (8 hot GPUs become 6) is not a message of its own,
it shows in the next one; and no two messages to one receiver are closer than the group interval, so a
flapping alert costs at most one message per group interval instead of two per flap.
"""

from __future__ import annotations

import enum
from collections.abc import Set
from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = [
    "NotifyReason",
    "NotifyState",
    "ThrottleDecision",
    "ThrottlePolicy",
    "needs_update",
    "next_state",
    "told_since",
]


class NotifyReason(enum.StrEnum):
    FIRST = "first"  # first firing notification (or first after a resolved one)
    GREW = "grew"  # more alerts firing than were last reported
    RESOLVED = "resolved"  # everything reported as firing has resolved
    REPEAT = "repeat"  # nothing changed, the repeat interval passed
    ESCALATED = "escalated"  # a step of the route's escalation policy: not acknowledged in time


@dataclass(frozen=True, slots=True)
class NotifyState:
    """What the receiver was last told about the incident. `since`: when the episode it was told of began
    (the earliest `startsAt` it was shown since its last resolved message), so a flapping incident that
    resolved and fired again unseen, between two messages, is still told as one episode from its start."""

    last_sent_at: datetime
    firing: frozenset[str]  # fingerprints reported as firing in the last message; empty after a resolve
    repeats: int = 0  # repeats sent since the last change
    since: datetime | None = None


@dataclass(frozen=True, slots=True)
class ThrottlePolicy:
    group_wait: timedelta
    group_interval: timedelta
    repeat_interval: timedelta
    send_resolved: bool = True
    max_repeats: int | None = None


@dataclass(frozen=True, slots=True)
class ThrottleDecision:
    reason: NotifyReason | None
    next_at: datetime | None = None  # when the answer may change by time alone (None: only a new event changes it)


def needs_update(
    state: NotifyState | None,
    firing: Set[str],
    *,
    active_since: datetime | None,
    now: datetime,
    policy: ThrottlePolicy,
    acknowledged: bool = False,
) -> ThrottleDecision:
    """`firing`: the incident's alerts that are firing and neither muted nor held, right now.
    `active_since`: when that set last became non-empty (the group wait counts from there)."""
    if not firing:
        if state is None or not state.firing or not policy.send_resolved:
            return ThrottleDecision(None)
        return _spaced(state, now, policy, NotifyReason.RESOLVED)

    if state is None or not state.firing:
        start = active_since or now
        due = start + policy.group_wait
        if state is not None:
            due = max(due, state.last_sent_at + policy.group_interval)
        return ThrottleDecision(NotifyReason.FIRST) if now >= due else ThrottleDecision(None, due)

    if not firing <= state.firing:
        return _spaced(state, now, policy, NotifyReason.GREW)

    if acknowledged or (policy.max_repeats is not None and state.repeats >= policy.max_repeats):
        return ThrottleDecision(None)
    due = state.last_sent_at + max(policy.repeat_interval, policy.group_interval)
    return ThrottleDecision(NotifyReason.REPEAT) if now >= due else ThrottleDecision(None, due)


def _spaced(state: NotifyState, now: datetime, policy: ThrottlePolicy, reason: NotifyReason) -> ThrottleDecision:
    due = state.last_sent_at + policy.group_interval
    return ThrottleDecision(reason) if now >= due else ThrottleDecision(None, due)


def told_since(state: NotifyState | None, started: datetime | None) -> datetime | None:
    """When the episode a message to this receiver speaks of began: `started` (the alerts' earliest
    `startsAt` now), or earlier, when the receiver was told of a start before it that no resolved message
    has closed (the alert resolved and fired again in between, unseen, and carries its new start now)."""
    earlier = state.since if state is not None and state.firing else None
    if earlier is None or started is None:
        return started or earlier
    return min(earlier, started)


def next_state(
    state: NotifyState | None, reason: NotifyReason, firing: Set[str], now: datetime, since: datetime | None = None
) -> NotifyState:
    """The state after a message with `reason` was accepted for delivery (it keeps a frozen copy of
    `firing`: a storm's is its tally's live set; a node incident's, already frozen, is kept as is).
    `since`: the start the message told (`told_since`); a resolved message closes the episode."""
    repeats = (state.repeats + 1) if (reason is NotifyReason.REPEAT and state is not None) else 0
    if reason is NotifyReason.RESOLVED:
        return NotifyState(last_sent_at=now, firing=frozenset(), repeats=repeats)
    return NotifyState(last_sent_at=now, firing=frozenset(firing), repeats=repeats, since=since)

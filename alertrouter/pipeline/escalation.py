"""Escalation policies and the pure decision of what an unacknowledged incident's chain does next.

A chain starts with an incident's first firing message on a route whose policy covers its severity.
Step i is due `steps[i].after` after that start; an acknowledgement or the resolve stops the chain,
and so does the last step once it has been taken. The store keeps where each chain is (`next_step`,
`next_at`), so whichever replica holds the engine lease takes each step once.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from alertrouter.message.facts import Facts
from alertrouter.pipeline.route import RouteMatch

__all__ = [
    "Chain",
    "EscalationPolicy",
    "EscalationStep",
    "Stop",
    "advance",
    "policy_for",
    "quiet_reason",
    "step_due",
]


@dataclass(frozen=True, slots=True)
class EscalationStep:
    after: timedelta
    receivers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EscalationPolicy:
    name: str
    severities: frozenset[str]
    steps: tuple[EscalationStep, ...]


class Stop(enum.StrEnum):
    ACKNOWLEDGED = "acknowledged"
    RESOLVED = "resolved"
    EXHAUSTED = "exhausted"  # the last step was taken
    POLICY_GONE = "policy_gone"  # the rules no longer have the policy (or fewer steps)
    SUPERSEDED = "superseded"  # a new chain of the same incident started (the store's safety net)
    SILENCED = "silenced"  # every firing alert of the incident is silenced: someone chose quiet
    INHIBITED = "inhibited"  # every firing alert is muted by another alert (whose incident pages)
    ROLLED_UP = "rolled_up"  # the node incident joined a storm: the storm's own chain carries on


@dataclass(frozen=True, slots=True)
class Chain:
    """Where one incident's escalation stands (a stored row): the next step to take and when."""

    incident: str
    policy: str
    started_at: datetime
    next_step: int  # 0-based index of the step still to take
    next_at: datetime | None  # None once stopped
    stopped: str | None = None


def policy_for(
    routes: list[RouteMatch], severity: str, policies: Mapping[str, EscalationPolicy]
) -> EscalationPolicy | None:
    """The first policy of the incident's routes that covers its severity."""
    for route in routes:
        policy = policies.get(route.escalation) if route.escalation else None
        if policy is not None and severity in policy.severities:
            return policy
    return None


def quiet_reason(summary: Facts, parent: str | None) -> Stop | None:
    """Why a firing incident should page no one any more, from its summary's counts
    (`pipeline.incident.node_facts`): rolled up into a storm, or every firing alert muted. Without
    the counts (a storm's summary has none), nothing says so."""
    if parent is not None:
        return Stop.ROLLED_UP
    firing, eligible, silenced = summary.tally.firing, summary.tally.eligible, summary.tally.silenced
    if firing is None or eligible is None or firing <= 0 or eligible > 0:
        return None
    return Stop.SILENCED if silenced is not None and silenced > 0 else Stop.INHIBITED


def step_due(chain: Chain, now: datetime) -> bool:
    return chain.stopped is None and chain.next_at is not None and chain.next_at <= now


def advance(chain: Chain, policy: EscalationPolicy) -> Chain:
    """The chain after its next step was taken: the step after it, or stopped when that was the last."""
    following = chain.next_step + 1
    if following >= len(policy.steps):
        return Chain(chain.incident, chain.policy, chain.started_at, following, None, Stop.EXHAUSTED.value)
    return Chain(
        chain.incident, chain.policy, chain.started_at, following, chain.started_at + policy.steps[following].after
    )

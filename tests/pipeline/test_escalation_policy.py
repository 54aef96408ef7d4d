"""The pure parts of escalation: which policy an incident's routes give it, the chain after a step, and
when an incident should page no one any more."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from alertrouter.message.facts import facts_from_json
from alertrouter.model import IncidentKind
from alertrouter.pipeline.escalation import (
    Chain,
    EscalationPolicy,
    EscalationStep,
    Stop,
    advance,
    policy_for,
    quiet_reason,
    step_due,
)
from alertrouter.pipeline.route import DEFAULT_POLICY, RouteMatch

T0 = datetime(2026, 12, 1, 19, 12, tzinfo=UTC)
M = timedelta(minutes=1)
CRIT = EscalationPolicy(
    "crit",
    frozenset({"critical"}),
    (EscalationStep(10 * M, ("secondary",)), EscalationStep(20 * M, ("lead",)), EscalationStep(30 * M, ("voice",))),
)
WARN = EscalationPolicy("warn", frozenset({"warning"}), (EscalationStep(60 * M, ("lead",)),))


def route(receiver: str, escalation: str | None) -> RouteMatch:
    return RouteMatch(receiver, "route", DEFAULT_POLICY, escalation=escalation)


@pytest.mark.parametrize(
    ("routes", "severity", "expected"),
    [
        ([route("a", "crit")], "critical", "crit"),
        ([route("a", "crit")], "warning", None),  # the policy does not cover warnings
        ([route("a", None), route("b", "crit")], "critical", "crit"),  # a `continue` sibling's policy counts
        ([route("a", "warn"), route("b", "crit")], "critical", "crit"),  # the first that covers the severity
        ([route("a", "gone")], "critical", None),
        ([], "critical", None),
    ],
)
def test_policy_for(routes: list[RouteMatch], severity: str, expected: str | None) -> None:
    found = policy_for(routes, severity, {"crit": CRIT, "warn": WARN})
    assert (found.name if found else None) == expected


def test_a_chain_steps_from_its_start_and_ends_after_the_last_step() -> None:
    chain = Chain("k", "crit", T0, 0, T0 + 10 * M)
    assert not step_due(chain, T0 + 10 * M - timedelta(seconds=1))
    assert step_due(chain, T0 + 10 * M)
    second = advance(chain, CRIT)
    assert (second.next_step, second.next_at, second.stopped) == (1, T0 + 20 * M, None)
    third = advance(second, CRIT)
    assert third.next_at == T0 + 30 * M  # from the start, not from the step before
    done = advance(third, CRIT)
    assert (done.next_step, done.next_at, done.stopped) == (3, None, Stop.EXHAUSTED.value)
    assert not step_due(done, T0 + timedelta(days=1))


@pytest.mark.parametrize(
    ("summary", "parent", "expected"),
    [
        ({"firing": 3, "eligible": 3, "silenced": 0}, None, None),
        ({"firing": 3, "eligible": 1, "silenced": 2}, None, None),  # one alert still counts
        ({"firing": 3, "eligible": 0, "silenced": 3}, None, Stop.SILENCED),
        ({"firing": 2, "eligible": 0, "silenced": 0, "muted": 2}, None, Stop.INHIBITED),
        ({"firing": 0, "eligible": 0}, None, None),  # resolving: the resolve stops it
        ({"nodes": 16, "members": []}, None, None),  # a storm's summary has no such counts
        ({"firing": 3, "eligible": 3}, "cluster/NodeDown/north", Stop.ROLLED_UP),
        ({"firing": "3", "eligible": None}, None, None),  # stored JSON of another shape: no guess
    ],
)
def test_quiet_reason(summary: dict[str, object], parent: str | None, expected: Stop | None) -> None:
    # as the engine reads a stored summary back (`store.incidents.load_incidents`)
    facts = facts_from_json(IncidentKind.CLUSTER if "nodes" in summary else IncidentKind.NODE, summary)
    assert quiet_reason(facts, parent) == expected

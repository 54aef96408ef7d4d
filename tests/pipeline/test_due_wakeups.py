"""Wake-ups left for the next pass (`evaluate_changes(due_max=...)`): a newly firing alert's pass does
not evaluate a storm's hold-downs that end at that moment, and the pass right behind it does; what
the two passes decide and tell is what one pass taking everything at once decides and tells, when the
new alert has nothing to do with them."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from alertrouter.fingerprints import fingerprint
from alertrouter.model import IncidentKind
from alertrouter.pipeline.evaluate import Evaluator
from alertrouter.pipeline.types import Decision, EvalResult, IncidentRecord, LiveAlert, next_records
from support.scenario import T0, dcgm_labels, shipped_pipeline

S = timedelta(seconds=1)
# The node-down inhibit rule's hold-down (rules/inhibit.yml): GPU alerts wait this long for a NodeDown.
HOLD_DOWN = 30 * S


def alert(labels: dict[str, str], at: datetime = T0) -> LiveAlert:
    return LiveAlert(fingerprint(labels), labels, True, at, at)


def hot_nodes(count: int) -> list[LiveAlert]:
    """GPUHighTemp on two GPUs of each of `count` nodes of one region (6 or more roll up into a storm), as
    bare-metal dcgm-exporter sends it: scraped by IP, the node's name in `Hostname`."""
    return [
        alert(
            dcgm_labels(
                f"10.0.5.{n + 10}",
                f"gpu-node-{n:02d}",
                g,
                alertname="GPUHighTemp",
                severity="warning",
                region="north",
                rack=f"r{n % 2}",
            )
        )
        for n in range(count)
        for g in range(2)
    ]


# A critical alert that no inhibit rule holds, on a node none of the GPU alerts share: the one someone
# waits for (the delivery benchmark's probe).
PROBE = alert(
    {"alertname": "InfiniBandPortDown", "node": "ib-leaf-3", "severity": "critical", "job": "ib"}, T0 + 31 * S
)


def said(results: list[EvalResult]) -> list[tuple[str, str, str, object]]:
    return sorted((i.incident, i.receiver, i.reason.value, i.message.to_json()) for r in results for i in r.intents)


def held_then(count: int) -> tuple[Evaluator, dict[str, IncidentRecord], EvalResult]:
    """An evaluator that decided `count` hot nodes at T0 (their alerts in hold-down), and its records."""
    ev = Evaluator(shipped_pipeline())
    first = ev.evaluate_changes(hot_nodes(count), [], {}, now=T0)
    return ev, next_records({}, first), first


@pytest.mark.parametrize("nodes", [3, 8])  # one node incident each, or a storm of them
def test_wake_ups_left_by_a_new_alerts_pass_are_taken_by_the_next_as_one_pass_would(nodes: int) -> None:
    ev, records, first = held_then(nodes)
    held = {fp for fp, d in first.decisions.items() if d.decision == Decision.HELD}
    assert len(held) == 2 * nodes, "the GPU alerts wait out the hold-down"
    assert first.wake_at == T0 + HOLD_DOWN
    now = T0 + HOLD_DOWN + S

    # the new alert's pass: more wake-ups have come than it takes, so it takes none
    urgent = ev.evaluate_changes([PROBE], [], records, now=now, due_max=1)
    assert urgent.deferred
    assert urgent.wake_at is not None
    assert urgent.wake_at <= now, "the engine is to pass again at once"
    assert urgent.decisions[PROBE.fingerprint].decision == Decision.NOTIFY
    assert {fp for fp, d in urgent.decisions.items() if d.decision == Decision.HELD} == held
    records = next_records(records, urgent)
    # the pass right behind it (no limit: the engine's next pass takes them even if urgent)
    behind = ev.evaluate_changes([], [], records, now=now)
    assert not behind.deferred
    records = next_records(records, behind)

    oracle, oracle_records, _ = held_then(nodes)
    once = oracle.evaluate_changes([PROBE], [], oracle_records, now=now)
    assert not once.deferred
    assert not any(d.decision == Decision.HELD for d in once.decisions.values())
    assert dict(behind.decisions) == dict(once.decisions)
    assert dict(behind.incidents) == dict(once.incidents)
    assert said([urgent, behind]) == said([once])
    assert behind.wake_at == once.wake_at
    oracle_records = next_records(oracle_records, once)
    assert records == oracle_records
    # and on: once the group waits are over, both tell the same (the new alert, the GPU incidents)
    later = now + 31 * S
    a = ev.evaluate_changes([], [], records, now=later)
    b = oracle.evaluate_changes([], [], oracle_records, now=later)
    assert dict(a.decisions) == dict(b.decisions)
    assert said([a]) == said([b])
    told = {i.incident for r in (urgent, behind, a) for i in r.intents}
    assert urgent.decisions[PROBE.fingerprint].incident in told, "the comparison compares messages"
    rolled = sum(d.decision == Decision.ROLLED_UP for d in once.decisions.values())
    assert rolled == (2 * nodes if nodes >= 6 else 0), "eight hot nodes of a region roll up into a storm"


def test_a_pass_takes_the_wake_ups_that_came_when_they_are_no_more_than_its_limit() -> None:
    ev, records, _ = held_then(3)
    now = T0 + HOLD_DOWN + S
    result = ev.evaluate_changes([PROBE], [], records, now=now, due_max=3)  # three node incidents are due
    assert not result.deferred
    assert not any(d.decision == Decision.HELD for d in result.decisions.values())


def test_a_full_pass_takes_every_wake_up_whatever_its_limit() -> None:
    ev, records, _ = held_then(3)
    result = ev.evaluate_changes([PROBE], [], records, now=T0 + HOLD_DOWN + S, due_max=1, full=True)
    assert not result.deferred
    assert not any(d.decision == Decision.HELD for d in result.decisions.values())


def test_a_pass_offers_the_interpreter_before_each_alert_incident_and_storm_it_takes() -> None:
    """The engine evaluates in a worker thread; between two items of its loops it calls its courtesy,
    which lets the event loop in (`alertrouter.process.courtesy`): one alert, one incident, one storm is the
    longest the loop waits for beyond that."""
    calls = [0]

    def courtesy() -> None:
        calls[0] += 1

    ev = Evaluator(shipped_pipeline(), courtesy=courtesy)
    alerts = hot_nodes(8)  # 16 alerts, 8 node incidents rolled up into one storm
    result = ev.evaluate_changes(alerts, [], {}, now=T0)
    nodes = sum(1 for s in result.incidents.values() if s.kind == IncidentKind.NODE)
    storms = sum(1 for s in result.incidents.values() if s.kind == IncidentKind.CLUSTER)
    assert (nodes, storms) == (8, 1)
    # each alert taken; each node incident sorted and told; each storm's membership and its telling
    assert calls[0] == len(alerts) + 2 * nodes + 2 * storms
    quiet = Evaluator(shipped_pipeline())
    assert said([quiet.evaluate_changes(alerts, [], {}, now=T0)]) == said([result]), "the same decisions"

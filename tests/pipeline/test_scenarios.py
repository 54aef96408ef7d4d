"""Scenarios from the noise-reduction issue, on the shipped rules, with an injected clock."""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import timedelta

import pytest

from alertrouter.pipeline.throttle import NotifyReason
from alertrouter.pipeline.types import Decision
from support.scenario import Scenario, gpu_labels, node_down_labels

S = timedelta(seconds=1)
MIN = timedelta(minutes=1)


def test_one_node_eight_hot_gpus_is_one_incident_one_message() -> None:
    sc = Scenario()
    for gpu in range(8):
        sc.fire(gpu_labels("gpu-node-07", gpu, region="north"))
        sc.now += 2 * S
    sc.run(2 * MIN)
    messages = sc.messages()
    assert len(messages) == 1
    (msg,) = messages
    assert msg.receiver == "ops-north"  # warning + region north
    assert msg.reason is NotifyReason.FIRST
    assert msg.message.headline == "gpu-node-07: GPUHighTemp on 8/8 GPUs"
    assert sc.last is not None
    assert len(sc.last.incidents) == 1
    assert Counter(d.decision for d in sc.last.decisions.values()) == {Decision.AGGREGATED: 8}


def test_six_of_eight_and_growth_is_one_update_after_group_interval() -> None:
    sc = Scenario()
    for gpu in range(6):
        sc.fire(gpu_labels("gpu-node-07", gpu))
    sc.run(MIN)
    assert [m.message.headline for m in sc.messages()] == ["gpu-node-07: GPUHighTemp on 6/8 GPUs"]
    sc.fire(gpu_labels("gpu-node-07", 6))
    sc.run(MIN)
    sc.fire(gpu_labels("gpu-node-07", 7))
    sc.run(5 * MIN)
    headlines = [m.message.headline for m in sc.messages()]
    assert headlines == ["gpu-node-07: GPUHighTemp on 6/8 GPUs", "gpu-node-07: GPUHighTemp on 8/8 GPUs"]
    assert sc.messages()[1].reason is NotifyReason.GREW


def test_rack_power_loss_gpu_first_then_node_down_is_one_cluster_message() -> None:
    """40 nodes of rack r12 lose power. Their GPU alerts arrive first, NodeDown 10-20 s later."""
    sc = Scenario()
    nodes = [f"gpu-node-{n:03d}" for n in range(40)]
    for node in nodes:
        for gpu in range(8):
            sc.fire(gpu_labels(node, gpu, alertname="GPUFallenOffBus", severity="critical", region="north", rack="r12"))
    sc.step()
    sc.now += 10 * S
    for node in nodes:
        sc.fire(node_down_labels(node, region="north", rack="r12"))
    sc.step()
    sc.now += 10 * S
    sc.run(10 * MIN)
    assert sc.last is not None
    decisions = sc.last.decisions
    gpu_decisions = Counter(
        d.decision for fp, d in decisions.items() if sc.alerts[fp].labels["alertname"] != "NodeDown"
    )
    assert gpu_decisions == {Decision.INHIBITED: 320}
    # nothing about GPUs was ever sent, and the 40 NodeDowns became one cluster message per receiver
    assert all("GPU" not in str(m.message.headline) for m in sc.messages())
    firsts = [m for m in sc.messages() if m.reason is NotifyReason.FIRST]
    assert [m.message.headline for m in firsts] == ["NodeDown on 40 nodes in region north, rack r12"]
    assert firsts[0].receiver == "critical-north"


def test_restart_while_node_down_sends_no_gpu_pages() -> None:
    sc = Scenario()
    for gpu in range(8):
        sc.fire(gpu_labels("gpu-node-07", gpu, severity="critical", region="north"))
    sc.fire(node_down_labels("gpu-node-07", region="north"))
    sc.run(2 * MIN)
    before = len(sc.messages())
    sc.restart()
    sc.run(30 * MIN)
    after = sc.messages()[before:]
    assert after, "NodeDown repeats every 10 minutes"
    assert all(m.message.headline == "gpu-node-07: NodeDown" for m in after)


def test_source_resolves_targets_still_firing_are_told_once() -> None:
    sc = Scenario()
    gpus = [gpu_labels("gpu-node-07", g, region="north") for g in range(2)]
    for labels in gpus:
        sc.fire(labels)
    sc.fire(node_down_labels("gpu-node-07", region="north"))
    sc.run(2 * MIN)
    assert all("GPU" not in str(m.message.headline) for m in sc.messages())
    sc.resolve(node_down_labels("gpu-node-07", region="north"))
    sc.run(10 * MIN)
    gpu_msgs = [m for m in sc.messages() if "GPUHighTemp" in str(m.message.headline)]
    assert [(m.reason, m.receiver) for m in gpu_msgs] == [(NotifyReason.FIRST, "ops-north")]


def test_a_node_coming_back_does_not_tell_its_exporter_alert_released_a_moment_before_its_resolve() -> None:
    """A node back: NodeDown and its DCGMExporterDown resolve in the same Prometheus evaluation, but reach
    alertrouter in separate webhooks (Alertmanager groups them apart). Between the two, DCGMExporterDown is
    firing and no longer muted: it is not told (once looked new and was told at once), its group wait
    counts from its release."""
    sc = Scenario()
    down = node_down_labels("gpu-node-07")
    dcgm = {"alertname": "DCGMExporterDown", "instance": "gpu-node-07:9400", "job": "dcgm", "severity": "warning"}
    sc.fire(down)
    sc.fire(dcgm)
    sc.run(2 * MIN)
    assert [m.message.headline for m in sc.messages()] == ["gpu-node-07: NodeDown"]
    sc.resolve(down)
    sc.step()
    sc.now += 3 * S
    sc.resolve(dcgm)
    sc.run(10 * MIN)
    told = [(m.message.headline, m.reason) for m in sc.messages()]
    assert told == [("gpu-node-07: NodeDown", NotifyReason.FIRST), ("gpu-node-07: NodeDown", NotifyReason.RESOLVED)]


def test_a_target_still_firing_after_its_source_resolved_is_told_after_the_group_wait() -> None:
    sc = Scenario()
    down = node_down_labels("gpu-node-07")
    dcgm = {"alertname": "DCGMExporterDown", "instance": "gpu-node-07:9400", "job": "dcgm", "severity": "warning"}
    sc.fire(down)
    sc.fire(dcgm)
    sc.run(2 * MIN)
    sc.resolve(down)
    released = sc.now
    sc.run(2 * MIN, every=S)
    (msg,) = [m for m in sc.messages() if m.message.headline == "gpu-node-07: DCGMExporterDown"]
    assert msg.reason is NotifyReason.FIRST
    assert msg.receiver == "ops"
    assert msg.message.at == released + 30 * S  # the shipped group wait, from the release


def test_held_until_the_late_source_arrives() -> None:
    sc = Scenario()
    fp = sc.fire(gpu_labels("gpu-node-07", 0))
    result = sc.step()
    decision = result.decisions[fp]
    assert decision.decision is Decision.HELD
    assert decision.held_until == sc.now + 30 * S
    sc.now += 20 * S
    node = sc.fire(node_down_labels("gpu-node-07"))
    sc.run(MIN)
    assert sc.last is not None
    assert sc.last.decisions[fp].decision is Decision.INHIBITED
    assert sc.last.decisions[fp].inhibited_by == node
    assert sc.last.decisions[fp].inhibit_rule == "node-down-mutes-node"


def test_flapping_gpu_costs_bounded_messages() -> None:
    sc = Scenario()
    labels = gpu_labels("gpu-node-07", 3, region="north")
    for minute in range(60):
        if minute % 2 == 0:
            sc.fire(labels)
        else:
            sc.resolve(labels)
        sc.run(MIN - 5 * S)
    # one incident per receiver; a message at most every group interval (5m) even when it flips every minute
    assert 1 <= len(sc.messages()) <= 60 // 5 + 1


@pytest.mark.parametrize(
    ("severity", "region", "receiver", "interval"),
    [
        ("critical", "north", "critical-north", 10 * MIN),
        ("warning", "south", "ops-south", 30 * MIN),
        ("info", "north", "weekly-digest", 120 * MIN),
    ],
)
def test_repeat_interval_by_severity(severity: str, region: str, receiver: str, interval: timedelta) -> None:
    sc = Scenario()
    sc.fire({"alertname": "GPUPowerNearLimit", "Hostname": "gpu-node-01", "severity": severity, "region": region})
    sc.run(4 * 60 * MIN, every=30 * S)
    times = [t for t, i in sc.sent if i.receiver == receiver]
    assert {i.receiver for _, i in sc.sent} == {receiver}
    assert times[0] == sc.sent[0][0] == sc.sent[0][0].replace(minute=0, second=30)  # hold-down and group wait overlap
    gaps = {b - a for a, b in itertools.pairwise(times)}
    assert gaps == {interval}
    assert len(times) == (4 * 60 * MIN - 30 * S) // interval + 1


def test_storm_rolls_up_and_late_nodes_join_quietly() -> None:
    sc = Scenario()
    for n in range(6):
        sc.fire(gpu_labels(f"gpu-node-{n:03d}", 0, region="north", rack="r12"))
        sc.now += 5 * S
    sc.run(MIN)
    assert [m.message.headline for m in sc.messages()] == ["GPUHighTemp on 6 nodes in region north, rack r12: 6 GPUs"]
    for n in range(6, 37):
        sc.fire(gpu_labels(f"gpu-node-{n:03d}", 1, region="north", rack="r12"))
    sc.run(10 * MIN)
    headlines = [m.message.headline for m in sc.messages()]
    assert headlines[-1] == "GPUHighTemp on 37 nodes in region north, rack r12: 37 GPUs"
    assert all("gpu-node" not in h for h in headlines)  # no node incident spoke on its own
    assert sc.last is not None
    assert Counter(d.decision for d in sc.last.decisions.values()) == {Decision.ROLLED_UP: 37}


def test_five_nodes_are_not_a_storm() -> None:
    sc = Scenario()
    for n in range(5):
        sc.fire(gpu_labels(f"gpu-node-{n:03d}", 0, region="north"))
    sc.run(MIN)
    assert sorted(m.message.headline for m in sc.messages()) == [
        f"gpu-node-{n:03d}: GPUHighTemp on 1/8 GPUs" for n in range(5)
    ]


def test_resolution_is_told_once_and_the_incident_closes() -> None:
    sc = Scenario()
    labels = [gpu_labels("gpu-node-07", g) for g in range(3)]
    for lab in labels:
        sc.fire(lab)
    sc.run(MIN)
    for lab in labels:
        sc.resolve(lab)
    # Three GPUs of one dcgm-exporter resolving at once is what a node going dark looks like: the
    # shipped `stale:` rule holds their resolve for `hold` (20m) in case a node-down alert comes.
    sc.run(15 * MIN)
    assert [m.reason for m in sc.messages()] == [NotifyReason.FIRST]
    sc.run(6 * MIN)
    assert [m.reason for m in sc.messages()] == [NotifyReason.FIRST, NotifyReason.RESOLVED]
    assert sc.last is not None
    (incident,) = sc.last.incidents.values()
    assert not incident.firing


def _rack_storm(sc: Scenario, nodes: list[str]) -> None:
    for node in nodes:
        sc.fire(node_down_labels(node, region="north", rack="r12"))
    sc.run(2 * MIN)


def test_a_storm_that_ends_resolves_its_cluster_incident_with_one_message() -> None:
    sc = Scenario()
    nodes = [f"gpu-node-{n:03d}" for n in range(8)]
    _rack_storm(sc, nodes)
    assert [(m.reason, m.message.headline) for m in sc.messages()] == [
        (NotifyReason.FIRST, "NodeDown on 8 nodes in region north, rack r12")
    ]
    # power is back: the nodes come back one after another over two minutes
    for node in nodes:
        sc.resolve(node_down_labels(node, region="north", rack="r12"))
        sc.run(15 * S)
    sc.run(10 * MIN)
    told = [(m.receiver, m.reason, m.message.headline, m.message.status.value) for m in sc.messages()[1:]]
    assert told == [
        ("critical-north", NotifyReason.RESOLVED, "NodeDown on 8 nodes in region north, rack r12", "resolved")
    ]
    storm = sc.messages()[0].incident
    assert sc.messages()[1].incident == storm
    assert sc.last is not None
    assert not [i for i in sc.last.incidents.values() if i.kind == "cluster" and i.firing]
    # the nodes never spoke on their own, and stay the storm's members
    nodes_left = [i for i in sc.last.incidents.values() if i.kind == "node"]
    assert len(nodes_left) == 8
    assert {i.parent for i in nodes_left} == {storm}
    assert not any(i.firing for i in nodes_left)


def test_a_storm_is_not_over_while_one_node_is_still_down() -> None:
    sc = Scenario()
    nodes = [f"gpu-node-{n:03d}" for n in range(8)]
    _rack_storm(sc, nodes)
    for node in nodes[:-1]:
        sc.resolve(node_down_labels(node, region="north", rack="r12"))
    sc.run(30 * MIN)
    assert NotifyReason.RESOLVED not in [m.reason for m in sc.messages()]
    assert sc.last is not None
    (cluster,) = [i for i in sc.last.incidents.values() if i.kind == "cluster"]
    assert cluster.firing
    sc.resolve(node_down_labels(nodes[-1], region="north", rack="r12"))
    sc.run(10 * MIN)
    assert [m.reason for m in sc.messages()][-1] is NotifyReason.RESOLVED
    assert not [i for i in sc.last.incidents.values() if i.kind == "cluster" and i.firing]


def test_an_ended_storm_survives_a_restart_and_still_resolves() -> None:
    sc = Scenario()
    nodes = [f"gpu-node-{n:03d}" for n in range(8)]
    _rack_storm(sc, nodes)
    for node in nodes:
        sc.resolve(node_down_labels(node, region="north", rack="r12"))
    sc.restart()
    sc.run(10 * MIN)
    assert [m.reason for m in sc.messages()] == [NotifyReason.FIRST, NotifyReason.RESOLVED]


def test_a_storm_counts_its_members_alerts_while_they_are_in_hold_down() -> None:
    """Six nodes overheat at once: a storm at the first pass. GPU alerts wait out the node-down rule's 30 s
    hold-down before a node incident speaks (a NodeDown may follow), but the storm is told as it arrives:
    its six alerts count for it already."""
    sc = Scenario()
    for n in range(6):
        sc.fire(gpu_labels(f"gpu-node-{n:03d}", 0, region="north", rack="r12"))
    result = sc.step()
    assert Counter(d.decision for d in result.decisions.values()) == {Decision.HELD: 6}
    sc.now += 10 * S
    result = sc.step()
    (storm,) = (s for s in result.incidents.values() if s.kind == "cluster")
    assert storm.summary.tally.alerts == 6
    assert storm.active_since is not None


def test_a_node_incidents_labels_are_those_all_its_alerts_share_resolved_ones_included() -> None:
    """Two GPUs of a node overheat and one cools down: the incident is still about both, so its labels (what
    routes match and messages show) carry no `gpu`, `UUID` or `device` of the one still hot."""
    sc = Scenario()
    hot = [gpu_labels("gpu-node-07", gpu, region="north") for gpu in (0, 1)]
    for labels in hot:
        sc.fire(labels)
    sc.run(MIN)
    sc.resolve(hot[0])
    result = sc.step()
    state = result.incidents[next(iter(result.incidents))]
    assert state.firing
    assert state.labels.get("node") == "gpu-node-07"
    assert "gpu" not in state.labels
    assert "UUID" not in state.labels

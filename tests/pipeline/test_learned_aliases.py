"""Node identity learned from alerts (issue 12 §1), on the shipped rules with an injected clock.

The rack case: 40 nodes lose power. dcgm-exporter (scraped by IP on :9400, the name in `Hostname`)
raises GPUXidError on every GPU; node-exporter (scraped by IP on :9100, no name) raises NodeDown for
every node. Without learning, the GPU alerts are on `gpu-node-1xx` and the NodeDowns on `10.0.0.1xx`,
`equal: [node]` never meets, and the on-call gets both storms, the NodeDown one listing bare IPs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import timedelta

import pytest

from alertrouter.pipeline.throttle import NotifyReason
from alertrouter.pipeline.types import Decision
from support.scenario import Scenario, dcgm_labels, node_exporter_down_labels

S = timedelta(seconds=1)
MIN = timedelta(minutes=1)
RACK = [(f"10.0.0.{n}", f"gpu-node-{n}") for n in range(100, 140)]


def fire_gpus(sc: Scenario) -> None:
    for ip, host in RACK:
        for gpu in range(8):
            sc.fire(dcgm_labels(ip, host, gpu, xid="79" if gpu else "48"))


def fire_node_downs(sc: Scenario) -> None:
    for ip, _ in RACK:
        sc.fire(node_exporter_down_labels(ip))


@pytest.mark.parametrize("node_down_first", [False, True], ids=["gpu-first", "nodedown-first"])
def test_rack_power_loss_is_one_node_down_message_in_either_order(node_down_first: bool) -> None:
    sc = Scenario()
    first, second = (fire_node_downs, fire_gpus) if node_down_first else (fire_gpus, fire_node_downs)
    first(sc)
    sc.step()
    sc.now += 25 * S
    second(sc)
    sc.run(15 * MIN)
    headlines = [m.message.headline for m in sc.messages()]
    assert [h for h in headlines if "GPU" in h] == []
    firsts = [m for m in sc.messages() if m.reason is NotifyReason.FIRST]
    assert [m.message.headline for m in firsts] == ["NodeDown on 40 nodes"]
    assert sc.last is not None
    decisions = sc.last.decisions
    by_name = Counter((sc.alerts[fp].labels["alertname"], d.decision) for fp, d in decisions.items())
    assert by_name == {("GPUXidError", Decision.INHIBITED): 320, ("NodeDown", Decision.ROLLED_UP): 40}
    # every incident is on the node's name; none is left open on an address
    node_keys = {k for k, s in sc.last.incidents.items() if s.kind == "node"}
    assert len(node_keys) == 80  # NodeDown and GPUXidError on each of the 40 nodes
    assert not [k for k in sc.records if "10.0.0." in k]
    assert all("10.0.0." not in str(m.message.to_json()) for m in firsts)


def test_node_down_told_by_address_is_carried_on_by_name_not_told_again() -> None:
    """NodeDown was sent as `10.0.0.7` before any alert named the node; a dcgm alert then teaches the
    name. The incident moves to `gpu-node-07` quietly: no second first message, no resolved message
    for the address; its next repeat (critical: 10 minutes) speaks of the node by name."""
    sc = Scenario()
    node_down = sc.fire(node_exporter_down_labels("10.0.0.7"))
    sc.run(2 * MIN)
    assert [(m.reason, m.message.headline) for m in sc.messages()] == [(NotifyReason.FIRST, "10.0.0.7: NodeDown")]
    sc.fire(dcgm_labels("10.0.0.7", "gpu-node-07", 3, alertname="GPUHighTemp", severity="warning"))
    sc.step()
    assert sc.last is not None
    old, new = 'node{alertname="NodeDown",node="10.0.0.7"}', 'node{alertname="NodeDown",node="gpu-node-07"}'
    assert sc.last.decisions[node_down].incident == new  # re-keyed in the pass that learned the name
    assert sc.last.moved == {old: new}
    assert sc.last.intents == []
    sc.run(12 * MIN)
    after = [(m.reason, m.message.headline) for m in sc.messages()][1:]
    assert after == [(NotifyReason.REPEAT, "gpu-node-07: NodeDown")]


def test_learning_off_keeps_addresses() -> None:
    shipped = Scenario().pipeline
    sc = Scenario(pipeline=replace(shipped, nodes=replace(shipped.nodes, learned_ttl=timedelta(0))))
    fire_gpus(sc)
    fire_node_downs(sc)
    sc.run(2 * MIN)
    assert sc.book == {}
    assert any("GPU" in m.message.headline for m in sc.messages())


def test_node_down_named_at_the_source_needs_no_learning() -> None:
    """The shipped NodeDown rule carries node-exporter's `nodename` (node_uname_info): with learning
    off and no `node` relabelling, the rack's GPU alerts are still muted by their node's NodeDown."""
    shipped = Scenario().pipeline
    sc = Scenario(pipeline=replace(shipped, nodes=replace(shipped.nodes, learned_ttl=timedelta(0))))
    fire_gpus(sc)
    for ip, name in RACK:
        sc.fire(node_exporter_down_labels(ip, nodename=name))
    sc.run(15 * MIN)
    assert sc.book == {}
    assert [m.message.headline for m in sc.messages() if "GPU" in m.message.headline] == []
    firsts = [m.message.headline for m in sc.messages() if m.reason is NotifyReason.FIRST]
    assert firsts == ["NodeDown on 40 nodes"]

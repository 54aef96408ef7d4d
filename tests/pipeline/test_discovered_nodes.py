"""Discovered names and topology (the Prometheus lookup) in node identity and in the evaluator:
configured > discovered > learned, an alert's own labels over every topology label, and a new snapshot
re-keying the alerts it concerns."""

from __future__ import annotations

from datetime import timedelta

from alertrouter.fingerprints import fingerprint
from alertrouter.pipeline.evaluate import Evaluator
from alertrouter.pipeline.nodes import Discovered, NodeIdentity
from alertrouter.pipeline.types import LiveAlert, next_records
from support.scenario import T0, dcgm_labels, node_exporter_down_labels, shipped_pipeline

NODE_DOWN = node_exporter_down_labels("10.0.0.7")
# dcgm-exporter under an older GPU Operator chart: scraped by pod IP, Hostname is the pod's name
DCGM_POD = {
    **dcgm_labels("10.244.7.23", "nvidia-dcgm-exporter-5xk2p", 3),
    "pod": "nvidia-dcgm-exporter-5xk2p",
    "namespace": "gpu-operator",
}
FOUND = Discovered(
    names={"10.0.0.7": "gpu-node-07", "10.244.7.23": "gpu-node-07", "nvidia-dcgm-exporter-5xk2p": "gpu-node-07"},
    topology={"gpu-node-07": {"region": "north", "zone": "north-a", "rack": "r12"}},
)


def test_discovered_names_an_address_and_a_pod() -> None:
    nodes = NodeIdentity(discovered=FOUND)
    assert nodes.node_of(NODE_DOWN) == "gpu-node-07"
    assert nodes.node_of(DCGM_POD) == "gpu-node-07"  # by its Hostname, the pod's name
    assert nodes.node_of({**DCGM_POD, "Hostname": ""}) == "gpu-node-07"  # by its pod IP
    assert nodes.node_of(node_exporter_down_labels("10.0.0.8")) == "10.0.0.8"  # not discovered


def test_an_ipv6_instance_is_looked_up_in_one_spelling() -> None:
    nodes = NodeIdentity(discovered=Discovered(names={"fd00::9": "gpu-node-09"}))
    assert nodes.node_of({"alertname": "NodeDown", "instance": "[FD00:0::9]:9100"}) == "gpu-node-09"


def test_configured_beats_discovered_beats_learned() -> None:
    learned = {"10.0.0.7": "learned-name"}
    assert NodeIdentity(learned=learned).node_of(NODE_DOWN) == "learned-name"
    assert NodeIdentity(learned=learned, discovered=FOUND).node_of(NODE_DOWN) == "gpu-node-07"
    configured = NodeIdentity(aliases={"10.0.0.7": "gpu07"}, learned=learned, discovered=FOUND)
    assert configured.node_of(NODE_DOWN) == "gpu07"
    # a configured alias of the discovered name renames it, as it does a learned one
    renamed = NodeIdentity(aliases={"gpu-node-07": "gpu07"}, discovered=FOUND)
    assert renamed.node_of(NODE_DOWN) == "gpu07"


def test_a_name_label_beats_a_discovered_address() -> None:
    """`node` from relabelling is first in node_labels: a discovered pod IP never overrides it."""
    labels = {**DCGM_POD, "node": "gpu-node-70"}
    assert NodeIdentity(discovered=FOUND).node_of(labels) == "gpu-node-70"


def test_topology_alert_labels_then_configured_then_discovered() -> None:
    nodes = NodeIdentity(topology={"gpu-node-07": {"rack": "r99"}}, discovered=FOUND)
    labels = nodes.enrich({**NODE_DOWN, "region": "from-the-alert"})
    assert labels["node"] == "gpu-node-07"
    assert labels["region"] == "from-the-alert"  # the alert's own label wins
    assert labels["rack"] == "r99"  # topology.nodes (written by people) over kube_node_labels
    assert labels["zone"] == "north-a"  # only discovered


def test_a_new_snapshot_re_keys_and_relabels_in_the_pass_that_gets_it() -> None:
    evaluator = Evaluator(shipped_pipeline())
    fps = {}
    alerts = []
    for labels in (NODE_DOWN, DCGM_POD):
        fp = fingerprint(labels)
        fps[labels["alertname"]] = fp
        alerts.append(LiveAlert(fp, labels, True, T0, T0))
    first = evaluator.evaluate(alerts, {}, now=T0, discovered=Discovered())
    assert evaluator.label_of(fps["NodeDown"], "node") == "10.0.0.7"
    assert evaluator.label_of(fps["GPUXidError"], "node") == "nvidia-dcgm-exporter-5xk2p"
    records = next_records({}, first)
    now = T0 + timedelta(seconds=5)
    second = evaluator.evaluate(alerts, records, now=now, discovered=FOUND)
    assert evaluator.label_of(fps["NodeDown"], "node") == "gpu-node-07"
    assert evaluator.label_of(fps["GPUXidError"], "node") == "gpu-node-07"
    assert evaluator.label_of(fps["NodeDown"], "region") == "north"
    assert evaluator.rekeyed == {fps["NodeDown"], fps["GPUXidError"]}
    # the incidents opened under the address and the pod's name move to the node's name; the GPU alert
    # is now inhibited by the NodeDown (`equal: [node]` meets)
    assert second.moved == {
        'node{alertname="NodeDown",node="10.0.0.7"}': 'node{alertname="NodeDown",node="gpu-node-07"}',
        'gpu-by-node{alertname="GPUXidError",node="nvidia-dcgm-exporter-5xk2p"}': (
            'gpu-by-node{alertname="GPUXidError",node="gpu-node-07"}'
        ),
    }
    assert second.decisions[fps["GPUXidError"]].decision.value == "inhibited"
    # the same snapshot again: nothing is re-keyed
    evaluator.evaluate(alerts, next_records(records, second), now=now + timedelta(seconds=5), discovered=FOUND)
    assert evaluator.rekeyed == set()


def test_a_changed_topology_label_relabels_only_that_nodes_alerts() -> None:
    evaluator = Evaluator(shipped_pipeline())
    other = node_exporter_down_labels("10.0.0.8")
    alerts = [LiveAlert(fingerprint(lb), lb, True, T0, T0) for lb in (NODE_DOWN, DCGM_POD, other)]
    first = evaluator.evaluate(alerts, {}, now=T0, discovered=FOUND)
    assert evaluator.label_of(fingerprint(NODE_DOWN), "region") == "north"
    moved = Discovered(names=FOUND.names, topology={"gpu-node-07": {"region": "south", "zone": "south-b"}})
    evaluator.evaluate(alerts, next_records({}, first), now=T0 + timedelta(seconds=5), discovered=moved)
    assert evaluator.label_of(fingerprint(NODE_DOWN), "region") == "south"
    assert evaluator.label_of(fingerprint(DCGM_POD), "zone") == "south-b"
    assert evaluator.label_of(fingerprint(other), "region") is None
    assert evaluator.rekeyed == {fingerprint(NODE_DOWN), fingerprint(DCGM_POD)}  # not the other node's alert

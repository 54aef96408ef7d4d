"""Stale incidents read as one story: a GPU incident whose data stopped because its node is down names the
NodeDown incident that explains it (while down, and in its resolved message once the node is back), and the
node's recovery is told before or together with its GPUs', never after.

Labels as the exporters send them: node-exporter's NodeDown is `up{job="node-exporter"} == 0` on
`instance="10.0.0.7:9100"`, with no name of the node (named by the alias dcgm-exporter's alerts teach);
dcgm-exporter's alerts carry `instance="10.0.0.7:9400"` and `Hostname`."""

from __future__ import annotations

from datetime import timedelta

from alertrouter.pipeline.throttle import NotifyReason
from alertrouter.pipeline.types import Decision, Intent
from support.scenario import Scenario, dcgm_labels, k8s_dcgm_labels, k8s_node_down_labels, node_exporter_down_labels

S = timedelta(seconds=1)
MIN = timedelta(minutes=1)
NODE = "gpu-node-07"
HOT = [dcgm_labels("10.0.0.7", NODE, g, alertname="GPUHighTemp", severity="warning") for g in (2, 5)]
DOWN = node_exporter_down_labels("10.0.0.7", job="node-exporter")
GPU_KEY = f'gpu-by-node{{alertname="GPUHighTemp",node="{NODE}"}}'
NODE_KEY = f'node{{alertname="NodeDown",node="{NODE}"}}'


def resolved(sc: Scenario) -> list[tuple[str, Intent]]:
    """The resolved messages in the order the engine intended them, with when."""
    return [(at.strftime("%H:%M:%S"), i) for at, i in sc.sent if i.reason is NotifyReason.RESOLVED]


def dies(sc: Scenario, down_for: timedelta) -> list[str]:
    """The node's GPUs are hot and told; the node dies (GPU alerts resolve, NodeDown fires a minute later)
    and stays down for `down_for`."""
    fps = [sc.fire(labels) for labels in HOT]
    sc.run(MIN)
    for labels in HOT:
        sc.resolve(labels)
    sc.run(70 * S)
    sc.fire(DOWN)
    sc.run(down_for)
    return fps


def test_the_node_recovery_goes_before_its_gpus_even_when_its_resolve_waits_after_a_repeat() -> None:
    """NodeDown repeats (critical: every 10m) and resolves 2.5 minutes later: its resolve waits for the
    group interval (5m) after the repeat, past the GPUs' `settle` (2m). The GPUs' resolve waits for it."""
    sc = Scenario()
    fps = dies(sc, 11 * MIN)
    assert [i.reason for _, i in sc.sent if i.incident == NODE_KEY] == [NotifyReason.FIRST, NotifyReason.REPEAT]
    sc.resolve(DOWN)
    sc.run(3 * MIN)
    # `settle` is over, but NodeDown's resolved message is not told yet: the GPUs are still returning
    assert resolved(sc) == []
    assert sc.last is not None
    assert {sc.last.decisions[fp].decision for fp in fps} == {Decision.STALE}
    assert {sc.last.decisions[fp].stale_reason for fp in fps} == {"returning"}
    sc.run(5 * MIN)
    told = resolved(sc)
    assert [i.incident for _, i in told] == [NODE_KEY, GPU_KEY]  # the node first, in the same pass
    assert told[0][0] == told[1][0]
    assert {sc.last.decisions[fp].decision for fp in fps} == {Decision.RESOLVED}


def test_the_gpu_incident_names_the_node_down_incident_while_down_and_when_resolved() -> None:
    sc = Scenario()
    xid = dcgm_labels("10.0.0.7", NODE, 1)  # an XID that fired and resolved long before the node died
    sc.fire(xid)
    sc.run(MIN)
    sc.resolve(xid)
    sc.run(20 * MIN)
    fps = dies(sc, 5 * MIN)
    assert sc.last is not None
    xid_incident = sc.last.incidents[f'gpu-by-node{{alertname="GPUXidError",node="{NODE}"}}']
    assert not any(k.startswith("no_data") for k in xid_incident.summary.to_json())
    gpu = sc.last.incidents[GPU_KEY].summary.to_json()
    assert {k: gpu[k] for k in gpu if k.startswith("no_data_") and k != "no_data_since"} == {
        "no_data_source": NODE_KEY,
        "no_data_cause": "NodeDown",
        "no_data_node": NODE,
        "no_data_down": True,
    }
    down_fp = next(fp for fp, a in sc.alerts.items() if a.labels["alertname"] == "NodeDown")
    assert {sc.last.decisions[fp].stale_source for fp in fps} == {down_fp}
    sc.resolve(DOWN)
    sc.run(3 * MIN)
    (message,) = [i.message for _, i in resolved(sc) if i.incident == GPU_KEY]
    stored = message.to_json()["summary"]  # as the outbox row holds it
    assert stored["no_data_source"] == NODE_KEY
    assert stored["no_data_down"] is False
    assert stored["no_data_node"] == NODE


def test_a_dead_node_is_explained_by_its_node_down_not_by_its_muted_exporter_down() -> None:
    """DCGMExporterDown (`up{job="dcgm-exporter"} == 0`, for: 5m) fires too, inhibited by NodeDown: the GPU
    incident names NodeDown, and its resolve still waits for NodeDown's, whichever source came back last."""
    sc = Scenario()
    exporter_down = {"alertname": "DCGMExporterDown", "instance": "10.0.0.7:9400", "job": "dcgm-exporter"}
    exporter_down["severity"] = "warning"
    dies(sc, 4 * MIN)
    sc.fire(exporter_down)
    sc.run(7 * MIN)
    assert sc.last is not None
    summary = sc.last.incidents[GPU_KEY].summary.to_json()
    assert (summary["no_data_source"], summary["no_data_cause"]) == (NODE_KEY, "NodeDown")
    assert [i.reason for _, i in sc.sent if i.incident == NODE_KEY] == [NotifyReason.FIRST, NotifyReason.REPEAT]
    sc.resolve(DOWN)  # node-exporter answers first, dcgm-exporter 20s later
    sc.run(20 * S)
    sc.resolve(exporter_down)
    sc.run(8 * MIN)
    assert [i.incident for _, i in resolved(sc)] == [NODE_KEY, GPU_KEY]
    assert sc.last.incidents[GPU_KEY].summary.to_json()["no_data_source"] == NODE_KEY


def test_a_gpu_firing_again_after_the_node_returned_is_not_said_to_have_no_data() -> None:
    """GPU 2 resolved for good after the node came back; GPU 5 fires again a few minutes later: a new
    occurrence, whose message says nothing about the node that was down."""
    sc = Scenario()
    dies(sc, 5 * MIN)
    sc.resolve(DOWN)
    sc.run(5 * MIN)
    assert sc.last is not None
    assert sc.last.incidents[GPU_KEY].summary.to_json()["no_data_source"] == NODE_KEY  # resolved: it says why
    sc.fire(HOT[1])
    sc.run(6 * MIN)  # a first message again, the group interval (5m) after the resolved one
    (again,) = [i for _, i in sc.sent if i.incident == GPU_KEY][2:]
    assert again.reason is NotifyReason.FIRST
    assert not any(k.startswith("no_data") for k in again.message.to_json()["summary"])


def test_kubernetes_labels_tell_the_same_story() -> None:
    """kube-prometheus-stack + GPU Operator: dcgm-exporter at its pod IP, node-exporter at the node IP, both
    relabelled with `node`; NodeDown resolves 2.5 minutes after its repeat."""
    sc = Scenario()
    hot = [k8s_dcgm_labels(NODE, "10.244.7.23", g) for g in (2, 5)]
    down = k8s_node_down_labels(NODE, "10.0.0.7")
    for labels in hot:
        sc.fire(labels)
    sc.run(MIN)
    for labels in hot:
        sc.resolve(labels)
    sc.run(70 * S)
    sc.fire(down)
    sc.run(11 * MIN)
    assert sc.last is not None
    summary = sc.last.incidents[GPU_KEY].summary.to_json()
    assert (summary["no_data_source"], summary["no_data_down"]) == (NODE_KEY, True)
    sc.resolve(down)
    sc.run(8 * MIN)
    assert [i.incident for _, i in resolved(sc)] == [NODE_KEY, GPU_KEY]

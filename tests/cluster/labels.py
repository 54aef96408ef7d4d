"""Label shapes other than bare metal's, driven through the cluster in a box (box.py); asserted by
test_labels.py. One box, four nodes, at once:

- NORTH (gpu-node-01) and SOUTH (gpu-node-02): bare metal, each scrape target carrying a `region` label as a
  real scrape config would (`region: north` on the node's targets). Each reports XID 48 on one GPU: a
  critical alert, routed by the shipped routes.yml to critical-north / critical-south.
- RELABELLED (gpu-node-03) and UNRELABELLED (gpu-node-04): Kubernetes, kube-prometheus-stack + NVIDIA GPU
  Operator (labels from /work/shared/reference/gpu-alerts.md): node-exporter on the host network is
  `instance=<node IP>:9100` with its pod's `namespace`/`pod`/`container`/`service`/`endpoint`; dcgm-exporter,
  off the host network, is `instance=<pod IP>:9400` with `pod=nvidia-dcgm-exporter-xxxxx`, and `Hostname` is
  that pod's name (older GPU Operator charts). RELABELLED has the docs' recommended relabelling (node-identity.md)
  (`__meta_kubernetes_pod_node_name` -> `node` on both exporters; here the static target label it would
  produce); UNRELABELLED has none. Every GPU of both reports XID 79, then both nodes go dark.

Beside them, nodes of RELABELLED's shape for GPU triage: a lemon GPU and a moved one (lemon.py), and one GPU's
Xid 79 with Xid 45 on the node's seven others (follow_on.py).

The Kubernetes targets carry the ServiceMonitors' job names (`node-exporter`, `nvidia-dcgm-exporter`), the
bare-metal ones the scrape config's (`node`, `dcgm`): the shipped rules must fire under both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cluster.box import ClusterBox
from cluster.fleet import Fleet
from cluster.follow_on import FOLLOW_ON, FOLLOW_ON_KUBERNETES, Fault, fire_follow_ons, fire_root, read_fault, told_root
from cluster.lemon import (
    DAYS,
    KUBERNETES,
    LEMON,
    LEMON_GPU,
    MOVED_DAYS,
    MOVED_FROM,
    MOVED_TO,
    SPARE,
    Lemon,
    fire_again,
    push_first,
    read_gpu,
    told_gpu,
)
from cluster.told import Snapshot, settle, told
from e2e.harness import wait_for

__all__ = [
    "NODES",
    "NORTH",
    "POD",
    "POD_IP",
    "RELABELLED",
    "SOUTH",
    "UNRELABELLED",
    "XID48_GPU",
    "Labels",
    "labels_box",
    "run_labels",
]

NODES = 7
NORTH, SOUTH, RELABELLED, UNRELABELLED = 1, 2, 3, 4
XID48_GPU = {NORTH: 2, SOUTH: 5}
POD = {RELABELLED: "nvidia-dcgm-exporter-5x7kq", UNRELABELLED: "nvidia-dcgm-exporter-q9w2d"}
POD_IP = {RELABELLED: "10.244.3.17", UNRELABELLED: "10.244.4.23"}
NODE_EXPORTER_POD = {
    RELABELLED: "kube-prometheus-stack-prometheus-node-exporter-7xk2p",
    UNRELABELLED: "kube-prometheus-stack-prometheus-node-exporter-m4hz8",
}
TIMEOUT = 150.0


def name(index: int) -> str:
    return f"gpu-node-{index:02d}"


def _fleet() -> Fleet:
    fleet = Fleet(NODES)
    for index, region in ((NORTH, "north"), (SOUTH, "south")):
        fleet.node(index).target_labels = {"node-exporter": {"region": region}, "dcgm-exporter": {"region": region}}
    kubernetes = [(i, POD[i], POD_IP[i], NODE_EXPORTER_POD[i]) for i in (RELABELLED, UNRELABELLED)]
    kubernetes += [(i, *KUBERNETES[i]) for i in (LEMON, SPARE)] + [(FOLLOW_ON, *FOLLOW_ON_KUBERNETES)]
    for index, pod, pod_ip, node_exporter_pod in kubernetes:
        node = fleet.node(index)
        node.host_label = "Hostname"
        node.host_name = pod
        node_exporter = {
            "job": "node-exporter",  # the ServiceMonitors' job names, over the scrape config's
            "namespace": "monitoring",
            "pod": node_exporter_pod,
            "container": "node-exporter",
            "service": "kube-prometheus-stack-prometheus-node-exporter",
            "endpoint": "http-metrics",
        }
        dcgm = {
            "job": "nvidia-dcgm-exporter",
            "instance": f"{pod_ip}:9400",
            "namespace": "gpu-operator",
            "pod": pod,
            "container": "nvidia-dcgm-exporter",
            "service": "nvidia-dcgm-exporter",
            "endpoint": "gpu-metrics",
        }
        if index != UNRELABELLED:
            node_exporter["node"] = dcgm["node"] = node.name
        node.target_labels = {"node-exporter": node_exporter, "dcgm-exporter": dcgm}
    return fleet


def labels_box() -> ClusterBox:
    return ClusterBox(nodes=NODES, fleet=_fleet())


@dataclass
class Labels:
    box: ClusterBox
    store: Snapshot
    told: dict[str, list[str]]
    lemon: Lemon
    moved: Lemon
    fault: Fault


def _incidents(box: ClusterBox) -> list[dict[str, Any]]:
    r = box.routers[0].http.get("/api/v1/incidents", params={"limit": 1000})
    assert r.status_code == 200, r.text
    incidents: list[dict[str, Any]] = r.json()["incidents"]
    return incidents


def _told_everything(box: ClusterBox) -> bool:
    out = told(box)
    return (
        sum("NodeDown" in t for t in out["sms-oncall"]) == 2
        and sum("NodeDown" in t for t in out["dingtalk-core"]) == 2
        and any("GPUXidError" in t for t in out["dingtalk-north"])
        and any("GPUXidError" in t for t in out["dingtalk-south"])
        and any("GPUXidError" in t for t in out["sms-north"])
        and any("GPUXidError" in t for t in out["sms-south"])
        and any("DCGMExporterDown" in t for t in out["dingtalk-ops"])
    )


def run_labels(box: ClusterBox) -> Labels:
    fleet, router = box.fleet, box.routers[0]
    wait_for(lambda: sum(s["value"][1] == "1" for s in box.query("up")) == 2 * NODES, what="every target up")
    wait_for(lambda: len(box.query("node_uname_info")) == NODES, what="node_uname_info of every node")

    lemon, moved = push_first(box, (LEMON, LEMON_GPU), DAYS), push_first(box, MOVED_FROM, MOVED_DAYS)
    for index, gpu in XID48_GPU.items():
        fleet.set_gpus(index, [gpu], xid=48)
    for index in (RELABELLED, UNRELABELLED):
        fleet.set_gpus(index, range(8), xid=79)
    fire_root(box)
    xid79 = '{alertname="GPUFallenOffBus"}'
    wait_for(lambda: len(router.alerts(filter=xid79)) == 17, what="the XID 79 alerts stored", timeout=TIMEOUT)
    fire_follow_ons(box)
    fleet.go_dark([RELABELLED, UNRELABELLED])
    fire_again(box, lemon)
    fire_again(box, moved, to=MOVED_TO)
    wait_for(
        lambda: _told_everything(box) and told_gpu(box, name(LEMON)) and told_gpu(box, name(SPARE)) and told_root(box),
        what="every expected message at the fakes",
        timeout=TIMEOUT,
    )
    store = settle(box, TIMEOUT)
    lemon, moved = read_gpu(box, lemon, name(LEMON)), read_gpu(box, moved, name(SPARE))
    return Labels(box, store, told(box), lemon, moved, read_fault(box))

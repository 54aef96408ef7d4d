"""Nodes living and dying, driven through the cluster in a box (box.py); asserted by test_node_life.py.

One box, seven nodes, six scenarios at once on different nodes (they share no node, and no alert of one
can mute or join another's):

- BACK (gpu-node-01) goes dark (503), NodeDown is told, then it comes back: the resolved message.
- REFUSED (gpu-node-02) goes dark by refusing connections (its own port closed), and stays dark.
- BLIND (gpu-node-03) has two hot GPUs (GPUHighTemp warning, told), then its dcgm-exporter stops answering
  while node-exporter stays up: DCGMExporterDown, and the stale GPU alerts muted, not "resolved".
- PRESSED (gpu-node-04) runs out of memory (3% available: NodeMemoryPressure critical) and of disk
  (7% free on /: NodeDiskPressure warning).
- FLAPPING (gpu-node-05) GPU 0 is hot until told, then crosses GPUHighTemp's 85C threshold up and down
  every few seconds for a while, and ends cool.
- UNSEEN (gpu-node-07): its dcgm-exporter stops answering with no GPU alert before (nothing taught its name).
- gpu-node-06 stays healthy.
- DARK_METAL (gpu-node-08, bare metal) and DARK_KUBE (gpu-node-09, Kubernetes: dcgm-exporter scraped by pod IP
  with `Hostname` = the node's name, both exporters relabelled with `node`, the ServiceMonitors' jobs) have two
  hot GPUs (told), then go dark: their GPU alerts resolve as their series vanish, NodeDown follows. Stale is not
  resolved (rules/stale.yml): no "resolved" for those GPUs, one incident told (NodeDown). DARK_METAL then
  comes back cool: NodeDown's resolve, and `settle` (2m) later its GPUs' resolve; DARK_KUBE stays dark.

alertrouter's group_interval is shortened to GROUP_INTERVAL (shipped: 5m) so a resolved message comes in
seconds; group_wait (30s) and hold_down (30s) stay as shipped. `run_node_life` returns once everything the
scenarios must cause has reached the fakes and the store is at rest.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from cluster.box import ClusterBox
from cluster.fleet import Fleet
from cluster.told import Snapshot, about, settle, told
from e2e.harness import wait_for

__all__ = [
    "BACK",
    "BLIND",
    "DARK_HOT",
    "DARK_KUBE",
    "DARK_METAL",
    "DARK_POD_IP",
    "FLAPPING",
    "FLAPS",
    "GROUP_INTERVAL",
    "NODES",
    "PRESSED",
    "REFUSED",
    "UNSEEN",
    "WARNINGS_IN",
    "NodeLife",
    "node_life_box",
    "run_node_life",
]

NODES = 9
BACK, REFUSED, BLIND, PRESSED, FLAPPING, UNSEEN, DARK_METAL, DARK_KUBE = 1, 2, 3, 4, 5, 7, 8, 9
BLIND_HOT = (0, 1)  # gpu-node-03's hot GPUs, 88C
DARK_HOT = (2, 5)  # DARK_METAL's and DARK_KUBE's hot GPUs
DARK_POD_IP = "10.244.9.31"  # DARK_KUBE's dcgm-exporter pod
SETTLE = 120.0  # rules/stale.yml `settle`: a stale alert's resolve waits this long after its node is back
FLAPS = 4  # up-and-down cycles of gpu-node-05 GPU 0 between 88C and 80C
HALF_PERIOD = 6.0  # seconds hot, then seconds cool: longer than `for:` (2s) plus a scrape and an evaluation
GROUP_INTERVAL = "20s"
TIMEOUT = 150.0  # each wait; group_wait 30s and hold_down 30s dominate, on a loaded machine


def name(index: int) -> str:
    return f"gpu-node-{index:02d}"


def _fleet() -> Fleet:
    fleet = Fleet(NODES, listeners=[REFUSED])
    kube = fleet.node(DARK_KUBE)
    kube.host_label = "Hostname"  # the GPU Operator injects NODE_NAME: the node's name, not the pod's
    node = {"node": kube.name}  # the relabelling of docs/en/node-identity.md (__meta_kubernetes_pod_node_name -> node)
    kube.target_labels = {
        "node-exporter": {
            "job": "node-exporter",
            "namespace": "monitoring",
            "pod": "kube-prometheus-stack-prometheus-node-exporter-9kq2w",
            "container": "node-exporter",
            "service": "kube-prometheus-stack-prometheus-node-exporter",
            "endpoint": "http-metrics",
            **node,
        },
        "dcgm-exporter": {
            "job": "nvidia-dcgm-exporter",
            "instance": f"{DARK_POD_IP}:9400",
            "namespace": "gpu-operator",
            "pod": "nvidia-dcgm-exporter-7rz4n",
            "container": "nvidia-dcgm-exporter",
            "service": "nvidia-dcgm-exporter",
            "endpoint": "gpu-metrics",
            **node,
        },
    }
    return fleet


WARNINGS_IN = ("en", "Europe/Berlin")  # the warning team's language and zone; the on-call team's are shipped


def node_life_box() -> ClusterBox:
    return ClusterBox(nodes=NODES, fleet=_fleet(), group_interval=GROUP_INTERVAL, warnings_in=WARNINGS_IN)


@dataclass
class NodeLife:
    box: ClusterBox
    store: Snapshot
    told: dict[str, list[str]]
    flaps: int  # hot phases the flapping GPU went through after it was told
    flap_episodes: list[dict[str, Any]]  # its firing episodes as alertrouter stored them (starts_at, ends_at)


def _flap(box: ClusterBox, done: threading.Event, hot_phases: list[int]) -> None:
    """The flapping GPU's thermometer (the scenario's input, not a wait): cool, hot, FLAPS times, then cool."""
    fleet = box.fleet
    try:
        for _ in range(FLAPS):
            fleet.set_gpus(FLAPPING, [0], temp=80)
            time.sleep(HALF_PERIOD)
            fleet.set_gpus(FLAPPING, [0], temp=88)
            hot_phases[0] += 1
            time.sleep(HALF_PERIOD)
    finally:
        fleet.set_gpus(FLAPPING, [0], temp=80)  # ends cool
        done.set()


def _incident(box: ClusterBox, alertname: str, node: str) -> dict[str, Any] | None:
    r = box.routers[0].http.get("/api/v1/incidents", params={"limit": 1000})
    assert r.status_code == 200, r.text
    for i in r.json()["incidents"]:
        if i["kind"] == "node" and i["labels"].get("alertname") == alertname and i["labels"].get("node") == node:
            found: dict[str, Any] = i
            return found
    return None


def _sent(box: ClusterBox, alertname: str, node: str, *, resolved: bool = False) -> int:
    """Deliveries sent for the node incident of `alertname` on `node`, all channels; with `resolved`, 0 until
    the incident has resolved."""
    incident = _incident(box, alertname, node)
    if incident is None or (resolved and incident["status"] != "resolved"):
        return 0
    r = box.routers[0].http.get("/api/v1/notifications", params={"limit": 1000})
    assert r.status_code == 200, r.text
    rows = r.json()["notifications"]
    return sum(1 for row in rows if row["incident_id"] == incident["id"] and row["status"] == "sent")


def run_node_life(box: ClusterBox) -> NodeLife:
    fleet, router = box.fleet, box.routers[0]
    wait_for(lambda: sum(s["value"][1] == "1" for s in box.query("up")) == 2 * NODES, what="every target up")
    wait_for(lambda: len(box.query("node_uname_info")) == NODES, what="node_uname_info of every node")

    # 1. everything starts at once, each on its own node
    fleet.go_dark([BACK])
    fleet.refuse([REFUSED])
    fleet.set_gpus(BLIND, BLIND_HOT, temp=88)
    with fleet.lock:
        pressed = fleet.node(PRESSED)
        pressed.mem_available = pressed.mem_total * 3 // 100  # 3% < 5%: critical
        pressed.disk_avail = pressed.disk_size * 7 // 100  # 7% < 10%: warning
    fleet.set_gpus(FLAPPING, [0], temp=88)
    fleet.set_dcgm_down(UNSEEN)
    for dark in (DARK_METAL, DARK_KUBE):
        fleet.set_gpus(dark, DARK_HOT, temp=88)

    # 2. the hot GPUs of BLIND told on the two warning channels: its dcgm-exporter stops at once, well within
    # the group interval of that message (see test_dcgm_exporter_down_on_a_live_node_mutes_its_gpu_metric_alerts)
    wait_for(lambda: _sent(box, "GPUHighTemp", name(BLIND)) == 2, what="BLIND's GPUs told", timeout=TIMEOUT)
    fleet.set_dcgm_down(BLIND)
    # 2b. the hot GPUs of the two DARK nodes told: both nodes die
    for dark in (DARK_METAL, DARK_KUBE):
        wait_for(
            lambda d=dark: _sent(box, "GPUHighTemp", name(d)) == 2,  # type: ignore[misc]
            what=f"{name(dark)}'s GPUs told",
            timeout=TIMEOUT,
        )
    fleet.go_dark([DARK_METAL, DARK_KUBE])
    # 3. NodeDown of BACK told on the three critical channels: it comes back; FLAPPING's GPU told: it flaps
    wait_for(lambda: _sent(box, "NodeDown", name(BACK)) == 3, what="NodeDown told", timeout=TIMEOUT)
    fleet.power_on([BACK])
    # 3b. NodeDown of both DARK nodes told: DARK_METAL comes back with its GPUs cool (DARK_KUBE stays dark)
    for dark in (DARK_METAL, DARK_KUBE):
        wait_for(
            lambda d=dark: _sent(box, "NodeDown", name(d)) == 3,  # type: ignore[misc]
            what=f"{name(dark)}'s NodeDown told",
            timeout=TIMEOUT,
        )
    fleet.set_gpus(DARK_METAL, DARK_HOT, temp=45)
    fleet.power_on([DARK_METAL])
    wait_for(lambda: _sent(box, "GPUHighTemp", name(FLAPPING)) == 2, what="FLAPPING's GPU told", timeout=TIMEOUT)
    done, hot_phases = threading.Event(), [0]
    flapper = threading.Thread(target=_flap, args=(box, done, hot_phases), daemon=True)
    flapper.start()

    def everything_told() -> bool:
        out = told(box)
        return (
            _sent(box, "NodeDown", name(BACK), resolved=True) == 6  # firing + resolved on three channels
            and _sent(box, "NodeDown", name(REFUSED)) == 3
            and _sent(box, "DCGMExporterDown", name(BLIND)) == 2
            and _sent(box, "DCGMExporterDown", name(UNSEEN)) == 2
            and len(about(out["dingtalk-core"], "NodeMemoryPressure")) == 1
            and len(about(out["dingtalk-ops"], "NodeDiskPressure")) == 1
            and done.is_set()
            # the flapping GPU ended cool: its resolved message, at most a group interval after the last one
            and _sent(box, "GPUHighTemp", name(FLAPPING), resolved=True) == 4
            # DARK_METAL back: NodeDown's resolve, then (`settle` later) its stale GPUs' resolve
            and _sent(box, "NodeDown", name(DARK_METAL), resolved=True) == 6
            and _sent(box, "GPUHighTemp", name(DARK_METAL), resolved=True) == 4
        )

    wait_for(
        everything_told, what="every expected message at the fakes", timeout=TIMEOUT + FLAPS * 2 * HALF_PERIOD + SETTLE
    )
    flapper.join(5)
    store = settle(box)
    (gpu0,) = store.of("GPUHighTemp", name(FLAPPING))
    episodes = router.detail(gpu0["fingerprint"])["episodes"]
    return NodeLife(box, store, told(box), hot_phases[0], episodes)

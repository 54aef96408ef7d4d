"""A GPU fault and its follow-ons through the cluster in a box (issue 48 §1), a phase of the label-shapes
timeline (labels.py); asserted by test_labels.py.

On FOLLOW_ON (gpu-node-07, a GPU Operator node with the docs' `node` relabelling, so the shipped routes page
oncall-core) GPU 3 falls off the bus: its dcgm-exporter reports Xid 79 and the shipped GPUFallenOffBus fires.
Once alertrouter holds it, the node's seven other GPUs report Xid 45 (preemptive cleanup, the catalog's
follow-on of a GPU lost), through the real GPUXidError rule: alertrouter folds them into the 79 (inhibited by
rule `gpu-follow-on`, the 79 as source), and the 79's one page says so. The node stays up: the 79 must still
fire for the 45s to fold into it.

The phase is a step to fire the root beside the timeline's other Xid 79s (`fire_root`), one once it is
stored (`fire_follow_ons`), a bounded wait for its page (`told_root`) and one read at rest (`read_fault`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cluster.box import ClusterBox
from cluster.told import about, told

__all__ = [
    "FOLLOW_ON",
    "FOLLOW_ON_KUBERNETES",
    "OTHERS",
    "ROOT_GPU",
    "Fault",
    "fire_follow_ons",
    "fire_root",
    "read_fault",
    "told_root",
]

FOLLOW_ON = 7  # gpu-node-07
# its dcgm-exporter pod, that pod's IP, its node-exporter pod (GPU Operator, relabelled), as lemon.KUBERNETES
FOLLOW_ON_KUBERNETES = (
    "nvidia-dcgm-exporter-r6b3x",
    "10.244.7.19",
    "kube-prometheus-stack-prometheus-node-exporter-p5n7v",
)
ROOT_GPU = 3
OTHERS = tuple(g for g in range(8) if g != ROOT_GPU)
ROOT_XID, FOLLOW_ON_XID = 79, 45
CHANNELS = ("dingtalk-core", "wecom-core", "sms-oncall")  # oncall-core's, in rules/routes.yml


def _node() -> str:
    return f"gpu-node-{FOLLOW_ON:02d}"


@dataclass
class Fault:
    """What the chain holds at rest of the node's GPU fault: `root` the Xid 79 alert and `follow_ons` the
    Xid 45 ones as GET /api/v1/alerts shows them; `incidents` the node's GPU incidents (GET /api/v1/incidents)."""

    root: dict[str, Any]
    follow_ons: list[dict[str, Any]]
    incidents: list[dict[str, Any]]


def fire_root(box: ClusterBox) -> None:
    """GPU 3 of the node reports Xid 79; the timeline waits for it with its other GPUFallenOffBus alerts."""
    box.fleet.set_gpus(FOLLOW_ON, [ROOT_GPU], xid=ROOT_XID)


def fire_follow_ons(box: ClusterBox) -> None:
    """The Xid 79 being stored (the caller waited for it), the node's other GPUs report Xid 45."""
    box.fleet.set_gpus(FOLLOW_ON, OTHERS, xid=FOLLOW_ON_XID)


def told_root(box: ClusterBox) -> bool:
    """The 79's page reached every channel of oncall-core (a bounded wait, not the assertion)."""
    out = told(box)
    return all(about(out[c], _node(), "GPUFallenOffBus") for c in CHANNELS)


def read_fault(box: ClusterBox) -> Fault:
    """The node's Xid alerts and GPU incidents, once the box is at rest."""
    router = box.routers[0]
    node = _node()
    (root,) = router.alerts(filter=f'{{alertname="GPUFallenOffBus",node="{node}"}}')
    follow_ons = router.alerts(filter=f'{{alertname="GPUXidError",node="{node}"}}')
    r = router.http.get("/api/v1/incidents", params={"limit": 1000})
    assert r.status_code == 200, r.text
    incidents = [i for i in r.json()["incidents"] if i["labels"].get("node") == node]
    return Fault(root, sorted(follow_ons, key=lambda a: int(a["labels"]["gpu"])), incidents)

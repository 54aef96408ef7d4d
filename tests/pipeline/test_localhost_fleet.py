"""40 nodes whose dcgm-exporter says `Hostname="localhost"` (a remote nv-hostengine) are 40 nodes: their
alerts are never one "localhost" node, and a double-bit ECC error on one of them is told on its own."""

from __future__ import annotations

from datetime import timedelta

import pytest

from alertrouter.pipeline.throttle import NotifyReason
from support.scenario import Scenario, dcgm_labels, k8s_dcgm_labels

S = timedelta(seconds=1)
MIN = timedelta(minutes=1)
FLEET = [f"10.0.0.{n}" for n in range(100, 140)]
POD = "nvidia-dcgm-exporter-{n}x7kq"


def bare(n: int, gpu: int, alertname: str, **extra: str) -> dict[str, str]:
    return dcgm_labels(FLEET[n], "localhost", gpu, alertname=alertname, **extra)


def k8s(n: int, gpu: int, alertname: str, **extra: str) -> dict[str, str]:
    """GPU Operator's dcgm-exporter by pod IP; an older chart's `Hostname` is the pod's name, the node's
    name is in `kubernetes_node` (relabelling)."""
    labels = k8s_dcgm_labels(f"gpu-node-{n:03d}", f"10.244.{n}.9", gpu, alertname=alertname, **extra)
    pod = POD.format(n=n)
    del labels["node"]
    return {**labels, "Hostname": pod, "pod": pod, "kubernetes_node": f"gpu-node-{n:03d}"}


SHAPES = {"bare-metal": (bare, FLEET), "kubernetes": (k8s, [f"gpu-node-{n:03d}" for n in range(40)])}


@pytest.mark.parametrize("shape", SHAPES)
def test_forty_nodes_saying_localhost_are_forty_nodes_and_an_ecc_error_is_told(shape: str) -> None:
    labels, names = SHAPES[shape]
    sc = Scenario()
    for n in range(40):
        for gpu in range(8):
            sc.fire(labels(n, gpu, "GPUHighTemp", severity="warning"))
    # Xid 13 on every GPU of two nodes, told; then a double-bit ECC error (Xid 48) on a third node
    for n in (1, 2):
        for gpu in range(8):
            sc.fire(labels(n, gpu, "GPUXidError", xid="13", severity="critical"))
    sc.run(2 * MIN)
    assert sc.last is not None
    nodes = {sc.evaluator.label_of(fp, "node") for fp in sc.alerts}
    assert nodes == set(names)
    before = len(sc.messages())
    sc.fire(labels(17, 3, "GPUXidError", xid="48", severity="critical"))
    sc.run(2 * MIN)
    told = [m for m in sc.messages()[before:] if m.reason is NotifyReason.FIRST]
    assert [(m.receiver, m.message.headline) for m in told] == [
        ("oncall-core", f"{names[17]}: GPUXidError on 1/8 GPUs"),
    ]
    headlines = " ".join(m.message.headline for m in sc.messages())
    assert "localhost" not in headlines
    assert "GPUHighTemp on 40 nodes" in headlines

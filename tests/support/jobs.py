"""A GPU cluster's pods as the Prometheus lookup knows them, for the jobs tests."""

from __future__ import annotations

from alertrouter.jobs.pods import Owner, PodIndex, PodKey

__all__ = ["cluster"]


def cluster() -> PodIndex:
    """40 GPU nodes: PyTorchJob ml-train/llm-pretrain on 0-19, Volcano vc/sweep on 20-34, batch eval/nightly on
    35-39, and the dcgm-exporter DaemonSet's pod on every one."""
    on_node: dict[str, tuple[PodKey, ...]] = {}
    owners: dict[PodKey, tuple[Owner, ...]] = {}
    labels: dict[PodKey, dict[str, str]] = {}
    for n in range(40):
        node = f"gpu-node-{n:02d}"
        exporter = ("gpu-operator", f"nvidia-dcgm-exporter-{n:02d}xk2p")
        owners[exporter] = (Owner("DaemonSet", "nvidia-dcgm-exporter", True),)
        if n < 20:
            pod = ("ml-train", f"llm-pretrain-worker-{n}")
            owners[pod] = (Owner("PyTorchJob", "llm-pretrain", True),)
        elif n < 35:
            pod = ("vc", f"sweep-trainer-{n - 20}")
            labels[pod] = {"label_volcano_sh_job_name": "sweep"}
        else:
            pod = ("eval", f"nightly-{n}-bq7zt")
            labels[pod] = {"label_batch_kubernetes_io_job_name": "nightly"}
        on_node[node] = (exporter, pod)
    return PodIndex(owners=owners, labels=labels, on_node=on_node)

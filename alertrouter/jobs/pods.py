"""What the Prometheus lookup knows of pods, for naming the job an alert hits: each pod's owners
(`kube_pod_owner`), its allow-listed labels (`kube_pod_labels`) and the pods on each node (`kube_pod_info`).
Built by `alertrouter.discovery.pods`; read by `jobs.identity`. One immutable snapshot per refresh."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["NO_PODS", "Owner", "PodIndex", "PodKey"]

PodKey = tuple[str, str]  # (namespace, pod)


@dataclass(frozen=True, slots=True, order=True)
class Owner:
    """One of a pod's owner references: `kind` as kube-state-metrics writes `owner_kind` (PyTorchJob, Job,
    ReplicaSet...), `controller` for `owner_is_controller="true"`."""

    kind: str
    name: str
    controller: bool = False


@dataclass(frozen=True, slots=True)
class PodIndex:
    """`owners` and `labels` by (namespace, pod); `on_node`: node -> its pods. `problem`: why the lookup
    could not read the pod series at the last refresh ("" when it could): what it last said stays in
    force (aged like the node names), and readers say the lookup is down."""

    owners: Mapping[PodKey, tuple[Owner, ...]] = field(default_factory=dict)
    labels: Mapping[PodKey, Mapping[str, str]] = field(default_factory=dict)
    on_node: Mapping[str, tuple[PodKey, ...]] = field(default_factory=dict)
    problem: str = ""


NO_PODS = PodIndex()

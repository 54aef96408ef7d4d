"""The job (workload) an alert hits, and which source said so. Pure: the lookup's pods are handed in.

Sources, first that names a job wins:
1. `label`: the alert's own labels, in the configured order: dcgm-exporter's Slurm mapping `hpc_job`, and
   the pod-label forms kube-state-metrics gives `kube_pod_labels` (`label_training_kubeflow_org_job_name`,
   `label_volcano_sh_job_name`, `label_batch_kubernetes_io_job_name`, `label_job_name`), present on an
   alert whose rule joins them in.
2. `lookup`: the alert's workload pod looked up in the Prometheus lookup: its allow-listed labels
   (`kube_pod_labels`, the same names), then its owner when that owner is a job kind (`kube_pod_owner`:
   a PyTorchJob, a batch or Volcano Job...). A pod owned by anything else (a DaemonSet's exporter, a
   Deployment) is no job, and no pod-name rule is tried on it.
3. `pod-name`: the workload pod's name by the controllers' naming: `<job>-<role>-N` (Kubeflow's
   `<job>-worker-3`, `<job>-master-0`; Volcano's `<job>-<task>-N`, a one-word task) and `<job>-<hash>`
   (batch: five characters of Kubernetes' random alphabet, `<job>-<index>-<hash>` for an indexed Job; a
   ReplicaSet's `<name>-<template hash>-<hash>` is no job).

The workload pod is dcgm-exporter's `exported_namespace`/`exported_pod` (the GPU's user under the
Kubernetes mapping), else the alert's own `namespace`/`pod` (kube-state-metrics' pod alerts); the
pod-name rule reads only the former: an alert's own `pod` is often its exporter's (under a
ServiceMonitor, `nvidia-dcgm-exporter-5xk2p`), which looks like a batch Job's pod.

Hostile values: a value longer than `NAME_MAX`, blank, or holding control characters names no job and the
next source is asked (the reason kept in `note`). A pod with two job owners takes the controller, else
the smallest name, and says so. A lookup that is down is not waited for: its last answer is used, the
pod-name rule after it, and `note` says the lookup is down.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from alertrouter.jobs.pods import NO_PODS, Owner, PodIndex, PodKey
from alertrouter.model import NAME_MAX

__all__ = [
    "DEFAULT_ALERT_LABELS",
    "DEFAULT_JOB_KINDS",
    "DEFAULT_POD_LABELS",
    "Job",
    "JobNaming",
    "job_name_problem",
    "job_of",
    "jobs_on_node",
    "pod_name_job",
    "workload_pod",
]

# kube-state-metrics writes a pod label `training.kubeflow.org/job-name` as `label_training_kubeflow_org_job_name`
DEFAULT_POD_LABELS = (
    "label_training_kubeflow_org_job_name",  # Kubeflow training operator
    "label_volcano_sh_job_name",  # Volcano
    "label_batch_kubernetes_io_job_name",  # batch Job, Kubernetes 1.27+
    "label_job_name",  # batch Job, before 1.27
)
DEFAULT_ALERT_LABELS = ("hpc_job", *DEFAULT_POD_LABELS)
# kube_pod_owner's owner_kind of pods that belong to a job (a Volcano Job's kind is `Job` too)
DEFAULT_JOB_KINDS = ("Job", "PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob", "MXJob")

LABEL, LOOKUP, POD_NAME = "label", "lookup", "pod-name"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ROLE = re.compile(r"(?P<job>[a-z0-9][-a-z0-9.]*?)-(?P<role>[a-z][a-z0-9]*)-(?P<n>[0-9]{1,6})")
_HASH = "[bcdfghjklmnpqrstvwxz2456789]"  # k8s.io/apimachinery's rand.String alphabet
_BATCH = re.compile(rf"(?P<job>[a-z0-9][-a-z0-9.]*?)(?:-[0-9]{{1,6}})?-{_HASH}{{5}}")
_REPLICASET = re.compile(rf".*-{_HASH}{{6,10}}-{_HASH}{{5}}")


@dataclass(frozen=True, slots=True)
class JobNaming:
    """How jobs are named (the `jobs:` rules): alert labels in order, the `kube_pod_labels` names read by
    the lookup, the owner kinds that are jobs, and whether the pod-name rule is tried."""

    alert_labels: tuple[str, ...] = DEFAULT_ALERT_LABELS
    pod_labels: tuple[str, ...] = DEFAULT_POD_LABELS
    job_kinds: tuple[str, ...] = DEFAULT_JOB_KINDS
    pod_names: bool = True


@dataclass(frozen=True, slots=True)
class Job:
    """`namespace` "" for a job outside Kubernetes (Slurm's `hpc_job`). `source`: label, lookup or
    pod-name; `detail`: which label, series or rule; `note`: what else was found on the way (a value
    refused, two owners, the lookup down), "" when nothing."""

    namespace: str
    name: str
    source: str
    detail: str
    note: str = ""

    @property
    def key(self) -> str:
        """`ml-train/llm-pretrain`, or `123456` for a job without a namespace."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def job_name_problem(value: str) -> str:
    """Why `value` names no job ("" when it does)."""
    if not value.strip():
        return "empty"
    if len(value) > NAME_MAX:
        return f"{len(value)} characters long"
    if _CONTROL.search(value):
        return "holds control characters"
    return ""


def workload_pod(labels: Mapping[str, str]) -> tuple[PodKey | None, bool]:
    """The pod using the GPU and whether it is dcgm-exporter's mapping (`exported_*`, which the pod-name
    rule may read), or (None, False). A pod or namespace that names nothing (too long...) is none."""
    for ns_label, pod_label, mapped in (("exported_namespace", "exported_pod", True), ("namespace", "pod", False)):
        pod = labels.get(pod_label, "")
        if pod:
            namespace = labels.get(ns_label, "")
            if job_name_problem(pod) or (namespace and job_name_problem(namespace)):
                return None, False
            return (namespace, pod), mapped
    return None, False


def pod_name_job(pod: str) -> tuple[str, str] | None:
    """(job, rule) by the controllers' pod naming, or None."""
    if (m := _ROLE.fullmatch(pod)) is not None:
        return m["job"], "<job>-<role>-N"
    if _REPLICASET.fullmatch(pod) is None and (m := _BATCH.fullmatch(pod)) is not None:
        return m["job"], "<job>-<hash>"
    return None


def _owner(owners: Sequence[Owner], kinds: Sequence[str]) -> tuple[Owner | None, str]:
    """The job owning a pod, and a note when several jobs claim it."""
    jobs = sorted({o for o in owners if o.kind in kinds and not job_name_problem(o.name)}, key=lambda o: o.name)
    if not jobs:
        return None, ""
    names = sorted({o.name for o in jobs})
    if len(names) == 1:
        return jobs[0], ""
    best = next((o for o in jobs if o.controller), jobs[0])
    return best, f"pod claimed by {len(names)} jobs ({', '.join(names[:4])}); {best.name} taken"


def _from_lookup(key: PodKey, naming: JobNaming, pods: PodIndex) -> tuple[Job | None, bool, list[str]]:
    """The job the lookup names for pod `key`, whether the pod is known to be no job, and notes."""
    notes: list[str] = []
    labels = pods.labels.get(key, {})
    for name in naming.pod_labels:
        value = labels.get(name, "")
        if value and not (problem := job_name_problem(value)):
            return Job(key[0], value, LOOKUP, f"kube_pod_labels {name}"), False, notes
        if value:
            notes.append(f"kube_pod_labels {name} {problem}")
    owners = pods.owners.get(key, ())
    owner, note = _owner(owners, naming.job_kinds)
    if owner is not None:
        return Job(key[0], owner.name, LOOKUP, f"kube_pod_owner {owner.kind}", note), False, notes
    return None, bool(owners), notes


def job_of(labels: Mapping[str, str], naming: JobNaming = JobNaming(), pods: PodIndex = NO_PODS) -> Job | None:
    """The job `labels` (an alert's) hit, or None; see the module for the order of the sources."""
    notes: list[str] = []
    key, mapped = workload_pod(labels)
    for name in naming.alert_labels:
        value = labels.get(name, "")
        if value and not (problem := job_name_problem(value)):
            return _noted(Job(key[0] if key else "", value.strip(), LABEL, name), notes)
        if value:
            notes.append(f"label {name} {problem}")
    if key is None:
        return None
    found, not_a_job, more = _from_lookup(key, naming, pods)
    notes += more
    if pods.problem:
        notes.append(f"Prometheus lookup down ({pods.problem}): its last answer used")
    if found is not None:
        return _noted(found, notes)
    if not_a_job or not mapped or not naming.pod_names:
        return None
    by_name = pod_name_job(key[1])
    if by_name is None:
        return None
    return _noted(Job(key[0], by_name[0], POD_NAME, by_name[1]), notes)


def jobs_on_node(node: str, naming: JobNaming = JobNaming(), pods: PodIndex = NO_PODS) -> tuple[Job, ...]:
    """The jobs whose pods run on `node` by the lookup (a NodeDown's jobs), one per job, in key order. The
    pod-name rule is not used: a node runs its DaemonSets' pods, which are named like batch Jobs' pods."""
    found: dict[str, Job] = {}
    for key in pods.on_node.get(node, ()):
        job, _, _ = _from_lookup(key, naming, pods)
        if job is not None:
            found.setdefault(job.key, _noted(job, [f"Prometheus lookup down ({pods.problem})"] if pods.problem else []))
    return tuple(found[k] for k in sorted(found))


def _noted(job: Job, notes: Sequence[str]) -> Job:
    every = [n for n in (job.note, *notes) if n]
    if not every:
        return job
    return Job(job.namespace, job.name, job.source, job.detail, "; ".join(every))

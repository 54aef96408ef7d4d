"""Which jobs the firing alerts hit, one entry per job however many nodes and alerts: a storm over 40 nodes
running 3 jobs is 3 entries. Pure: the alerts, their nodes (as the engine names them) and the lookup's pods
are handed in.

An alert matching `node_down` (NodeDown, KubeNodeNotReady...) hits every job with a pod on its node (by the
lookup: `jobs_on_node`), the node counting as down and its `gpus_per_node` GPUs as lost. Any other alert
hits the job `job_of` names for it, on its node, and loses the GPU it names (its UUID, else node/index),
unless that node is down already (counted once). `since`: the earliest start of the alerts hitting it.

`cause`: hardware when a node is down or an Xid NVIDIA's catalog calls a hardware fault hit it, else
application when an application Xid (13, 31, 43...) did, else "" (an alert naming no Xid, or another kind).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from alertrouter.gpu.alerts import gpu_key
from alertrouter.gpu.xid import from_labels
from alertrouter.jobs.identity import Job, JobNaming, job_of, jobs_on_node
from alertrouter.jobs.pods import PodIndex
from alertrouter.labels import Matcher, matches_all

__all__ = ["APPLICATION", "HARDWARE", "MAX_LISTED", "Hit", "ImpactRules", "JobImpact", "fold", "hits_of", "job_nodes"]

MAX_LISTED = 100  # nodes (and GPUs) listed per job; the counts are whole
HARDWARE, APPLICATION = "hardware", "application"


@dataclass(frozen=True, slots=True)
class ImpactRules:
    naming: JobNaming = field(default_factory=JobNaming)
    node_down: tuple[Matcher, ...] = ()  # an alert matching all of them says its node is down
    gpus_per_node: int = 8


@dataclass(frozen=True, slots=True)
class Hit:
    """One alert hitting one job: on `node` ("" unknown), down or losing `gpu` ("" none named)."""

    job: Job
    node: str
    down: bool
    gpu: str
    starts_at: datetime
    cause: str = ""  # hardware, application or "" (see the module)


@dataclass(frozen=True, slots=True)
class JobImpact:
    """A job hit now. `nodes`: every node where it is hit (the first MAX_LISTED, sorted), `node_count` all of
    them; `nodes_down` likewise; `gpus_lost`: GPUs of down nodes (`gpus_per_node` each) and GPUs named by its
    alerts elsewhere; `job_nodes`: nodes its pods run on by the lookup (0: unknown)."""

    job: Job
    since: datetime
    nodes: tuple[str, ...]
    node_count: int
    nodes_down: tuple[str, ...]
    down_count: int
    gpus_lost: int
    alerts: int
    job_nodes: int = 0
    incidents: tuple[str, ...] = ()  # the keys of the incidents its alerts are in (the first MAX_LISTED, sorted)
    cause: str = ""


def hits_of(
    labels: Mapping[str, str], node: str, starts_at: datetime, rules: ImpactRules, pods: PodIndex
) -> tuple[Hit, ...]:
    """The jobs one firing alert hits."""
    if rules.node_down and node and matches_all(rules.node_down, labels):
        return tuple(Hit(job, node, True, "", starts_at, HARDWARE) for job in jobs_on_node(node, rules.naming, pods))
    job = job_of(labels, rules.naming, pods)
    if job is None:
        return ()
    info = from_labels(labels)
    cause = info.kind if info is not None and info.kind in (HARDWARE, APPLICATION) else ""
    return (Hit(job, node, False, gpu_key(labels, node), starts_at, cause),)


def job_nodes(pods: PodIndex, naming: JobNaming) -> dict[str, int]:
    """job key -> how many nodes its pods run on, by the lookup."""
    found: dict[str, set[str]] = {}
    for node in pods.on_node:
        for job in jobs_on_node(node, naming, pods):
            found.setdefault(job.key, set()).add(node)
    return {key: len(nodes) for key, nodes in found.items()}


_SOURCES = {"label": 0, "lookup": 1, "pod-name": 2}


def _naming_order(job: Job) -> tuple[int, str, str]:
    return _SOURCES.get(job.source, 3), job.detail, job.note


def fold(hits: Iterable[Sequence[Hit]], rules: ImpactRules, sizes: Mapping[str, int]) -> dict[str, JobImpact]:
    """The hits of every firing alert, one `JobImpact` per job key. The best source among its hits names a
    job (a label over the lookup over the pod name), whatever order the alerts come in."""
    jobs: dict[str, Job] = {}
    since: dict[str, datetime] = {}
    nodes: dict[str, set[str]] = {}
    down: dict[str, set[str]] = {}
    gpus: dict[str, set[tuple[str, str]]] = {}
    alerts: dict[str, int] = {}
    causes: dict[str, set[str]] = {}
    for alert in hits:
        for hit in alert:
            key = hit.job.key
            if key not in jobs or _naming_order(hit.job) < _naming_order(jobs[key]):
                jobs[key] = hit.job
            since[key] = min(since.get(key, hit.starts_at), hit.starts_at)
            alerts[key] = alerts.get(key, 0) + 1
            causes.setdefault(key, set()).add(hit.cause)
            if hit.node:
                nodes.setdefault(key, set()).add(hit.node)
            if hit.down:
                down.setdefault(key, set()).add(hit.node)
            elif hit.gpu:
                gpus.setdefault(key, set()).add((hit.node, hit.gpu))
    out = {}
    for key, job in sorted(jobs.items()):
        hit_nodes, down_nodes = sorted(nodes.get(key, ())), sorted(down.get(key, ()))
        lost = {g for n, g in gpus.get(key, ()) if n not in down.get(key, ())}
        out[key] = JobImpact(
            job=job,
            since=since[key],
            nodes=tuple(hit_nodes[:MAX_LISTED]),
            node_count=len(hit_nodes),
            nodes_down=tuple(down_nodes[:MAX_LISTED]),
            down_count=len(down_nodes),
            gpus_lost=len(down_nodes) * rules.gpus_per_node + len(lost),
            alerts=alerts[key],
            job_nodes=sizes.get(key, 0),
            cause=next((c for c in (HARDWARE, APPLICATION) if c in causes[key]), ""),
        )
    return out

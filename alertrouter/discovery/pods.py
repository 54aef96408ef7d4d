"""The pods' side of the lookup, read when the `jobs:` rules are on: which job each pod belongs to and which
pods run on each node, as a `jobs.pods.PodIndex`. Pure parsing and bookkeeping; `prometheus` does the I/O.

The series (label names as kube-state-metrics documents them):
- `kube_pod_owner{namespace, pod, uid, owner_kind, owner_name, owner_is_controller}`: one series per owner
  reference; a pod without one says `owner_kind="<none>"`.
- `kube_pod_labels{namespace, pod, uid, label_...}`: only the labels `--metric-labels-allowlist=pods=[...]`
  allows, a pod label `volcano.sh/job-name` written `label_volcano_sh_job_name`. Only the configured names
  are asked for.
- `kube_pod_info{namespace, pod, node, ...}`: asked again for (namespace, pod, node) alone (the node
  lookup's own query of it drops the namespace).
What a series last said stays in force while Prometheus cannot be read, for `keep_for` after its last
answer, as the node names do (`book`); the index then carries the problem, so readers say so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from alertrouter.jobs.identity import job_name_problem
from alertrouter.jobs.pods import NO_PODS, Owner, PodIndex, PodKey

__all__ = ["POD_SERIES", "PodBook", "labels_of", "on_nodes_of", "owners_of", "pod_query"]

POD_SERIES = ("kube_pod_owner", "kube_pod_labels", "kube_pod_info")
_READS = {
    "kube_pod_owner": ("namespace", "pod", "owner_kind", "owner_name", "owner_is_controller"),
    "kube_pod_info": ("namespace", "pod", "node"),
}


def pod_query(series: str, pod_labels: Sequence[str]) -> str:
    """The instant query reading `series` for the labels used alone (names checked by the config)."""
    names = ("namespace", "pod", *pod_labels) if series == "kube_pod_labels" else _READS[series]
    return f"count by ({', '.join(dict.fromkeys(names))}) ({series})"


def _key(labels: Mapping[str, str]) -> PodKey | None:
    namespace, pod = labels.get("namespace", ""), labels.get("pod", "")
    if job_name_problem(pod) or job_name_problem(namespace):
        return None
    return namespace, pod


def owners_of(label_sets: Iterable[Mapping[str, str]]) -> dict[PodKey, tuple[Owner, ...]]:
    """(namespace, pod) -> its owners, sorted; `<none>` and unusable values are left out."""
    found: dict[PodKey, set[Owner]] = {}
    for labels in label_sets:
        key = _key(labels)
        kind, name = labels.get("owner_kind", ""), labels.get("owner_name", "")
        if key is None or kind in ("", "<none>") or job_name_problem(kind) or job_name_problem(name):
            continue
        found.setdefault(key, set()).add(Owner(kind, name, labels.get("owner_is_controller") == "true"))
    return {key: tuple(sorted(owners)) for key, owners in found.items()}


def labels_of(label_sets: Iterable[Mapping[str, str]], names: Sequence[str]) -> dict[PodKey, dict[str, str]]:
    """(namespace, pod) -> its labels among `names` that hold a value; pods with none are left out. Two
    series for one pod (two kube-state-metrics shards in a rollout) merge, the smaller value winning."""
    found: dict[PodKey, dict[str, str]] = {}
    for labels in label_sets:
        key = _key(labels)
        values = {n: labels[n] for n in names if labels.get(n)}
        if key is None or not values:
            continue
        into = found.setdefault(key, {})
        for name, value in values.items():
            if name not in into or value < into[name]:
                into[name] = value
    return found


def on_nodes_of(label_sets: Iterable[Mapping[str, str]]) -> dict[str, tuple[PodKey, ...]]:
    """node -> its pods, sorted; unscheduled pods (no node) are left out."""
    found: dict[str, set[PodKey]] = {}
    for labels in label_sets:
        key, node = _key(labels), labels.get("node", "")
        if key is not None and node and not job_name_problem(node):
            found.setdefault(node, set()).add(key)
    return {node: tuple(sorted(pods)) for node, pods in found.items()}


class PodBook:
    """The last answer of each pod series, when it came, and the current problem reading them."""

    def __init__(self, keep_for: timedelta) -> None:
        self.keep_for = keep_for
        self._owners: tuple[dict[PodKey, tuple[Owner, ...]], datetime] | None = None
        self._labels: tuple[dict[PodKey, dict[str, str]], datetime] | None = None
        self._on_node: tuple[dict[str, tuple[PodKey, ...]], datetime] | None = None
        self.problems: dict[str, str] = {}  # series -> what went wrong at the last refresh
        self.index: PodIndex = NO_PODS

    def took(self, series: str, label_sets: Sequence[Mapping[str, str]], names: Sequence[str], now: datetime) -> None:
        """A successful answer of `series`."""
        self.problems.pop(series, None)
        if series == "kube_pod_owner":
            self._owners = (owners_of(label_sets), now)
        elif series == "kube_pod_labels":
            self._labels = (labels_of(label_sets, names), now)
        else:
            self._on_node = (on_nodes_of(label_sets), now)

    def failed(self, series: str, problem: str) -> None:
        self.problems[series] = problem

    def resolve(self, now: datetime) -> PodIndex:
        """The index in force: each series' last answer younger than `keep_for`, and the problems."""
        cutoff = now - self.keep_for
        owners = self._owners[0] if self._owners and self._owners[1] > cutoff else {}
        labels = self._labels[0] if self._labels and self._labels[1] > cutoff else {}
        on_node = self._on_node[0] if self._on_node and self._on_node[1] > cutoff else {}
        problem = ", ".join(f"{s}: {p}" for s, p in sorted(self.problems.items()))
        index = PodIndex(owners, labels, on_node, problem)
        if index != self.index:  # the same object while nothing changed: readers compare by identity
            self.index = index
        return self.index

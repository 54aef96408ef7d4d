"""The pods' side of the lookup (`discovery.pods`, read when the `jobs:` rules are on): kube-state-metrics'
`kube_pod_owner`, `kube_pod_labels` and `kube_pod_info` read through a fake Prometheus into a `PodIndex`,
and what stays in force while Prometheus is down."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from alertrouter.discovery.pods import labels_of, on_nodes_of, owners_of, pod_query
from alertrouter.discovery.prometheus import PrometheusLookup
from alertrouter.jobs.identity import DEFAULT_POD_LABELS, job_of, jobs_on_node
from alertrouter.jobs.pods import Owner
from alertrouter.metrics import Metrics
from alertrouter.ruleset.topology import PrometheusLookupConfig
from support.passes import Clock
from support.promql import answer_bytes

JOBS = Path(__file__).resolve().parents[1] / "fixtures" / "prometheus_jobs"
GPU_ALERT = {  # dcgm-exporter under a ServiceMonitor: the GPU's user is exported_pod
    "alertname": "GPUXidError",
    "err_code": "13",
    "exported_namespace": "ml-research",
    "exported_pod": "llama-train-worker-3",
    "hostname": "gpu-node-03",
    "namespace": "gpu-operator",
    "pod": "nvidia-dcgm-exporter-5xk2p",
}


def label_sets(series: str) -> list[dict[str, str]]:
    body: dict[str, Any] = json.loads((JOBS / f"{series}.json").read_text(encoding="utf-8"))
    return [item["metric"] for item in body["data"]["result"]]


def test_owners_leave_out_none_and_keep_every_reference() -> None:
    owners = owners_of(label_sets("kube_pod_owner"))
    assert owners[("ml-research", "llama-train-worker-3")] == (Owner("PyTorchJob", "llama-train", True),)
    assert owners[("eval", "shared-prep-0")] == (Owner("Job", "prep-a"), Owner("Job", "prep-b"))
    assert ("default", "bare-pod") not in owners  # owner_kind="<none>"


def test_labels_keep_only_the_names_asked_for_that_hold_a_value() -> None:
    labels = labels_of(label_sets("kube_pod_labels"), ("label_volcano_sh_job_name", "label_job_name"))
    assert labels == {
        ("vc-jobs", "mnist-vc-trainer-0"): {"label_volcano_sh_job_name": "mnist-vc"},
        ("eval", "nightly-eval-x2k9p"): {"label_job_name": "nightly-eval"},
    }


def test_pods_on_nodes_leave_out_the_unscheduled() -> None:
    on_node = on_nodes_of(label_sets("kube_pod_info"))
    assert on_node["gpu-node-04"] == (
        ("gpu-operator", "nvidia-dcgm-exporter-q4wzr"),
        ("ml-research", "llama-train-worker-4"),
        ("vc-jobs", "mnist-vc-trainer-0"),
    )
    assert all(("eval", "pending-eval-bq7zt") not in pods for pods in on_node.values())


def test_a_4096_character_pod_or_node_is_left_out() -> None:
    long = "p" * 4096
    assert owners_of([{"namespace": "a", "pod": long, "owner_kind": "Job", "owner_name": "j"}]) == {}
    assert owners_of([{"namespace": "a", "pod": "p", "owner_kind": "Job", "owner_name": long}]) == {}
    assert on_nodes_of([{"namespace": "a", "pod": "p", "node": long}]) == {}
    assert labels_of([{"namespace": long, "pod": "p", "label_job_name": "j"}], ("label_job_name",)) == {}


def test_the_queries_ask_for_the_labels_read_alone() -> None:
    assert pod_query("kube_pod_owner", DEFAULT_POD_LABELS) == (
        "count by (namespace, pod, owner_kind, owner_name, owner_is_controller) (kube_pod_owner)"
    )
    assert pod_query("kube_pod_labels", ("label_volcano_sh_job_name",)) == (
        "count by (namespace, pod, label_volcano_sh_job_name) (kube_pod_labels)"
    )
    assert pod_query("kube_pod_info", ()) == "count by (namespace, pod, node) (kube_pod_info)"


class Prometheus:
    """A fake Prometheus over the jobs fixtures; `down` refuses every connection."""

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.down = False

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if self.down:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        query = request.url.params["query"]
        self.queries.append(query)
        return httpx.Response(200, content=answer_bytes(query, JOBS))


def lookup_over(prometheus: Prometheus, clock: Clock, metrics: Metrics | None = None) -> PrometheusLookup:
    config = PrometheusLookupConfig(url="http://prometheus:9090", series=["kube_pod_info"])
    client = httpx.AsyncClient(transport=httpx.MockTransport(prometheus))
    return PrometheusLookup(
        config, keep_for=timedelta(hours=1), client=client, clock=clock, metrics=metrics, pod_labels=DEFAULT_POD_LABELS
    )


async def test_the_lookup_reads_the_pods_and_names_the_jobs() -> None:
    prometheus = Prometheus()
    lookup = lookup_over(prometheus, Clock())
    await lookup.refresh()
    assert prometheus.queries[1:] == [
        "count by (namespace, pod, owner_kind, owner_name, owner_is_controller) (kube_pod_owner)",
        "count by (namespace, pod, label_training_kubeflow_org_job_name, label_volcano_sh_job_name, "
        "label_batch_kubernetes_io_job_name, label_job_name) (kube_pod_labels)",
        "count by (namespace, pod, node) (kube_pod_info)",
    ]
    pods = lookup.pods()
    assert pods.problem == ""
    job = job_of(GPU_ALERT, pods=pods)
    assert job is not None
    assert (job.key, job.source, job.detail) == (
        "ml-research/llama-train",
        "lookup",
        "kube_pod_labels label_training_kubeflow_org_job_name",
    )
    # a NodeDown on gpu-node-04 hits two jobs; the exporter's DaemonSet is none
    assert [j.key for j in jobs_on_node("gpu-node-04", pods=pods)] == ["ml-research/llama-train", "vc-jobs/mnist-vc"]
    shared = job_of({"exported_namespace": "eval", "exported_pod": "shared-prep-0"}, pods=pods)
    assert shared is not None
    assert (shared.name, shared.note) == ("prep-a", "pod claimed by 2 jobs (prep-a, prep-b); prep-a taken")


async def test_without_the_jobs_rules_no_pod_series_is_read() -> None:
    prometheus = Prometheus()
    config = PrometheusLookupConfig(url="http://prometheus:9090", series=["kube_pod_info"])
    client = httpx.AsyncClient(transport=httpx.MockTransport(prometheus))
    await PrometheusLookup(config, keep_for=timedelta(hours=1), client=client, clock=Clock()).refresh()
    assert prometheus.queries == ["count by (node, host_ip, pod_ip, host_network, pod) (kube_pod_info)"]


async def test_a_prometheus_that_is_down_keeps_the_last_answer_says_so_and_lapses() -> None:
    prometheus, clock, metrics = Prometheus(), Clock(), Metrics()
    lookup = lookup_over(prometheus, clock, metrics)
    await lookup.refresh()
    prometheus.down = True
    clock.now += timedelta(minutes=30)
    await lookup.refresh()
    job = job_of(GPU_ALERT, pods=lookup.pods())
    assert job is not None
    assert (job.name, job.source) == ("llama-train", "lookup")
    assert job.note == (
        "Prometheus lookup down (kube_pod_info: unreachable, kube_pod_labels: unreachable, "
        "kube_pod_owner: unreachable): its last answer used"
    )
    sample = metrics.registry.get_sample_value(
        "alertrouter_node_lookup_errors_total", {"series": "kube_pod_owner/pods", "problem": "unreachable"}
    )
    assert sample == 1.0
    clock.now += timedelta(minutes=31)  # an hour after the last answer: the pod-name rule alone
    await lookup.refresh()
    job = job_of(GPU_ALERT, pods=lookup.pods())
    assert job is not None
    assert (job.name, job.source) == ("llama-train", "pod-name")
    assert jobs_on_node("gpu-node-04", pods=lookup.pods()) == ()


async def test_the_index_is_the_same_object_until_the_pods_change_and_the_engine_is_told() -> None:
    prometheus, told = Prometheus(), []
    lookup = lookup_over(prometheus, Clock())
    lookup.on_change = lambda: told.append(True)
    await lookup.refresh()
    first = lookup.pods()
    assert told == [True]
    await lookup.refresh()
    assert lookup.pods() is first
    assert told == [True]
    prometheus.down = True
    await lookup.refresh()  # the same pods, but the lookup down: readers must say so
    assert lookup.pods() is not first
    assert told == [True, True]

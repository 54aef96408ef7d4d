"""The job an alert hits (`jobs.identity`), from real label shapes: dcgm-exporter under a ServiceMonitor and on
bare metal with Slurm's `hpc_job`, Kubeflow, Volcano and batch pods, and hostile values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from alertrouter.jobs.identity import Job, JobNaming, job_of, jobs_on_node, pod_name_job
from alertrouter.jobs.pods import Owner, PodIndex

FIXTURES = Path(__file__).parent.parent / "fixtures" / "gpu"


def servicemonitor_labels() -> dict[str, str]:
    """dcgm-exporter under the GPU Operator's ServiceMonitor: pod/namespace are the exporter's, the GPU's user
    is exported_pod=llama-train-worker-3 in exported_namespace=ml-research."""
    data: dict[str, Any] = json.loads((FIXTURES / "servicemonitor_xid13.json").read_text(encoding="utf-8"))
    labels: dict[str, str] = data["posts"][0]["payload"]["alerts"][0]["labels"]
    return labels


BARE_METAL = {  # dcgm-exporter on a Slurm node with --hpc-job-mapping-dir
    "alertname": "GPUXidError",
    "DCGM_FI_DRIVER_VERSION": "550.127.08",
    "Hostname": "gpu-node-11",
    "UUID": "GPU-3d1e0c1a-5f0b-4c1e-9d3a-1b2c3d4e5f60",
    "device": "nvidia2",
    "gpu": "2",
    "hpc_job": "884213",
    "instance": "10.0.1.11:9400",
    "job": "dcgm",
    "modelName": "NVIDIA A100-SXM4-80GB",
    "err_code": "79",
}
EXPORTER = ("gpu-operator", "nvidia-dcgm-exporter-5xk2p")
WORKER = ("ml-research", "llama-train-worker-3")


def test_servicemonitor_alert_without_lookup_is_named_by_its_pod_name() -> None:
    job = job_of(servicemonitor_labels())
    assert job == Job("ml-research", "llama-train", "pod-name", "<job>-<role>-N")
    assert job is not None
    assert job.key == "ml-research/llama-train"


def test_bare_metal_slurm_job_is_named_by_hpc_job() -> None:
    job = job_of(BARE_METAL)
    assert job == Job("", "884213", "label", "hpc_job")
    assert job is not None
    assert job.key == "884213"


def test_a_joined_pod_label_wins_over_the_lookup_and_takes_the_workloads_namespace() -> None:
    labels = {**servicemonitor_labels(), "label_training_kubeflow_org_job_name": "llama-70b"}
    pods = PodIndex(owners={WORKER: (Owner("PyTorchJob", "other", True),)})
    assert job_of(labels, pods=pods) == Job("ml-research", "llama-70b", "label", "label_training_kubeflow_org_job_name")


def test_the_lookup_names_the_workload_by_its_labels_then_its_owner() -> None:
    labels = servicemonitor_labels()
    by_label = PodIndex(
        labels={WORKER: {"label_training_kubeflow_org_job_name": "llama-70b"}},
        owners={WORKER: (Owner("PyTorchJob", "llama-70b-b", True),)},
    )
    assert job_of(labels, pods=by_label) == Job(
        "ml-research", "llama-70b", "lookup", "kube_pod_labels label_training_kubeflow_org_job_name"
    )
    by_owner = PodIndex(owners={WORKER: (Owner("PyTorchJob", "llama-70b-b", True),)})
    assert job_of(labels, pods=by_owner) == Job("ml-research", "llama-70b-b", "lookup", "kube_pod_owner PyTorchJob")


def test_a_pod_owned_by_no_job_is_no_job_whatever_its_name() -> None:
    # kube-state-metrics' pod alert on the exporter itself: a DaemonSet pod named like a batch Job's pod
    labels = {"alertname": "KubePodCrashLooping", "namespace": EXPORTER[0], "pod": EXPORTER[1]}
    pods = PodIndex(owners={EXPORTER: (Owner("DaemonSet", "nvidia-dcgm-exporter", True),)})
    assert job_of(labels, pods=pods) is None
    assert job_of(labels) is None  # the pod-name rule reads only dcgm-exporter's mapping


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        ("llama-train-worker-3", ("llama-train", "<job>-<role>-N")),  # Kubeflow
        ("llama-train-master-0", ("llama-train", "<job>-<role>-N")),
        ("resnet-dist-ps-12", ("resnet-dist", "<job>-<role>-N")),
        ("mnist-vc-trainer-7", ("mnist-vc", "<job>-<role>-N")),  # Volcano <job>-<task>-N
        ("nightly-eval-x2k9p", ("nightly-eval", "<job>-<hash>")),  # batch
        ("shard-sweep-3-bq7zt", ("shard-sweep", "<job>-<hash>")),  # indexed batch Job
        ("inference-7d9c5b8f64-x2k9p", None),  # a Deployment's pod
        ("inference-0", None),  # a StatefulSet's pod
        ("train", None),
        ("UPPER-worker-0", None),
    ],
)
def test_pod_name_rule(pod: str, want: tuple[str, str] | None) -> None:
    assert pod_name_job(pod) == want


def test_a_4096_character_label_is_refused_and_the_next_source_asked() -> None:
    labels = {**servicemonitor_labels(), "hpc_job": "j" * 4096}
    job = job_of(labels)
    assert job is not None
    assert (job.key, job.source) == ("ml-research/llama-train", "pod-name")
    assert job.note == "label hpc_job 4096 characters long"


@pytest.mark.parametrize("value", ["", "   ", "a\nb", "x\x00"])
def test_an_empty_or_control_label_names_no_job(value: str) -> None:
    assert job_of({**BARE_METAL, "hpc_job": value}) is None


def test_a_4096_character_pod_names_no_job() -> None:
    assert job_of({**servicemonitor_labels(), "exported_pod": "p" * 4096 + "-worker-0"}) is None


def test_a_pod_claimed_by_two_jobs_takes_the_controller_and_says_so() -> None:
    pods = PodIndex(owners={WORKER: (Owner("PyTorchJob", "b-job"), Owner("PyTorchJob", "a-job", False))})
    job = job_of(servicemonitor_labels(), pods=pods)
    assert job is not None
    assert job.name == "a-job"
    assert job.note == "pod claimed by 2 jobs (a-job, b-job); a-job taken"
    pods = PodIndex(owners={WORKER: (Owner("PyTorchJob", "b-job", True), Owner("MPIJob", "a-job"))})
    job = job_of(servicemonitor_labels(), pods=pods)
    assert job is not None
    assert (job.name, job.detail) == ("b-job", "kube_pod_owner PyTorchJob")
    assert job.note == "pod claimed by 2 jobs (a-job, b-job); b-job taken"


def test_a_lookup_that_is_down_falls_back_and_says_so() -> None:
    job = job_of(servicemonitor_labels(), pods=PodIndex(problem="unreachable"))
    assert job is not None
    assert (job.name, job.source) == ("llama-train", "pod-name")
    assert job.note == "Prometheus lookup down (unreachable): its last answer used"


def test_the_pod_name_rule_can_be_turned_off() -> None:
    assert job_of(servicemonitor_labels(), JobNaming(pod_names=False)) is None


def test_a_node_lists_the_jobs_of_its_pods_once_each_never_by_pod_name() -> None:
    pods = PodIndex(
        on_node={"gpu-node-03": (EXPORTER, WORKER, ("ml-research", "llama-train-worker-4"), ("batch", "x-abcde"))},
        owners={
            EXPORTER: (Owner("DaemonSet", "nvidia-dcgm-exporter", True),),
            WORKER: (Owner("PyTorchJob", "llama-train", True),),
            ("ml-research", "llama-train-worker-4"): (Owner("PyTorchJob", "llama-train", True),),
        },
        labels={("batch", "x-abcde"): {"label_batch_kubernetes_io_job_name": "x"}},
    )
    found = jobs_on_node("gpu-node-03", pods=pods)
    assert [(j.key, j.detail) for j in found] == [
        ("batch/x", "kube_pod_labels label_batch_kubernetes_io_job_name"),
        ("ml-research/llama-train", "kube_pod_owner PyTorchJob"),
    ]
    assert jobs_on_node("gpu-node-99", pods=pods) == ()

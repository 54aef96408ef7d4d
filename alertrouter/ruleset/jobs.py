"""The `jobs:` section: how the job an alert hits is named (`alertrouter.jobs.identity`) and who is told of
a job hit (a namespace -> receiver table). Without the section there are no job views nor job messages.

    jobs:
      labels: [hpc_job, label_training_kubeflow_org_job_name]   # alert labels naming the job, in order
      pod_labels: [label_training_kubeflow_org_job_name]        # kube_pod_labels names the lookup reads
      job_kinds: [Job, PyTorchJob]                               # kube_pod_owner kinds that are jobs
      pod_names: true                                            # the pod-name rule, last
      node_down: ['alertname=~"NodeDown|KubeNodeNotReady"']      # these hit every job on their node
      gpus_per_node: 8                                           # GPUs lost with each node down
      namespaces:                                                # a job's namespace -> its owner's receiver
        ml-train: ml-train-oncall
      default_receiver: ml-platform                              # other namespaces (none: no job message)
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from pydantic import Field, field_validator

from alertrouter.jobs.identity import DEFAULT_ALERT_LABELS, DEFAULT_JOB_KINDS, DEFAULT_POD_LABELS, JobNaming
from alertrouter.jobs.impact import ImpactRules
from alertrouter.jobs.routes import JobRoutes
from alertrouter.labels import parse_matchers
from alertrouter.ruleset.base import Matchers, Name, Section

__all__ = ["DEFAULT_NODE_DOWN", "JobsConfig", "check_jobs", "impact_rules", "job_naming", "job_routes"]

# The node-level "down" alerts of rules/prometheus/node.rules.yml and kube-prometheus-stack
DEFAULT_NODE_DOWN = 'alertname=~"NodeDown|NodeNotReady|KubeNodeNotReady|KubeNodeUnreachable"'

_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")  # a Kubernetes namespace (DNS-1123 label)
_KIND = re.compile(r"[A-Z][A-Za-z0-9]{0,62}")

Problem = tuple[str, int | None, str, str]  # section, item index, path below it, message (as check_oncall)


def _label_names(value: list[str], prefix: str = "") -> list[str]:
    for name in value:
        if not _LABEL_NAME.fullmatch(name):
            raise ValueError(f"{name[:80]!r} is not a Prometheus label name")
        if prefix and not name.startswith(prefix):
            raise ValueError(f"{name!r}: kube_pod_labels names start with {prefix!r} (label_volcano_sh_job_name)")
    return list(dict.fromkeys(value))


class JobsConfig(Section):
    """See the module docstring; the defaults are `jobs.identity`'s."""

    labels: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ALERT_LABELS),
        description="Alert labels naming the job, first present wins",
    )
    pod_labels: list[str] = Field(
        default_factory=lambda: list(DEFAULT_POD_LABELS),
        description="kube_pod_labels label names naming a pod's job (as allowed by --metric-labels-allowlist)",
    )
    job_kinds: list[str] = Field(
        default_factory=lambda: list(DEFAULT_JOB_KINDS), description="kube_pod_owner kinds that are jobs"
    )
    pod_names: bool = Field(True, description="Name a GPU's pod's job by the controllers' pod naming, last")
    node_down: Matchers = Field(
        default_factory=lambda: parse_matchers(DEFAULT_NODE_DOWN),
        description="Alerts saying their node is down: they hit every job with a pod on the node (by the lookup)",
    )
    gpus_per_node: int = Field(8, ge=0, le=1024, description="GPUs counted lost with each node down")
    namespaces: dict[str, Name] = Field(
        default_factory=dict, description="A job's namespace -> the receiver told of it"
    )
    default_receiver: Name | None = Field(None, description="Told of jobs in other namespaces; none: no job message")
    severity: Name = Field("critical", description="The severity of job messages (as the receivers' channels read it)")

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: list[str]) -> list[str]:
        return _label_names(value)

    @field_validator("pod_labels")
    @classmethod
    def _pod_labels(cls, value: list[str]) -> list[str]:
        return _label_names(value, "label_")

    @field_validator("job_kinds")
    @classmethod
    def _kinds(cls, value: list[str]) -> list[str]:
        for kind in value:
            if not _KIND.fullmatch(kind):
                raise ValueError(f"{kind[:80]!r} is not a Kubernetes kind (PyTorchJob)")
        return list(dict.fromkeys(value))

    @field_validator("namespaces")
    @classmethod
    def _namespaces(cls, value: dict[str, str]) -> dict[str, str]:
        for namespace in value:
            if not _NAMESPACE.fullmatch(namespace):
                raise ValueError(f"{namespace[:80]!r} is not a Kubernetes namespace (lower-case, up to 63 characters)")
        return value


def job_naming(config: JobsConfig) -> JobNaming:
    return JobNaming(tuple(config.labels), tuple(config.pod_labels), tuple(config.job_kinds), config.pod_names)


def impact_rules(config: JobsConfig) -> ImpactRules:
    return ImpactRules(job_naming(config), tuple(config.node_down), config.gpus_per_node)


def job_routes(config: JobsConfig) -> JobRoutes:
    return JobRoutes(dict(config.namespaces), config.default_receiver, config.severity)


def check_jobs(config: JobsConfig | None, receivers: Collection[str], severities: Sequence[str]) -> list[Problem]:
    """The receivers the section names are defined, and its severity is one of `global.severities`."""
    if config is None:
        return []
    listed = ", ".join(sorted(receivers)) or "none defined in receivers"
    out: list[Problem] = [
        ("jobs", None, f".namespaces.{namespace}", f"undefined receiver {receiver!r} (known: {listed})")
        for namespace, receiver in config.namespaces.items()
        if receiver not in receivers
    ]
    if config.default_receiver is not None and config.default_receiver not in receivers:
        out.append(
            ("jobs", None, ".default_receiver", f"undefined receiver {config.default_receiver!r} (known: {listed})")
        )
    if config.severity not in severities:
        out.append(
            (
                "jobs",
                None,
                ".severity",
                f"{config.severity!r} is not one of global.severities ({', '.join(severities)})",
            )
        )
    return out

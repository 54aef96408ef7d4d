"""A clock-driven harness for engine scenarios: alerts change over time, passes run every few seconds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from alertrouter.fingerprints import fingerprint
from alertrouter.pipeline import aliases
from alertrouter.pipeline.evaluate import Evaluator
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.silence import Silence
from alertrouter.pipeline.types import EvalResult, IncidentRecord, Intent, LiveAlert, next_records
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules

REPO = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)


def shipped_pipeline() -> CompiledRules:
    return compile_rules(load_ruleset(REPO / "rules", {}))


def gpu_labels(
    node: str, gpu: int, alertname: str = "GPUHighTemp", severity: str = "warning", **extra: str
) -> dict[str, str]:
    return {
        "alertname": alertname,
        "Hostname": node,
        "instance": f"{node}:9400",
        "gpu": str(gpu),
        "UUID": f"GPU-{node}-{gpu}",
        "job": "dcgm",
        "severity": severity,
        **extra,
    }


def node_down_labels(node: str, **extra: str) -> dict[str, str]:
    return {"alertname": "NodeDown", "instance": f"{node}:9100", "job": "node", "severity": "critical", **extra}


def dcgm_labels(ip: str, hostname: str, gpu: int, alertname: str = "GPUXidError", **extra: str) -> dict[str, str]:
    """A bare-metal dcgm-exporter alert as Prometheus sends it: scraped by IP on :9400, the node's name
    only in `Hostname`."""
    return {
        "alertname": alertname,
        "instance": f"{ip}:9400",
        "job": "dcgm-exporter",
        "Hostname": hostname,
        "gpu": str(gpu),
        "UUID": f"GPU-{hostname}-{gpu}",
        "device": f"nvidia{gpu}",
        "modelName": "NVIDIA H100 80GB HBM3",
        "pci_bus_id": f"00000000:{0x18 + gpu:02X}:00.0",
        "DCGM_FI_DRIVER_VERSION": "550.54.15",
        "severity": "critical",
        **extra,
    }


def node_exporter_down_labels(ip: str, **extra: str) -> dict[str, str]:
    """`up{job="node"} == 0` from node-exporter scraped by IP: no name of the node anywhere."""
    return {"alertname": "NodeDown", "instance": f"{ip}:9100", "job": "node", "severity": "critical", **extra}


@dataclass
class Scenario:
    pipeline: CompiledRules = field(default_factory=shipped_pipeline)
    now: datetime = T0
    alerts: dict[str, LiveAlert] = field(default_factory=dict)
    records: dict[str, IncidentRecord] = field(default_factory=dict)
    sent: list[tuple[datetime, Intent]] = field(default_factory=list)
    last: EvalResult | None = None
    # Learned aliases, as the engine keeps them in the store (address -> row).
    book: dict[str, aliases.LearnedAlias] = field(default_factory=dict)
    silences: list[Silence] = field(default_factory=list)  # in force on every pass

    def __post_init__(self) -> None:
        self.evaluator = Evaluator(self.pipeline)

    def fire(self, labels: Mapping[str, str]) -> str:
        fp = fingerprint(labels)
        old = self.alerts.get(fp)
        still = old is not None and old.firing
        fired_at = old.fired_at if old is not None and still else self.now
        # As Prometheus: a firing alert keeps its startsAt; a new episode starts now.
        starts_at = old.starts_at if old is not None and still else self.now
        self.alerts[fp] = LiveAlert(fp, dict(labels), True, starts_at, fired_at)
        return fp

    def resolve(self, labels: Mapping[str, str]) -> str:
        fp = fingerprint(labels)
        old = self.alerts[fp]
        # Alertmanager's resolved alert: endsAt is when it resolved.
        self.alerts[fp] = LiveAlert(fp, old.labels, False, old.starts_at, old.fired_at, self.now)
        return fp

    def step(self) -> EvalResult:
        """One engine pass: learn from the live alerts' claims, then evaluate with the aliases in force."""
        nodes = self.pipeline.nodes
        seen = [s for a in self.alerts.values() if (s := aliases.sighting(nodes, a)) is not None]
        refresh = aliases.refresh_every(nodes.learned_ttl)
        ttl = nodes.learned_ttl
        # every claim is in `seen`, so every address of the book is looked at (a held move let go)
        for row in aliases.learn(self.book, seen, now=self.now, refresh=refresh, ttl=ttl, addresses=list(self.book)):
            self.book[row.address] = row
        learned = aliases.active(self.book, now=self.now, ttl=nodes.learned_ttl)
        alerts = list(self.alerts.values())
        self.last = self.evaluator.evaluate(alerts, self.records, now=self.now, learned=learned, silences=self.silences)
        self.records = next_records(self.records, self.last)
        self.sent.extend((self.now, intent) for intent in self.last.intents)
        return self.last

    def run(self, duration: timedelta, every: timedelta = timedelta(seconds=5)) -> None:
        end = self.now + duration
        while self.now < end:
            self.step()
            self.now += every
        self.step()

    def restart(self) -> None:
        """A new process: the evaluator (and its in-memory inhibitor) is rebuilt from the store's records."""
        self.evaluator = Evaluator(self.pipeline)

    def messages(self, receiver: str | None = None) -> list[Intent]:
        return [i for _, i in self.sent if receiver is None or i.receiver == receiver]


# Kubernetes (kube-prometheus-stack + NVIDIA GPU Operator), labels from /work/shared/reference/gpu-alerts.md:
# dcgm-exporter off the host network is scraped by its pod IP, `Hostname` is the node's name (the operator
# injects NODE_NAME); node-exporter on the host network is scraped by the node IP. With docs/en/node-identity.md's
# relabelling (`__meta_kubernetes_pod_node_name` -> `node`), both carry `node`.
PROMETHEUS = "monitoring/kube-prometheus-stack-prometheus"


def k8s_dcgm_labels(
    node: str, pod_ip: str, gpu: int, alertname: str = "GPUHighTemp", severity: str = "warning", **extra: str
) -> dict[str, str]:
    return {
        "alertname": alertname,
        "instance": f"{pod_ip}:9400",
        "job": "nvidia-dcgm-exporter",
        "namespace": "gpu-operator",
        "pod": f"nvidia-dcgm-exporter-{node[-2:]}x7kq",
        "container": "nvidia-dcgm-exporter",
        "service": "nvidia-dcgm-exporter",
        "endpoint": "gpu-metrics",
        "Hostname": node,
        "node": node,
        "gpu": str(gpu),
        "UUID": f"GPU-{node}-{gpu}",
        "device": f"nvidia{gpu}",
        "modelName": "NVIDIA H100 80GB HBM3",
        "pci_bus_id": f"00000000:{0x18 + gpu:02X}:00.0",
        "prometheus": PROMETHEUS,
        "severity": severity,
        **extra,
    }


def k8s_node_down_labels(node: str, node_ip: str, **extra: str) -> dict[str, str]:
    """The shipped NodeDown (`up{job="node-exporter"} == 0`, for: 1m) of a node-exporter pod, relabelled."""
    return {
        "alertname": "NodeDown",
        "instance": f"{node_ip}:9100",
        "job": "node-exporter",
        "namespace": "monitoring",
        "pod": f"kube-prometheus-stack-prometheus-node-exporter-{node[-2:]}m4h",
        "container": "node-exporter",
        "service": "kube-prometheus-stack-prometheus-node-exporter",
        "endpoint": "http-metrics",
        "node": node,
        "prometheus": PROMETHEUS,
        "severity": "critical",
        **extra,
    }


def kube_node_not_ready_labels(node: str, **extra: str) -> dict[str, str]:
    """kube-prometheus-stack's KubeNodeNotReady (kube-state-metrics, `for: 15m`): the node only in `node`."""
    return {
        "alertname": "KubeNodeNotReady",
        "condition": "Ready",
        "status": "true",
        "node": node,
        "instance": "10.244.1.5:8080",
        "job": "kube-state-metrics",
        "namespace": "monitoring",
        "pod": "kube-prometheus-stack-kube-state-metrics-6d9f8",
        "container": "kube-state-metrics",
        "service": "kube-prometheus-stack-kube-state-metrics",
        "endpoint": "http",
        "prometheus": PROMETHEUS,
        "severity": "warning",
        **extra,
    }

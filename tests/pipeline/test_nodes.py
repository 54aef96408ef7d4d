"""Node identity: the dcgm-exporter / node-exporter trap from gpu-alerts.md, and topology enrichment."""

from __future__ import annotations

import pytest

from alertrouter.pipeline.nodes import NodeIdentity, strip_port

NODE_EXPORTER = {"alertname": "NodeDown", "instance": "10.0.0.7:9100", "job": "node"}
DCGM = {"alertname": "GPUHighTemp", "instance": "10.0.0.7:9400", "Hostname": "gpu-node-07", "gpu": "3"}
DCGM_NEW = {"alertname": "GPUHighTemp", "instance": "10.244.3.17:9400", "hostname": "gpu-node-07", "gpu": "3"}
K8S = {"alertname": "GPUHighTemp", "instance": "10.244.3.17:9400", "kubernetes_node": "gpu-node-07"}


@pytest.mark.parametrize(
    ("value", "host"),
    [
        ("10.0.0.7:9100", "10.0.0.7"),
        ("gpu-node-07:9400", "gpu-node-07"),
        ("gpu-node-07", "gpu-node-07"),
        ("[fe80::1]:9100", "fe80::1"),
        ("fe80::1", "fe80::1"),
        ("host:notaport", "host:notaport"),
    ],
)
def test_strip_port(value: str, host: str) -> None:
    assert strip_port(value) == host


@pytest.mark.parametrize(
    ("labels", "node"),
    [
        (NODE_EXPORTER, "10.0.0.7"),
        (DCGM, "gpu-node-07"),  # Hostname beats instance
        (DCGM_NEW, "gpu-node-07"),  # the lowercase spelling of newer dcgm-exporters
        (K8S, "gpu-node-07"),  # pod IP instance, node from Kubernetes mapping
        ({"alertname": "X", "node": "n1", "Hostname": "h1"}, "n1"),
        ({"alertname": "X", "Hostname": ""}, None),  # empty is absent
        ({"alertname": "ClusterWide"}, None),
    ],
)
def test_node_of_default_order(labels: dict[str, str], node: str | None) -> None:
    assert NodeIdentity().node_of(labels) == node


def test_aliases_unify_ip_and_hostname() -> None:
    ident = NodeIdentity(aliases={"10.0.0.7": "gpu-node-07"})
    assert ident.node_of(NODE_EXPORTER) == ident.node_of(DCGM) == "gpu-node-07"


def test_configured_order_wins() -> None:
    ident = NodeIdentity(sources=("instance", "Hostname"))
    assert ident.node_of(DCGM) == "10.0.0.7"


def test_enrich_adds_node_and_missing_topology_only() -> None:
    ident = NodeIdentity(topology={"gpu-node-07": {"rack": "r12", "region": "north"}})
    labels = ident.enrich({**DCGM, "region": "south"})
    assert labels["node"] == "gpu-node-07"
    assert labels["rack"] == "r12"
    assert labels["region"] == "south"  # the alert's own label wins over the mapping
    assert DCGM.get("node") is None  # input untouched


def test_enrich_without_node_changes_nothing() -> None:
    labels = {"alertname": "ClusterWide"}
    assert NodeIdentity(topology={"x": {"rack": "r1"}}).enrich(labels) == labels

"""Node identity: the dcgm-exporter / node-exporter trap from gpu-alerts.md, and topology enrichment."""

from __future__ import annotations

import pytest

from alertrouter.pipeline.nodes import NodeClaim, NodeIdentity, address_of, node_claim, strip_port

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


# Claims, from the label shapes of gpu-alerts.md ("Label shapes in the wild").
BARE_DCGM_OLD = {"alertname": "GPUXidError", "instance": "10.0.0.100:9400", "job": "dcgm", "Hostname": "gpu-node-100"}
BARE_DCGM_NEW = {"alertname": "GPUXidError", "instance": "10.0.0.100:9400", "job": "dcgm", "hostname": "gpu-node-100"}
K8S_DCGM = {  # GPU Operator: scraped by pod IP, Hostname is the Kubernetes node (NODE_NAME)
    "alertname": "GPUXidError",
    "instance": "10.244.3.17:9400",
    "job": "nvidia-dcgm-exporter",
    "namespace": "gpu-operator",
    "pod": "nvidia-dcgm-exporter-7x2kq",
    "Hostname": "gpu-node-07",
}
K8S_NODE_EXPORTER = {  # hostNetwork: the node IP, and no node name
    "alertname": "NodeDown",
    "instance": "10.0.0.7:9100",
    "job": "node-exporter",
    "namespace": "monitoring",
    "pod": "node-exporter-5bq8d",
    "service": "kube-prometheus-stack-prometheus-node-exporter",
}
KUBELET = {  # kube-prometheus: kubelet endpoints carry the node's name and its IP
    "alertname": "KubeletInstanceUnreachable",
    "instance": "10.0.0.7:10250",
    "job": "kubelet",
    "node": "gpu-node-07",
    "namespace": "kube-system",
}


@pytest.mark.parametrize(
    ("labels", "claim"),
    [
        (BARE_DCGM_OLD, NodeClaim("10.0.0.100", "gpu-node-100")),
        (BARE_DCGM_NEW, NodeClaim("10.0.0.100", "gpu-node-100")),
        ({**BARE_DCGM_NEW, "instance": "[fe80::1]:9400"}, NodeClaim("fe80::1", "gpu-node-100")),
        ({**BARE_DCGM_NEW, "instance": "[FE80:0:0::1]:9400"}, NodeClaim("fe80::1", "gpu-node-100")),  # one spelling
        (KUBELET, NodeClaim("10.0.0.7", "gpu-node-07")),
        ({"alertname": "NodeOOM", "instance": "10.0.0.9:9100", "nodename": "n9"}, NodeClaim("10.0.0.9", "n9")),
        ({"alertname": "X", "instance": "10.0.0.9:9100", "kubernetes_node": "n9"}, NodeClaim("10.0.0.9", "n9")),
        ({**BARE_DCGM_NEW, "instance": "gpu-node-100:9400"}, None),  # scraped by name: no address to learn
        (K8S_DCGM, None),  # a pod IP is not the node's address
        (K8S_NODE_EXPORTER, None),  # the node IP, but no name
        ({**BARE_DCGM_OLD, "Hostname": "10.0.0.100"}, None),  # an IP in Hostname names nothing
        ({**BARE_DCGM_OLD, "Hostname": "localhost"}, None),  # remote nv-hostengine: every node says so
        ({**BARE_DCGM_OLD, "Hostname": "3f4e2a1b9c0d"}, None),  # docker run: the container id
        ({**BARE_DCGM_OLD, "Hostname": ""}, None),
        ({"alertname": "NodeDown", "instance": "10.0.0.100:9100", "job": "node"}, None),
    ],
)
def test_node_claim(labels: dict[str, str], claim: NodeClaim | None) -> None:
    assert node_claim(labels) == claim


def test_claim_names_the_node_as_the_configured_order_does() -> None:
    labels = {**BARE_DCGM_OLD, "node": "rack12-slot3"}  # relabelled at scrape time, and Hostname too
    assert NodeIdentity().claim(labels) == NodeClaim("10.0.0.100", "rack12-slot3")
    assert NodeIdentity(sources=("Hostname", "node", "instance")).claim(labels) == NodeClaim(
        "10.0.0.100", "gpu-node-100"
    )


@pytest.mark.parametrize(
    ("value", "address"),
    [("10.0.0.7:9100", "10.0.0.7"), ("[fe80::1]:9100", "fe80::1"), ("fe80::1", "fe80::1"), ("gpu-node-07:9100", None)],
)
def test_address_of(value: str, address: str | None) -> None:
    assert address_of(value) == address


def test_learned_aliases_name_an_ip_instance_and_configured_ones_win() -> None:
    learned = NodeIdentity(learned={"10.0.0.7": "gpu-node-07", "fe80::7": "gpu-node-07"})
    assert learned.node_of(NODE_EXPORTER) == "gpu-node-07"
    assert learned.node_of({**NODE_EXPORTER, "instance": "[FE80:0::7]:9100"}) == "gpu-node-07"  # any spelling
    assert learned.node_of({**NODE_EXPORTER, "instance": "10.0.0.8:9100"}) == "10.0.0.8"  # not learned
    both = NodeIdentity(aliases={"10.0.0.7": "gpu07"}, learned={"10.0.0.7": "gpu-node-07"})
    assert both.node_of(NODE_EXPORTER) == "gpu07"
    # a learned name that is itself configured as another name of a node ends at the configured one
    chained = NodeIdentity(aliases={"gpu-node-07.dc1": "gpu-node-07"}, learned={"10.0.0.7": "gpu-node-07.dc1"})
    assert chained.node_of(NODE_EXPORTER) == "gpu-node-07"

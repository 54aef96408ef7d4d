"""A node is never a placeholder: `Hostname="localhost"` (dcgm-exporter talking to a remote nv-hostengine),
a container id (a plain `docker run`), a loopback address or a pod's name never becomes a node key; the
next source names the node, and `named` says which one did (`node_source`)."""

from __future__ import annotations

import pytest

from alertrouter.pipeline.nodes import Discovered, NodeIdentity, unnamed
from support.scenario import dcgm_labels, k8s_dcgm_labels

CONTAINER = "3f4e8a9b2c1d"
CONTAINER_64 = "3f4e8a9b2c1d" + "0" * 52
BARE = dcgm_labels("10.0.0.7", "localhost", 3)
POD = "nvidia-dcgm-exporter-8x7kq"
# Older GPU Operator charts: `Hostname` is the pod's name; relabelling added the node's name.
K8S_OLD = {**k8s_dcgm_labels("gpu-node-07", "10.244.3.17", 3), "Hostname": POD, "pod": POD}
K8S_OLD_KN = {k: v for k, v in K8S_OLD.items() if k != "node"} | {"kubernetes_node": "gpu-node-07"}


@pytest.mark.parametrize(
    ("labels", "named"),
    [
        (BARE, ("10.0.0.7", "instance")),
        ({**BARE, "Hostname": "LOCALHOST.localdomain"}, ("10.0.0.7", "instance")),
        ({**BARE, "Hostname": CONTAINER}, ("10.0.0.7", "instance")),
        ({**BARE, "Hostname": CONTAINER_64}, ("10.0.0.7", "instance")),
        ({**BARE, "Hostname": "127.0.1.1"}, ("10.0.0.7", "instance")),
        ({**BARE, "Hostname": "::1"}, ("10.0.0.7", "instance")),
        ({**BARE, "Hostname": "0.0.0.0"}, ("10.0.0.7", "instance")),
        ({**BARE, "Hostname": "::"}, ("10.0.0.7", "instance")),
        ({**BARE, "Hostname": "", "hostname": "localhost"}, ("10.0.0.7", "instance")),
        ({**BARE, "Hostname": "gpu-node-07"}, ("gpu-node-07", "label:Hostname")),
        ({**BARE, "instance": "127.0.0.1:9400"}, None),  # nothing can name it: no node, not "127.0.0.1"
        ({**BARE, "instance": "[::1]:9400"}, None),
        ({**BARE, "instance": "localhost:9400"}, None),
        (K8S_OLD, ("gpu-node-07", "label:node")),
        (K8S_OLD_KN, ("gpu-node-07", "label:kubernetes_node")),  # the pod's name is passed over
        ({k: v for k, v in K8S_OLD_KN.items() if k != "kubernetes_node"}, (POD, "label:Hostname")),  # nothing better
    ],
)
def test_placeholders_never_name_a_node(labels: dict[str, str], named: tuple[str, str] | None) -> None:
    identity = NodeIdentity()
    assert identity.named(labels) == named
    assert identity.node_of(labels) == (named[0] if named else None)
    assert identity.enrich(labels).get("node") == (named[0] if named else None)


def test_the_next_source_decides_aliases_then_the_lookup_then_learning() -> None:
    configured = NodeIdentity(aliases={"10.0.0.7": "gpu-node-07"}, learned={"10.0.0.7": "gpu-node-70"})
    assert configured.named(BARE) == ("gpu-node-07", "configured")
    learned = NodeIdentity(learned={"10.0.0.7": "gpu-node-07"})
    assert learned.named(BARE) == ("gpu-node-07", "learned")
    assert learned.address(BARE) == "10.0.0.7"  # a learned alias changing renames it
    found = Discovered(names={"10.0.0.7": "gpu-node-07"})
    assert NodeIdentity(discovered=found).named(BARE) == ("gpu-node-07", "prometheus")
    assert NodeIdentity().key(BARE) == "10.0.0.7"  # a discovered change on the address renames it
    # the pod's name is looked up (kube_pod_info maps it), and a mapped pod IP beats the pod's name
    pods = NodeIdentity(discovered=Discovered(names={POD: "gpu-node-07"}))
    no_node = {k: v for k, v in K8S_OLD_KN.items() if k != "kubernetes_node"}
    assert pods.named(no_node) == ("gpu-node-07", "prometheus")
    by_ip = NodeIdentity(discovered=Discovered(names={"10.244.3.17": "gpu-node-07"}))
    assert by_ip.named(no_node) == ("gpu-node-07", "prometheus")


def test_a_localhost_alias_is_not_consulted() -> None:
    """An alias written for `localhost` would name every node of the fleet one machine."""
    identity = NodeIdentity(aliases={"localhost": "gpu-node-01"})
    assert identity.named(BARE) == ("10.0.0.7", "instance")


@pytest.mark.parametrize(
    ("value", "placeholder"),
    [
        ("localhost", True),
        ("", True),
        ("127.0.0.1", True),
        ("0.0.0.0", True),
        ("::", True),
        (CONTAINER, True),
        ("gpu-node-07", False),
        ("10.0.0.7", False),
        ("3f4e8a9b2c1", False),  # 11 hex digits: not a container id
        ("dgx-a100-0a1b2c3d4e5f", False),
    ],
)
def test_unnamed(value: str, placeholder: bool) -> None:
    assert unnamed(value) is placeholder

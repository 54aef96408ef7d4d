"""Node identity: one name for a machine across exporters, plus topology labels from a mapping.

node-exporter says `instance="10.0.0.7:9100"`, dcgm-exporter `instance="10.0.0.7:9400"` and
`Hostname="gpu-node-07"`; `equal: [instance]` never matches across them. The node key is the first
of a configurable list of labels that can name a node (`instance` losing its port; never `localhost`,
a container id or a loopback address, which many nodes say alike) and is exposed to every later
stage as a label, so inhibition (`equal: [node]`), aggregation and routing all see the same node.

An address is mapped to a name by `topology.aliases` (written by people), below those by what a lookup
discovered (`Discovered`: Prometheus series such as `node_uname_info` and `kube_pod_info`, see
`alertrouter.discovery`), and below both by learned aliases: an alert that carries both an IP-form
`instance` and a name (`node_claim`) says which node that address is (see `pipeline.aliases` for how
claims are kept, expire and conflict). Topology labels likewise: `topology.nodes` over discovered ones.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from alertrouter.labelset import LabelSet
from alertrouter.model import NAME_MAX

__all__ = [
    "CONFIGURED",
    "INSTANCE",
    "LEARNED",
    "NAME_LABELS",
    "NOTHING_DISCOVERED",
    "PROMETHEUS",
    "Discovered",
    "NodeClaim",
    "NodeIdentity",
    "address_of",
    "label_source",
    "lookup_key",
    "node_claim",
    "strip_port",
    "unnamed",
]

# Labels that name a node (never an address) in the exporters' own words: Prometheus relabelling
# (`node`), node_uname_info (`nodename`), Kubernetes SD (`kubernetes_node`), dcgm-exporter (`hostname`,
# spelled `Hostname` before 2026).
NAME_LABELS = ("node", "nodename", "kubernetes_node", "hostname", "Hostname")
# Values dcgm-exporter puts in `Hostname` that name no node: `localhost` when it talks to a remote
# nv-hostengine (every node says so), a container id in a plain `docker run`.
_PLACEHOLDER = re.compile(r"localhost(\.localdomain)?|[0-9a-f]{12}|[0-9a-f]{64}", re.IGNORECASE)
# `node_source` of a node named by an alias or the instance address (`label:<name>` otherwise).
CONFIGURED, PROMETHEUS, LEARNED, INSTANCE = "configured", "prometheus", "learned", "instance"


@functools.lru_cache(maxsize=1 << 15)
def unnamed(value: str) -> bool:
    """True for a value that cannot name a node, however many nodes say it: empty, `localhost`
    (`.localdomain`), a 12- or 64-hex container id, a loopback or unspecified address (`127.0.0.2`,
    `::1`, `0.0.0.0`, `::`). An `instance` is asked with its port dropped. Remembered per value."""
    if not value or _PLACEHOLDER.fullmatch(value):
        return True
    try:
        ip = ipaddress.ip_address(value)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_unspecified


@functools.lru_cache(maxsize=64)
def label_source(name: str) -> str:
    """`label:Hostname`: one string per label name, shared by every alert it names."""
    return sys.intern(f"label:{name}")


def strip_port(instance: str) -> str:
    """`10.0.0.7:9100` -> `10.0.0.7`; `[fe80::1]:9100` -> `fe80::1`; a bare host is kept."""
    if instance.startswith("["):
        host, sep, _ = instance[1:].partition("]")
        return host if sep else instance
    host, sep, port = instance.rpartition(":")
    if sep and port.isdigit() and host and ":" not in host:
        return host
    return instance


@functools.lru_cache(maxsize=1 << 15)
def address_of(value: str) -> str | None:
    """The IP address of an `instance` (its port dropped), in one spelling (`FE80:0::1` -> `fe80::1`),
    or None when it is a host name. One string per address in the process (`sys.intern`): the engine
    keeps one per live alert, and a node's alerts share it. Remembered for the last 32,768 instances (a
    fleet's exporters): it is asked for each alert stored and each alert evaluated."""
    try:
        return sys.intern(str(ipaddress.ip_address(strip_port(value))))
    except ValueError:
        return None


def lookup_key(value: str, *, instance: bool) -> str:
    """How a discovered map is keyed: an address in one spelling (an `instance` losing its port), any
    other value as it is (a host name, a pod's name)."""
    host = strip_port(value) if instance else value
    try:
        return sys.intern(str(ipaddress.ip_address(host)))
    except ValueError:
        return sys.intern(host)


@dataclass(frozen=True, slots=True)
class Discovered:
    """What a lookup found: `names` maps an address or another name of a node (a pod's name) to the node,
    keyed by `lookup_key`; `topology` maps a node to its labels (region, zone...). One immutable
    snapshot per change, so a reader can tell a new one by identity. `maintenance`: the nodes the cluster
    says are under repair (cordoned, or a configured taint), as node -> (reason, since) (`pipeline.maintenance`)."""

    names: Mapping[str, str] = field(default_factory=dict)
    topology: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    maintenance: Mapping[str, tuple[str, datetime]] = field(default_factory=dict)


NOTHING_DISCOVERED = Discovered()


@dataclass(frozen=True, slots=True)
class NodeClaim:
    """What one alert says: the node at `address` is called `node`."""

    address: str
    node: str


def node_claim(labels: Mapping[str, str], names: Sequence[str] = NAME_LABELS) -> NodeClaim | None:
    """The (address, name) pair an alert teaches, or None.

    The address comes only from an IP-form `instance`; the name from the first of `names` that holds
    something other than an address or a placeholder (`localhost`, a container id). An alert with a
    `pod` label teaches nothing: its `instance` is the pod's IP, which is the node's only for pods on
    the host network, and a pod IP is reused by other pods on other nodes (dcgm-exporter under the GPU
    Operator is scraped by pod IP while its `Hostname` is the node's name). An address or a name
    longer than `NAME_MAX` (the store's column) names no real node and teaches nothing.
    """
    instance = labels.get("instance")
    if not instance or labels.get("pod"):
        return None
    address = address_of(instance)
    # An IPv6 zone id can be any length (no real one is); 127.0.0.1 is every node's own address.
    if address is None or len(address) > NAME_MAX or unnamed(address):
        return None
    for name in names:
        value = labels.get(name)
        if not value or name == "instance":
            continue
        if address_of(value) is not None or unnamed(value):
            continue  # an IP in `Hostname`, `localhost`, a container id: not a node's name
        return NodeClaim(address, value) if len(value) <= NAME_MAX else None
    return None


@dataclass(frozen=True, slots=True)
class NodeIdentity:
    """`sources`: labels tried in order. `topology`: node -> labels (rack, region, cluster...) added
    only where the alert lacks them, for nodes whose exporters do not carry those labels.
    `aliases`: other names of a node (e.g. its IP) -> the canonical node name, so a node-exporter
    alert known only by IP and a dcgm alert known by hostname land on one node. `learned`: address ->
    node learned from alerts (`pipeline.aliases`). `discovered`: what a lookup (Prometheus) found.

    `derive`: labels worked out from an alert's own (`gpu.labels.ActionLabel`: `xid_action`), added like
    topology labels, only where the alert lacks them.

    Precedence: `aliases` (written by people), then `discovered`, then `learned`; topology labels from
    `topology` (written by people) over discovered ones, and an alert's own labels over both."""

    sources: Sequence[str] = ("node", "hostname", "Hostname", "nodename", "kubernetes_node", "instance")
    label: str = "node"
    topology: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)
    learned: Mapping[str, str] = field(default_factory=dict)
    learned_ttl: timedelta = timedelta(days=7)
    discovered: Discovered = NOTHING_DISCOVERED
    derive: Callable[[Mapping[str, str]], Iterable[tuple[str, str]]] | None = None

    def node_of(self, labels: Mapping[str, str]) -> str | None:
        named = self.named(labels)
        return None if named is None else named[0]

    def named(self, labels: Mapping[str, str]) -> tuple[str, str] | None:
        """The alert's node and what named it (`node_source`): `configured`, `prometheus`, `learned`,
        `label:<name>` or `instance`. The first of `sources` that can name a node decides; a value that
        cannot (`unnamed`: `localhost`, a container id, a loopback address) is passed over, so 40 nodes
        whose dcgm-exporter says `Hostname="localhost"` are 40 nodes, named by their `instance`. A value
        equal to the alert's `pod` label (old GPU Operator charts put the pod's name in `Hostname`) is
        used only through an alias or the lookup, or when no later label or mapped address names the
        node (a pod IP named by nothing is no better than the pod's name)."""
        pod = labels.get("pod")
        deferred: str | None = None  # a source holding the pod's name, used only if nothing better
        for name in self.sources:
            value = labels.get(name)
            if not value:
                continue
            instance = name == "instance"
            key = strip_port(value) if instance else value
            if unnamed(key):
                continue
            if not instance and value == pod:
                mapped = self._mapped(key, value, instance=False)
                if mapped is not None:
                    return mapped
                deferred = deferred or name
                continue
            mapped = self._mapped(key, value, instance=instance)
            if mapped is not None:
                return mapped
            if instance and deferred is not None:
                break
            return sys.intern(key), INSTANCE if instance else label_source(name)
        if deferred is not None:
            return sys.intern(labels[deferred]), label_source(deferred)
        return None

    def _mapped(self, key: str, value: str, *, instance: bool) -> tuple[str, str] | None:
        """The name `topology.aliases`, the lookup or (for an address) learning gives `key`, if any."""
        configured = self.aliases.get(key)
        if configured is not None:
            return configured, CONFIGURED
        if self.discovered.names:
            found = self.discovered.names.get(lookup_key(value, instance=instance))
            if found is not None:
                return self.aliases.get(found, found), PROMETHEUS
        if instance and self.learned:
            address = address_of(value)
            learned = self.learned.get(address) if address is not None else None
            if learned is not None:
                return self.aliases.get(learned, learned), LEARNED
        return None

    def claim(self, labels: Mapping[str, str]) -> NodeClaim | None:
        """What the alert teaches, its name taken in the order `sources` names nodes (then the other
        name labels), so an address learns the name its own alerts are known by."""
        names = [s for s in self.sources if s != "instance"]
        return node_claim(labels, [*names, *(n for n in NAME_LABELS if n not in names)])

    def address(self, labels: Mapping[str, str]) -> str | None:
        """The IP address an alert is known by, when `instance` is what names it (the sources before
        it absent, placeholders or the pod's name, as `named` passes them over)."""
        pod = labels.get("pod")
        for name in self.sources:
            value = labels.get(name)
            if not value:
                continue
            instance = name == "instance"
            if unnamed(strip_port(value) if instance else value) or (not instance and value == pod):
                continue
            return address_of(value) if instance else None
        return None

    def key(self, labels: Mapping[str, str]) -> str | None:
        """The value the alert's node is looked up by (the first of `sources` that can name a node, as
        `lookup_key` spells it): a discovered map that changes this key's entry may rename its node."""
        for name in self.sources:
            value = labels.get(name)
            if value:
                instance = name == "instance"
                if not unnamed(strip_port(value) if instance else value):
                    return lookup_key(value, instance=instance)
        return None

    def enrich(self, labels: Mapping[str, str]) -> LabelSet:
        """The labels the stages match on: the original ones, the node key under `label`, and
        topology and derived labels the alert does not already have (an alert's own labels always win). A
        compact `LabelSet`, not a dict: the engine keeps one per live alert (its `AlertView.labels`)."""
        node = self.node_of(labels)
        derived = tuple(self.derive(labels)) if self.derive is not None else ()
        if node is None and not derived:
            return labels if type(labels) is LabelSet else LabelSet(labels)
        out = labels.as_dict() if type(labels) is LabelSet else dict(labels)
        if node is not None:
            out[self.label] = node
            for name, value in self.topology.get(node, {}).items():
                out.setdefault(name, value)
            for name, value in self.discovered.topology.get(node, {}).items():
                out.setdefault(name, value)
        for name, value in derived:
            out.setdefault(name, value)
        return LabelSet(out)

"""Node identity: one name for a machine across exporters, plus topology labels from a mapping.

node-exporter says `instance="10.0.0.7:9100"`, dcgm-exporter `instance="10.0.0.7:9400"` and
`Hostname="gpu-node-07"`; `equal: [instance]` never matches across them. The node key is the first
present of a configurable list of labels (`instance` losing its port) and is exposed to every later
stage as a label, so inhibition (`equal: [node]`), aggregation and routing all see the same node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["NodeIdentity", "strip_port"]


def strip_port(instance: str) -> str:
    """`10.0.0.7:9100` -> `10.0.0.7`; `[fe80::1]:9100` -> `fe80::1`; a bare host is kept."""
    if instance.startswith("["):
        host, sep, _ = instance[1:].partition("]")
        return host if sep else instance
    host, sep, port = instance.rpartition(":")
    if sep and port.isdigit() and host and ":" not in host:
        return host
    return instance


@dataclass(frozen=True, slots=True)
class NodeIdentity:
    """`sources`: labels tried in order. `topology`: node -> labels (rack, region, cluster...) added
    only where the alert lacks them, for nodes whose exporters do not carry those labels.
    `aliases`: other names of a node (e.g. its IP) -> the canonical node name, so a node-exporter
    alert known only by IP and a dcgm alert known by hostname land on one node."""

    sources: Sequence[str] = ("node", "hostname", "Hostname", "kubernetes_node", "instance")
    label: str = "node"
    topology: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)

    def node_of(self, labels: Mapping[str, str]) -> str | None:
        for name in self.sources:
            value = labels.get(name)
            if value:
                key = strip_port(value) if name == "instance" else value
                return self.aliases.get(key, key)
        return None

    def enrich(self, labels: Mapping[str, str]) -> dict[str, str]:
        """The labels the stages match on: the original ones, the node key under `label`, and
        topology labels the alert does not already have (an alert's own labels always win)."""
        out = dict(labels)
        node = self.node_of(labels)
        if node is None:
            return out
        out[self.label] = node
        for name, value in self.topology.get(node, {}).items():
            out.setdefault(name, value)
        return out

"""Nodes the cluster says are under repair, from kube-state-metrics: cordoned
(`kube_node_spec_unschedulable{node}` is 1) or carrying a configured taint (`kube_node_spec_taint{node,
key, value, effect}`). Read by the node lookup beside the node names (`discovery.prometheus`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from alertrouter.pipeline.maintenance import CORDONED, TaintRule

__all__ = ["CORDON_QUERY", "CORDON_SERIES", "TAINT_QUERY", "TAINT_SERIES", "MaintenanceReads", "maintenance_of"]

CORDON_SERIES, TAINT_SERIES = "kube_node_spec_unschedulable", "kube_node_spec_taint"
# One series per node (or per taint), its labels cut to those read: kube-state-metrics' own `node`, and
# the taint's `key`, `value`, `effect`.
CORDON_QUERY = f"count by (node) ({CORDON_SERIES} == 1)"
TAINT_QUERY = f"count by (node, key, value, effect) ({TAINT_SERIES})"


@dataclass(frozen=True, slots=True)
class MaintenanceReads:
    """What the `maintenance:` section asks the lookup to read: cordons (`cordoned`) and which taints."""

    cordoned: bool = True
    taints: tuple[TaintRule, ...] = ()


def maintenance_of(
    reads: MaintenanceReads, cordoned: Sequence[Mapping[str, str]], tainted: Sequence[Mapping[str, str]]
) -> dict[str, str]:
    """Node -> why it is in maintenance: `taint <key>` (the first configured taint it carries, which says
    more than the cordon a remediation system adds with it), else `cordoned`."""
    out: dict[str, str] = {}
    for row in tainted:
        node, key = row.get("node", ""), row.get("key", "")
        if node and node not in out:
            rule = next((r for r in reads.taints if r.matches(key, row.get("value", ""), row.get("effect", ""))), None)
            if rule is not None:
                out[node] = f"taint {rule.key}"
    if reads.cordoned:
        for row in cordoned:
            if (node := row.get("node", "")) and node not in out:
                out[node] = CORDONED
    return out

"""The week's GPU faults: per node, the mean time between them (the RMA candidates are `digest.rma`'s,
from each GPU's own history).

Definitions (docs/en/xid.md; the digest's footnote says the same):
- A GPU fault is an alert episode that began firing in the week and whose labels name an XID (`xid`, or
  dcgm-exporter's `err_code`; `alertrouter.gpu.xid.from_labels`). Several alerts about one XID of one GPU
  starting at the same time (two rules on the same series) are one fault.
- A node's mean time between GPU faults is the period's length divided by the node's faults: 168 h over
  4 faults is 42 h. Nodes without a fault are not listed (their MTBF is longer than the period).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta

from alertrouter.digest.types import EpisodeRow, GpuFault, NodeFaults
from alertrouter.gpu.xid import from_labels

__all__ = ["gpu_faults", "node_faults"]

TOP = 25


def _order(unit: str) -> tuple[int, str]:
    return (int(unit), "") if unit.isascii() and unit.isdigit() and len(unit) < 9 else (1 << 30, unit)


def gpu_faults(fired: Iterable[tuple[EpisodeRow, Mapping[str, str]]], node_of: Callable[[str], str]) -> list[GpuFault]:
    """The faults among the week's alert episodes (`fired`: episode, labels), oldest first;
    `node_of(fingerprint)` names an alert's node."""
    found: dict[tuple[str, str, int, object], GpuFault] = {}
    for episode, labels in fired:
        info = from_labels(labels)
        if info is None:
            continue
        node, gpu = node_of(episode.fingerprint), labels.get("gpu", "")
        uuid = labels.get("UUID") or labels.get("uuid") or ""
        fault = GpuFault(episode.starts_at, node, gpu, uuid, info.code)
        found.setdefault((uuid or f"{node}/{gpu}", node, info.code, episode.starts_at), fault)
    return sorted(found.values(), key=lambda f: (f.at, f.node, _order(f.gpu), f.code))


def node_faults(faults: Iterable[GpuFault], period: timedelta) -> list[NodeFaults]:
    """Per node with a fault: how many, on which GPUs, which XIDs, and the mean time between them
    (`period` / faults); most faults first."""
    by_node: dict[str, list[GpuFault]] = defaultdict(list)
    for fault in faults:
        by_node[fault.node].append(fault)
    rows = [
        NodeFaults(
            node=node,
            faults=len(found),
            gpus=sorted({f.gpu for f in found if f.gpu}, key=_order),
            codes=sorted({f.code for f in found}),
            mtbf=period / len(found),
        )
        for node, found in by_node.items()
    ]
    return sorted(rows, key=lambda r: (-r.faults, r.node))[:TOP]

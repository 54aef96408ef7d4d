"""The week's GPU faults: per node, the mean time between them; per GPU, whether it is an RMA candidate.

Definitions (docs/en/xid.md; the digest's footnote says the same):
- A GPU fault is an alert episode that began firing in the week and whose labels name an XID (`xid`, or
  dcgm-exporter's `err_code`; `alertrouter.gpu.xid.from_labels`). Several alerts about one XID of one GPU
  starting at the same time (two rules on the same series) are one fault.
- A node's mean time between GPU faults is the period's length divided by the node's faults: 168 h over
  4 faults is 42 h. Nodes without a fault are not listed (their MTBF is longer than the period).
- An RMA candidate is a GPU (its `UUID` label, `uuid` in dcgm-exporter's old naming) with at least
  `RMA_REPEATS` faults in the week whose XID is one of `RMA_XIDS` (memory and bus faults); the faults
  are its evidence. A GPU without a UUID label is never one: the UUID is what an RMA names.
DCGM_FI_DEV_XID_ERRORS keeps the last XID until the GPU is reset, so a repeat is a new episode only after
the alert resolved in between (a reset, a reboot, the exporter restarting): a repeat is a GPU that failed
again after it was brought back.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta

from alertrouter.digest.types import EpisodeRow, GpuFault, NodeFaults, RmaCandidate
from alertrouter.gpu.xid import from_labels

__all__ = ["RMA_REPEATS", "RMA_XIDS", "gpu_faults", "node_faults", "rma_candidates"]

RMA_XIDS = frozenset({48, 63, 64, 79, 94, 95})  # double-bit ECC, row remapping, fallen off the bus, ECC
RMA_REPEATS = 2  # faults of those codes on one GPU in one week
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


def rma_candidates(
    faults: Iterable[GpuFault], *, codes: frozenset[int] = RMA_XIDS, repeats: int = RMA_REPEATS
) -> list[RmaCandidate]:
    """GPUs (by UUID) with at least `repeats` faults of `codes`, each with its evidence; most first."""
    by_gpu: dict[str, list[GpuFault]] = defaultdict(list)
    for fault in faults:
        if fault.uuid and fault.code in codes:
            by_gpu[fault.uuid].append(fault)
    rows = [
        RmaCandidate(uuid=uuid, node=found[-1].node, gpu=found[-1].gpu, evidence=found)
        for uuid, found in by_gpu.items()
        if len(found) >= repeats
    ]
    return sorted(rows, key=lambda r: (-len(r.evidence), r.node, _order(r.gpu), r.uuid))[:TOP]

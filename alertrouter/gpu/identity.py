"""A GPU's own identity from an alert's labels, so its history survives node renames, reboots and the GPU
moving to another slot or node: keyed by the GPU's UUID, never by node name and index.

dcgm-exporter labels every GPU series `UUID` (`GPU-8f3c...`), `gpu` (the index on its node), `pci_bus_id`,
`modelName`, `device`, and `serial` only where a custom counters file exports it; exporters and
relabelled fleets also say `uuid` or `gpu_uuid`. Under a ServiceMonitor only the pod mapping is renamed
(`exported_pod`...), the GPU's labels keep their names.

Hostile input: an alert without a UUID has no history key and records nothing (a node/slot key would
merge two GPUs that swapped slots, the exact thing this keys around). A UUID longer than `NAME_MAX`
names no real GPU and records nothing; any other value longer than `NAME_MAX` is left out (never cut:
a cut serial would name another board), but the node, which is cut as the engine cuts it (`bounded`), so
a GPU's node is the one its alerts are on. Two GPUs claiming one UUID are told apart by where they were
seen (`places`, `conflicting`): their sightings are kept side by side, never merged silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from typing import Protocol

from alertrouter.model import NAME_MAX, bounded

__all__ = [
    "MODEL_LABELS",
    "SERIAL_LABELS",
    "UUID_LABELS",
    "GpuIdentity",
    "NodeNames",
    "Place",
    "Sighting",
    "conflicting",
    "identity_of",
    "places",
]

UUID_LABELS = ("UUID", "uuid", "gpu_uuid")  # dcgm-exporter's own first, then the spellings seen in the wild
SERIAL_LABELS = ("serial", "Serial", "gpu_serial")
MODEL_LABELS = ("modelName", "model", "gpu_model")


class NodeNames(Protocol):
    """How the pipeline names an alert's node (`pipeline.nodes.NodeIdentity`), handed in: the pipeline reads
    this package (the folding of follow-on Xids), so this package does not import the pipeline."""

    def node_of(self, labels: Mapping[str, str]) -> str | None: ...


@dataclass(frozen=True, slots=True)
class GpuIdentity:
    """`node`: the alert's node as the pipeline names it (`NodeIdentity`); `slot`: the `gpu` index on it.
    Every field but `uuid` may be None (not exported, or not a value a GPU has)."""

    uuid: str
    serial: str | None = None
    model: str | None = None
    node: str | None = None
    slot: str | None = None
    pci_bus_id: str | None = None


def _value(labels: Mapping[str, str], names: Sequence[str]) -> str | None:
    """The first of `names` holding something, stripped; None if that is longer than `NAME_MAX`."""
    for name in names:
        value = labels.get(name)
        if value is None:
            continue
        value = value.strip()
        if value:
            return value if len(value) <= NAME_MAX else None
    return None


def identity_of(labels: Mapping[str, str], nodes: NodeNames | None = None) -> GpuIdentity | None:
    """The GPU an alert is about, or None when it names no UUID (or one longer than `NAME_MAX`). `nodes`:
    how its node is named; None names none (a caller that needs only the UUID and the slot)."""
    uuid = _value(labels, UUID_LABELS)
    if uuid is None:
        return None
    node = nodes.node_of(labels) if nodes is not None else None
    return GpuIdentity(
        uuid=uuid,
        serial=_value(labels, SERIAL_LABELS),
        model=_value(labels, MODEL_LABELS),
        node=None if node is None else bounded(node, NAME_MAX),
        slot=_value(labels, ("gpu",)),
        pci_bus_id=_value(labels, ("pci_bus_id",)),
    )


@dataclass(frozen=True, slots=True)
class Sighting:
    """Where and when one event of a UUID was seen."""

    node: str | None
    slot: str | None
    at: datetime


@dataclass(frozen=True, slots=True)
class Place:
    """A (node, slot) a UUID was seen at, and the span of its events there."""

    node: str | None
    slot: str | None
    first: datetime
    last: datetime
    events: int


def places(sightings: Iterable[Sighting]) -> list[Place]:
    """The places a UUID's events were seen at, the earliest first."""
    spans: dict[tuple[str | None, str | None], tuple[datetime, datetime, int]] = {}
    for s in sightings:
        key = (s.node, s.slot)
        first, last, n = spans.get(key, (s.at, s.at, 0))
        spans[key] = (min(first, s.at), max(last, s.at), n + 1)
    found = [Place(node, slot, first, last, n) for (node, slot), (first, last, n) in spans.items()]
    return sorted(found, key=lambda p: (p.first, p.node or "", p.slot or ""))


def conflicting(found: Sequence[Place]) -> bool:
    """Whether two places' spans overlap: one GPU that moved is seen at one place, then at the next; a UUID
    seen at A, then B, then A again is two GPUs claiming it (or a value copied between alerts). A GPU seen
    once at each of two places reads as a move: the evidence cannot tell them apart yet."""
    ordered = sorted(found, key=lambda p: p.first)
    return any(later.first <= earlier.last for earlier, later in pairwise(ordered))

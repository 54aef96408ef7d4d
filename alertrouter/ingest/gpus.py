"""What an ingest commit records about GPUs: one event per new episode of an alert naming a GPU's UUID and
either an Xid or an alertname the RMA rules read, and the GPU's latest sighting. Pure: the writer puts the
rows in the commit that stores the alerts, so an event is never lost nor recorded for an alert undone.

Only new episodes count (an alert first seen, or firing again after it resolved): a re-send of one
episode plans none, so the hot path of re-sent alerts never reaches this. An alert whose `startsAt` is
days ago records its event at that time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from alertrouter.gpu.identity import identity_of
from alertrouter.gpu.rma import DEFAULT_RULES, relevant
from alertrouter.gpu.xid import XID_LABELS, parse_code
from alertrouter.ingest.batch import IngestBatch
from alertrouter.ingest.plan import Plan
from alertrouter.model import NAME_MAX, bounded
from alertrouter.pipeline.nodes import NodeIdentity

__all__ = ["GpuRecorder", "GpuRows"]


@dataclass(slots=True)
class GpuRows:
    """`gpus`: one row per UUID (its latest sighting in the commit); `events`: one per alert episode."""

    gpus: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.events)


@dataclass(frozen=True, slots=True)
class GpuRecorder:
    """`nodes`: how the pipeline names an alert's node (the configured sources and aliases; learned and
    discovered names live in the engine and are not consulted here). `alertnames`: GPU alerts without an
    Xid that are recorded all the same (the RMA rules' alertnames, e.g. a row-remap failure)."""

    nodes: NodeIdentity = field(default_factory=NodeIdentity)
    alertnames: frozenset[str] = relevant(DEFAULT_RULES)

    def rows(self, batches: Sequence[IngestBatch], plan: Plan, now: datetime) -> GpuRows:
        out = GpuRows()
        if not plan.new_episodes:
            return out
        starts = {e["fingerprint"]: e["starts_at"] for e in plan.new_episodes}
        gpus: dict[str, dict[str, Any]] = {}
        for batch in batches:
            for alert in batch.alerts:
                at = starts.get(alert.fingerprint)
                if at is None:
                    continue
                labels = alert.labels
                xid = next((c for n in XID_LABELS if (c := parse_code(labels.get(n))) is not None), None)
                alertname = labels.get("alertname", "")
                if xid is None and alertname not in self.alertnames:
                    continue
                gpu = identity_of(labels, self.nodes)
                if gpu is None:
                    continue
                out.events.append(
                    {
                        "uuid": gpu.uuid,
                        "alertname": bounded(alertname, NAME_MAX),
                        "xid": xid,
                        "at": at,
                        "node": gpu.node,
                        "slot": gpu.slot,
                        "fingerprint": alert.fingerprint,
                    }
                )
                gpus[gpu.uuid] = {
                    "uuid": gpu.uuid,
                    "serial": gpu.serial,
                    "model": gpu.model,
                    "node": gpu.node,
                    "slot": gpu.slot,
                    "pci_bus_id": gpu.pci_bus_id,
                    "first_seen": now,
                    "last_seen": now,
                }
        out.gpus = list(gpus.values())
        return out

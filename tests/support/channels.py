"""What the channel tests share: the sample outbox snapshot, a notification around it, a manual clock."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from alertrouter.channels.base import MessageKind, Notification
from alertrouter.message.snapshot import MessageSnapshot

# One node incident as the engine's `message_snapshot` stores it in the outbox (`to_json()`).
ITEM: dict[str, Any] = {
    "incident": "gpu-by-node/GPUHighTemp/gpu-node-07",
    "kind": "node",
    "reason": "first",
    "status": "firing",
    "severity": "critical",
    "headline": "gpu-node-07: GPUHighTemp on 6/8 GPUs",
    "labels": {"alertname": "GPUHighTemp", "node": "gpu-node-07", "region": "north"},
    "summary": {"units": ["0", "1"], "units_total": 8, "unit_name": "GPUs", "alerts": 6, "firing": 6},
    "alerts": [],
    "opened_at": "2026-11-21T10:00:00+00:00",
    "at": "2026-11-21T10:00:30+00:00",
}


def notification(**changes: Any) -> Notification:
    """The first message of `ITEM` for the receiver `oncall`, with `changes` applied."""
    base = Notification(
        kind=MessageKind.FIRING,
        receiver="oncall",
        severity="critical",
        items=(MessageSnapshot.from_json(ITEM),),
        link="http://alertrouter.example/incidents/12",
    )
    return replace(base, **changes)


class ManualClock:
    """A clock a test moves by hand (`clock.now += 61`)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

"""One thing that happened to one GPU, as its history keeps it: the Xid (or the GPU alert with no Xid, an
ECC or row-remap alert) and when the alert says it started. The triage's repetition rules and the RMA rules
read a GPU's events; the store keeps them keyed by the GPU's own identity, not its node and slot."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

__all__ = ["GpuEvent"]


@dataclass(frozen=True, slots=True)
class GpuEvent:
    """`xid`: None for a GPU alert that names no Xid. `at`: the alert's `startsAt` (an alert that started
    before alertrouter saw it counts from then), never when it was received."""

    alertname: str
    at: datetime
    xid: int | None = None

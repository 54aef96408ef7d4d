"""Maintenance: a node-scoped cousin of a silence. An alert whose node is in maintenance is decided
`maintenance`: stored and shown, never sent; a resolve meanwhile is not told either. When the window
ends while the alert still fires, its incident is told at once: the group wait counts from the alert's
first firing, as after a silence (`types.inhibited_only`).

A window names a node as people write it (a name, an IP, an alias); `InMaintenance` meets it with
alerts through the node identity (`pipeline.nodes`), so `10.0.0.7` matches the alerts of the node
that address is known as.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

__all__ = ["MANUAL", "InMaintenance", "Window"]

MANUAL = "manual"  # started by a person (CLI, API, console), as opposed to read from the cluster


@dataclass(frozen=True, slots=True)
class Window:
    id: str
    node: str
    starts_at: datetime
    ends_at: datetime
    reason: str = ""
    by: str = ""
    source: str = MANUAL

    def active(self, now: datetime) -> bool:
        return self.starts_at <= now < self.ends_at


class InMaintenance:
    """The windows in force, by node (canonical, through `canonical`). Deterministic: of several windows
    on one node, the one that started first (then by id) is the one an alert names."""

    def __init__(self, windows: Iterable[Window] = (), canonical: Callable[[str], str] = str) -> None:
        self._windows = sorted(windows, key=lambda w: (w.starts_at, w.id))
        self._canonical = canonical

    def __bool__(self) -> bool:
        return bool(self._windows)

    def active(self, now: datetime) -> Mapping[str, Window]:
        """Canonical node -> the window it is in now."""
        out: dict[str, Window] = {}
        for window in self._windows:
            if window.active(now):
                out.setdefault(self._canonical(window.node), window)
        return out

    def next_change(self, now: datetime) -> datetime | None:
        """When a window starts or ends next: the engine must look again then, alerts or not."""
        times = [t for w in self._windows for t in (w.starts_at, w.ends_at) if t > now]
        return min(times, default=None)

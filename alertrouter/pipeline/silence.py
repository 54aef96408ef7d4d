"""Silences: Alertmanager's semantics, from the store, applied after inhibition.

A silence mutes every alert whose labels match all of its matchers while `starts_at <= now < ends_at`.
As in Alertmanager, a silenced alert still inhibits others (silences act on notifications, not on
the inhibitor's view of what is firing). Matching uses the alert's labels after enrichment, so a
silence on `node="gpu-node-07"` works whichever label the exporter used for the host.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from alertrouter.labels import Matcher, matches_all, parse_matchers

__all__ = ["Silence", "Silencer"]


@dataclass(frozen=True, slots=True)
class Silence:
    id: str
    matchers: tuple[Matcher, ...]
    starts_at: datetime
    ends_at: datetime

    @classmethod
    def parse(cls, id: str, matchers: Iterable[str], starts_at: datetime, ends_at: datetime) -> Silence:
        """From stored matcher strings (validated when the silence was created)."""
        parsed: list[Matcher] = []
        for text in matchers:
            parsed.extend(parse_matchers(text))
        return cls(id, tuple(parsed), starts_at, ends_at)

    def active(self, now: datetime) -> bool:
        return self.starts_at <= now < self.ends_at


class Silencer:
    """The silences in force; deterministic: the first matching silence in (starts_at, id) order."""

    def __init__(self, silences: Iterable[Silence] = ()) -> None:
        # A silence without matchers would mute everything; the API refuses those, and so does this.
        self._silences = sorted((s for s in silences if s.matchers), key=lambda s: (s.starts_at, s.id))

    def __bool__(self) -> bool:
        return bool(self._silences)

    def mutes(self, labels: Mapping[str, str], now: datetime) -> Silence | None:
        for silence in self._silences:
            if silence.active(now) and matches_all(silence.matchers, labels):
                return silence
        return None

    def next_change(self, now: datetime) -> datetime | None:
        """When a silence starts or ends next: the engine must look again then, alerts or not."""
        times = [t for s in self._silences for t in (s.starts_at, s.ends_at) if t > now]
        return min(times, default=None)

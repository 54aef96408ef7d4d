"""Stale is not resolved: an alert that resolves because its data stopped (its node or exporter went
dark) is not told as resolved until the data returns.

When a GPU node dies its dcgm-exporter series vanish, so Prometheus resolves its GPU alerts at once,
while the node-level alert comes a minute (`NodeDown`, `for: 1m`) to fifteen minutes later
(`KubeNodeNotReady`). The rule, for a resolved alert A of node N (N: the derived node label) that
matches `targets` and not `source_down`, resolved at r (its `endsAt`):

- A's *source* is its exporter on N: its `job` and the port of its `instance` (a dcgm pod's IP changes
  when the node comes back; its port does not). A's *cohort*: the target alerts of N from the same source
  that resolved within `window` of r, A included. A resolved *together* when its cohort has at least
  `together` alerts (`all`: at least 2, and no alert of that source that fired before r still fires).
- A's *horizon* is r + `hold` when it resolved together, else r + `window`.
- **source_down**: A is stale while a `source_down` alert of N fires that started after A started
  and no later than A's horizon (a NodeDown that fired before A did is not about A's data).
- **returning**: when no such alert fires any more but one did (the source is back since b, the latest
  end of those), A stays stale until b + `settle`, so an alert whose condition still holds fires
  again (then it is simply firing) instead of being told resolved and firing a minute apart; and
  until the resolve of that source-down alert's incident is told (`told`), so the node's recovery
  never comes after its GPUs' (its resolve may wait out its group interval after a repeat).
- otherwise, unless data was seen again (a target alert of N from A's source started after r: the
  exporter answers), A is **resolving** until r + `window`, waiting for a source-down alert to say why, and
  **together** (stale) until r + `hold` if it resolved together.
- anything else: resolved, told as such.

Everything here is read from the live alerts (labels, `startsAt`, `endsAt`, firing), the clock and
(`told`) the stored notify state of the source's incident, so a restarted engine or another replica
decides the same; nothing needs storing beyond the alerts and the incident records.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from alertrouter.labels import Matcher, matches_all
from alertrouter.pipeline.nodes import strip_port
from alertrouter.pipeline.types import LiveAlert

__all__ = [
    "DISABLED",
    "Assessment",
    "Reading",
    "Reason",
    "StaleRule",
    "Staleness",
    "Told",
    "assess",
    "source_of",
    "staleness",
]

# When the resolve of the incident that tells about a source-down alert (by fingerprint) is due; None when
# it owes none (already told, or never told: muted, `send_resolved: false`).
Told = Callable[[str], datetime | None]


class Reason(enum.StrEnum):
    SOURCE_DOWN = "source_down"  # a source-down alert of its node fires
    TOGETHER = "together"  # it resolved with others of its exporter: held for `hold`
    RETURNING = "returning"  # its source is back: `settle` for its condition to fire again
    RESOLVING = "resolving"  # its resolve waits `window` for a source-down alert


@dataclass(frozen=True, slots=True)
class StaleRule:
    enabled: bool = False
    source_down: tuple[Matcher, ...] = ()
    targets: tuple[Matcher, ...] = ()  # empty: every alert that is not a source-down one
    window: timedelta = timedelta(minutes=2)
    together: int | None = 2  # None: all of the source's firing alerts
    hold: timedelta = timedelta(minutes=20)
    settle: timedelta = timedelta(minutes=2)

    def is_source_down(self, labels: Mapping[str, str]) -> bool:
        return bool(self.source_down) and matches_all(self.source_down, labels)

    def is_target(self, labels: Mapping[str, str]) -> bool:
        return not self.is_source_down(labels) and matches_all(self.targets, labels)

    def reading(self, labels: Mapping[str, str]) -> Reading | None:
        """What staleness reads of an alert's (enriched) labels; None: it reads nothing of this alert."""
        down = self.is_source_down(labels)
        if not down and not matches_all(self.targets, labels):
            return None
        job, port = source_of(labels)
        key = (down, job, port)
        if (found := _READINGS.get(key)) is None:
            if len(_READINGS) >= _READINGS_MAX:
                _READINGS.clear()  # a new start, refilled within a pass
            found = _READINGS[key] = Reading(down, (job, port))
        return found


@dataclass(frozen=True, slots=True)
class Reading:
    """What staleness reads of an alert's labels, worked out once per labels (`AlertViews` keeps it):
    a pass reads it for every alert on the node of each resolved one."""

    source_down: bool  # else a target
    source: tuple[str, str]  # `source_of`


DISABLED = StaleRule()

# One `Reading` per distinct value: the engine keeps one per live alert (`AlertViews`), and a fleet's are
# a handful (an exporter's job and port, whether it is a source-down alert). A reading each, with its
# own tuple and port string, was 15 MiB at 108,000 live alerts. Bounded: a job is a label's value.
_READINGS: dict[tuple[bool, str, str], Reading] = {}
_READINGS_MAX = 4096


@dataclass(frozen=True, slots=True)
class Staleness:
    reason: Reason
    since: datetime  # A's resolve: when its data stopped
    until: datetime | None  # when it must be looked at again; None while a source-down alert fires
    source: str | None = None  # the source-down alert's fingerprint (firing, or ended: returning)


@dataclass(frozen=True, slots=True)
class Assessment:
    """`staleness`, and the source-down alert that explains the alert's gap in data (of those still firing,
    else of those ended since, the first to start), also once the alert is resolved for good: what links
    its incident to the node-down one."""

    stale: Staleness | None
    source: LiveAlert | None


def source_of(labels: Mapping[str, str]) -> tuple[str, str]:
    """An alert's exporter on its node: (`job`, the port of `instance`)."""
    instance = labels.get("instance", "")
    host = strip_port(instance)
    port = instance[len(host) :].rpartition(":")[2] if host != instance else ""
    return labels.get("job", ""), port


def staleness(
    rule: StaleRule,
    alert: LiveAlert,
    reading: Reading | None,
    neighbours: Iterable[tuple[LiveAlert, Reading]],
    now: datetime,
    told: Told | None = None,
) -> Staleness | None:
    """Whether resolved `alert` (`reading`: `rule.reading` of its enriched labels) is stale now, among the
    alerts of its node that staleness reads (`neighbours`, it included or not). None: resolved, or not a
    resolved target at all. `told`: see `Told` (None: the source's resolve is not waited for)."""
    return assess(rule, alert, reading, neighbours, now, told).stale


def assess(
    rule: StaleRule,
    alert: LiveAlert,
    reading: Reading | None,
    neighbours: Iterable[tuple[LiveAlert, Reading]],
    now: datetime,
    told: Told | None = None,
) -> Assessment:
    """`staleness`, with the source-down alert that explains it (see `Assessment`)."""
    if not rule.enabled or alert.firing or alert.ends_at is None or reading is None or reading.source_down:
        return _NOTHING
    r = alert.ends_at
    source = reading.source
    downs: list[LiveAlert] = []
    same: list[LiveAlert] = []
    for other, other_reading in neighbours:
        if other.fingerprint == alert.fingerprint:
            continue
        if other_reading.source_down:
            downs.append(other)
        elif other_reading.source == source:
            same.append(other)
    together = _together(rule, r, same)
    horizon = r + (rule.hold if together else rule.window)
    relevant = [d for d in downs if alert.starts_at < d.starts_at <= horizon]
    firing = sorted((d for d in relevant if d.firing), key=lambda d: (d.starts_at, d.fingerprint))
    if firing:
        return Assessment(Staleness(Reason.SOURCE_DOWN, r, None, firing[0].fingerprint), firing[0])
    ended = [d for d in relevant if d.ends_at is not None]
    if ended:
        last = max(ended, key=lambda d: (d.ends_at, d.fingerprint))
        assert last.ends_at is not None
        until = last.ends_at + rule.settle
        if told is not None:  # the node's recovery is told first: the GPUs' resolve waits for each of them
            until = max([until, *(due for d in ended if (due := told(d.fingerprint)) is not None)])
        stale = Staleness(Reason.RETURNING, r, until, last.fingerprint) if now < until else None
        return Assessment(stale, min(ended, key=lambda d: (d.starts_at, d.fingerprint)))  # the first to go down
    if any(o.starts_at > r for o in same):
        return _NOTHING  # its exporter answers again: the condition is gone
    if now < r + rule.window:
        return Assessment(Staleness(Reason.RESOLVING, r, r + rule.window), None)
    if together and now < r + rule.hold:
        return Assessment(Staleness(Reason.TOGETHER, r, r + rule.hold), None)
    return _NOTHING


_NOTHING = Assessment(None, None)


def _together(rule: StaleRule, r: datetime, same: Sequence[LiveAlert]) -> bool:
    """Whether the alert resolved at `r` resolved with others of its source on its node."""
    window = rule.window
    cohort = 1 + sum(1 for o in same if not o.firing and o.ends_at is not None and abs(o.ends_at - r) <= window)
    if rule.together is not None:
        return cohort >= rule.together
    return cohort >= 2 and not any(o.firing and o.starts_at <= r for o in same)

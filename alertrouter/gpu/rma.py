"""Which GPUs are RMA candidates ("lemons"), from their own history: pure rules over a GPU's `GpuEvent`s.

A rule counts the events matching it (by Xid, by alertname, or either) within a window ending at the
latest of them; reaching its count makes the GPU a candidate, with the rule and the events as evidence.

The shipped defaults (`DEFAULT_RULES`, also written out in `rules/rma.yml`) follow NVIDIA's guidance:
- Xid 48 (double-bit ECC): the Xid catalog's WORKFLOW_XID_48 is a GPU reset, which applies the row
  remap; the same uncorrectable error again on the same GPU means the remap did not hold
  (docs.nvidia.com/deploy/xid-errors, "Resolution Bucket").
- Row-remap failure (Xid 64, or DCGM's row-remap failure alert): NVIDIA's GPU memory error management
  guide treats a row-remapping failure as an RMA condition outright ("RMA Policy Thresholds for
  Row-Remapping", docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/).
- Xid 79 (fallen off the bus): the catalog's action is a node reboot; repeated on one GPU it is the
  board, riser or slot. NVSentinel's health-events analyzer likewise flags the same fatal Xid repeating
  on one GPU (NVIDIA/NVSentinel, docs/configuration/health-events-analyzer.md).
- The shipped Prometheus rules' RMA alerts (rules/prometheus/gpu.rules.yml, group `gpu-rma`, after DCGM's
  health watch): a page retirement limit reached (GPUs before Ampere) once; rows remapped for an
  uncorrectable error twice (one is repaired by the GPU, more are the evidence).
The 30-day window is this module's choice: long enough for a GPU reset and a week of jobs between two
faults, short enough that two faults a year apart on a large fleet do not condemn a board.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from alertrouter.gpu.events import GpuEvent

__all__ = ["DEFAULT_RULES", "RmaRule", "RmaVerdict", "evaluate", "relevant"]


@dataclass(frozen=True, slots=True)
class RmaRule:
    """`count` events matching `xids` or `alertnames` (an event matches if either set names it) within
    `window` make a GPU a candidate."""

    name: str
    count: int
    window: timedelta
    xids: frozenset[int] = frozenset()
    alertnames: frozenset[str] = frozenset()
    description: str = ""

    def matches(self, event: GpuEvent) -> bool:
        return (event.xid is not None and event.xid in self.xids) or event.alertname in self.alertnames


@dataclass(frozen=True, slots=True)
class RmaVerdict:
    """`rule`: the first rule that made the GPU a candidate (None: not one); `evidence`: its events in the
    window, oldest first; `reason`: the same in English, e.g. "Xid 48 twice in 11 days (rule dbe-repeated)"."""

    candidate: bool
    rule: str | None = None
    evidence: tuple[GpuEvent, ...] = ()
    window: timedelta | None = None
    reason: str = ""
    rules: tuple[str, ...] = field(default=())  # every rule that matched, in rule order


DEFAULT_RULES: tuple[RmaRule, ...] = (
    RmaRule(
        "dbe-repeated",
        2,
        timedelta(days=30),
        xids=frozenset({48}),
        description="double-bit ECC error again after the reset that remaps its row",
    ),
    RmaRule(
        "row-remap-failure",
        1,
        timedelta(days=30),
        xids=frozenset({64}),
        alertnames=frozenset({"GPURowRemapFailure"}),
        description="a memory row could not be remapped",
    ),
    RmaRule(
        "fallen-off-bus-repeated",
        2,
        timedelta(days=30),
        xids=frozenset({79}),
        alertnames=frozenset({"GPUFallenOffBus"}),
        description="the GPU fell off the bus again",
    ),
    RmaRule(
        "retired-pages-limit",
        1,
        timedelta(days=30),
        alertnames=frozenset({"GPURetiredPagesDBELimit", "GPURetiredPagesLimit"}),
        description="DCGM's page retirement limit is reached (GPUs before Ampere)",
    ),
    RmaRule(
        "uncorrectable-remaps-repeated",
        2,
        timedelta(days=30),
        alertnames=frozenset({"GPUUncorrectableRemappedRows"}),
        description="rows remapped for uncorrectable errors again",
    ),
)


def relevant(rules: Sequence[RmaRule]) -> frozenset[str]:
    """The alertnames the rules read (ingest records a GPU alert without an Xid only if named here)."""
    return frozenset(name for rule in rules for name in rule.alertnames)


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def _span(first: datetime, last: datetime) -> str:
    days = (last - first).days
    if days >= 1:
        return f"in {days} day{'s' if days != 1 else ''}"
    hours = int((last - first).total_seconds() // 3600)
    return f"in {hours} hour{'s' if hours != 1 else ''}" if hours >= 1 else "within an hour"


def _what(rule: RmaRule, events: Sequence[GpuEvent]) -> str:
    xids = sorted({e.xid for e in events if e.xid is not None and e.xid in rule.xids})
    names = sorted({e.alertname for e in events if e.xid is None or e.xid not in rule.xids})
    parts = [f"Xid {x}" for x in xids] + names
    return " / ".join(parts) or rule.name


def _reason(rule: RmaRule, events: Sequence[GpuEvent]) -> str:
    what = _what(rule, events)
    if len(events) == 1:
        return f"{what} once (rule {rule.name})"
    return f"{what} {_times(len(events))} {_span(events[0].at, events[-1].at)} (rule {rule.name})"


def _window_hit(rule: RmaRule, events: Sequence[GpuEvent]) -> tuple[GpuEvent, ...] | None:
    """The latest run of `rule.count` or more matching events within `rule.window`, or None."""
    matching = [e for e in events if rule.matches(e)]
    best: tuple[GpuEvent, ...] | None = None
    start = 0
    for end, event in enumerate(matching):
        while event.at - matching[start].at > rule.window:
            start += 1
        if end - start + 1 >= rule.count:
            best = tuple(matching[start : end + 1])
    return best


def _once(ordered: Sequence[GpuEvent]) -> list[GpuEvent]:
    """One fault reported by two alert rules (the same Xid starting at the same moment: a site's own rule
    beside the shipped one) is one event; alerts without an Xid are told apart by name."""
    seen: set[tuple[int | str, datetime]] = set()
    out = []
    for event in ordered:
        key = (event.xid if event.xid is not None else event.alertname, event.at)
        if key not in seen:
            seen.add(key)
            out.append(event)
    return out


def evaluate(events: Iterable[GpuEvent], rules: Sequence[RmaRule] = DEFAULT_RULES) -> RmaVerdict:
    """Whether a GPU with these events (any order) is an RMA candidate, and why. The first rule met
    (in `rules` order) gives the reason; every rule met is named in `rules`."""
    ordered = _once(sorted(events, key=lambda e: (e.at, e.xid or 0, e.alertname)))
    hits = [(rule, hit) for rule in rules if (hit := _window_hit(rule, ordered)) is not None]
    if not hits:
        return RmaVerdict(candidate=False)
    rule, evidence = hits[0]
    reason = "; ".join(_reason(r, h) for r, h in hits)
    return RmaVerdict(
        candidate=True,
        rule=rule.name,
        evidence=evidence,
        window=rule.window,
        reason=reason,
        rules=tuple(r.name for r, _ in hits),
    )

"""One GPU as the API, the console and the RMA form show it: its identity, its events, whether it is an RMA
candidate and why, and where its UUID was seen (two GPUs claiming one UUID are flagged, not merged).
Pure: built from the store's rows, read through the attributes named here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from alertrouter.gpu.events import GpuEvent
from alertrouter.gpu.identity import Place, Sighting, conflicting, places
from alertrouter.gpu.rma import DEFAULT_RULES, RmaRule, RmaVerdict, evaluate, relevant

__all__ = [
    "CandidateQuery",
    "EventSeen",
    "GpuReport",
    "GpuSeen",
    "candidate_query",
    "event_list",
    "gpu_events",
    "is_candidate",
    "report",
]


class GpuSeen(Protocol):
    @property
    def uuid(self) -> str: ...
    @property
    def serial(self) -> str | None: ...
    @property
    def model(self) -> str | None: ...
    @property
    def node(self) -> str | None: ...
    @property
    def slot(self) -> str | None: ...
    @property
    def pci_bus_id(self) -> str | None: ...
    @property
    def first_seen(self) -> datetime: ...
    @property
    def last_seen(self) -> datetime: ...


class EventSeen(Protocol):
    @property
    def alertname(self) -> str: ...
    @property
    def xid(self) -> int | None: ...
    @property
    def at(self) -> datetime: ...
    @property
    def node(self) -> str | None: ...
    @property
    def slot(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class GpuReport:
    """`node`/`slot`: the latest sighting's. `places`: every (node, slot) its events were seen at;
    `conflict`: two of them overlap in time (two GPUs claiming one UUID), the reason says so."""

    uuid: str
    serial: str | None
    model: str | None
    node: str | None
    slot: str | None
    pci_bus_id: str | None
    first_seen: datetime
    last_seen: datetime
    events: tuple[GpuEvent, ...]
    where: tuple[Sighting, ...]  # where each of `events` was seen, in the same order
    verdict: RmaVerdict
    places: tuple[Place, ...]
    conflict: bool

    @property
    def reason(self) -> str:
        """English: the RMA rule met and its evidence, and the UUID conflict if there is one."""
        parts = [self.verdict.reason] if self.verdict.candidate else []
        if self.conflict:
            where = ", ".join(f"{p.node or '?'} GPU {p.slot or '?'}" for p in self.places)
            parts.append(f"UUID seen at {len(self.places)} places at once ({where}): two GPUs may claim it")
        return "; ".join(parts)


def gpu_events(rows: Sequence[EventSeen]) -> list[GpuEvent]:
    return [GpuEvent(alertname=r.alertname, at=r.at, xid=r.xid) for r in rows]


def is_candidate(rows: Sequence[EventSeen], rules: Sequence[RmaRule] = DEFAULT_RULES) -> bool:
    return evaluate(gpu_events(rows), rules).candidate


@dataclass(frozen=True, slots=True)
class CandidateQuery:
    """What narrows a read of GPUs to the RMA candidates: the Xids and alert names some rule counts (a GPU
    with none of them is not even read), then the rules over each GPU's events."""

    xids: frozenset[int]
    alertnames: frozenset[str]
    rules: Sequence[RmaRule]

    def keep(self, rows: Sequence[EventSeen]) -> bool:
        return is_candidate(rows, self.rules)


def candidate_query(rules: Sequence[RmaRule]) -> CandidateQuery:
    return CandidateQuery(frozenset(x for rule in rules for x in rule.xids), relevant(rules), rules)


def report(gpu: GpuSeen, rows: Sequence[EventSeen], rules: Sequence[RmaRule] = DEFAULT_RULES) -> GpuReport:
    rows = sorted(rows, key=lambda r: (r.at, r.xid or 0, r.alertname))
    events = gpu_events(rows)
    where = tuple(Sighting(r.node, r.slot, r.at) for r in rows)
    seen = tuple(places(where))
    return GpuReport(
        uuid=gpu.uuid,
        serial=gpu.serial,
        model=gpu.model,
        node=gpu.node,
        slot=gpu.slot,
        pci_bus_id=gpu.pci_bus_id,
        first_seen=gpu.first_seen,
        last_seen=gpu.last_seen,
        events=tuple(events),
        where=where,
        verdict=evaluate(events, rules),
        places=seen,
        conflict=conflicting(seen),
    )


def event_list(events: Sequence[GpuEvent]) -> str:
    """`48@2026-11-26T08:00:00Z;48@2026-12-07T08:00:00Z`: an RMA form's event column (the alertname
    where the event has no Xid)."""
    return ";".join(f"{e.xid if e.xid is not None else e.alertname}@{_iso(e.at)}" for e in events)


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

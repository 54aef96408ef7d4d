"""What a message states about its incident, typed per kind: a node's alerting units and counts, a storm's
nodes and members, why data went missing, an escalation step. The engine writes them; every reader (the
renderer, the channels, the console, the simulator) reads fields, never keys.

The engine holds them as its incident records' summaries (one per live incident: compact, compared by
value, so a record a pass leaves unchanged keeps its object). On disk they are the outbox message's and the
incident row's `summary` object, in the shape the engine has always written (`to_json`). Reading is lenient
(`facts_from_json`): a stored summary is JSON anyone may have written, and older rows lack keys; a value of
the wrong type reads as absent, as the readers before these types treated it, and a key absent stays absent
when written back.
Keys the types do not know are kept (`extra`), so a row reads back as it was written.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from types import MappingProxyType
from typing import Any

from alertrouter.message.gpu_triage import GpuTriageFacts
from alertrouter.model import IncidentKind, parse_time

__all__ = [
    "NO_EXTRA",
    "EscalationNote",
    "Facts",
    "MemberFacts",
    "Nearby",
    "NoData",
    "NodeFacts",
    "StormFacts",
    "Tally",
    "facts_from_json",
    "shared_tally",
]


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: object) -> str | None:
    """Text as one shared object per value (`sys.intern`): names and nodes repeat across a fleet's records."""
    return sys.intern(value) if type(value) is str else value if isinstance(value, str) else None


def _text(value: object) -> str:
    """A list entry as text: None is empty, anything else its `str` (a hand-written row may hold numbers)."""
    return value if isinstance(value, str) else ("" if value is None else str(value))


def _texts(value: object) -> tuple[str, ...] | None:
    return tuple(sys.intern(_text(v)) for v in value) if isinstance(value, list | tuple) else None


NO_EXTRA: Mapping[str, Any] = MappingProxyType({})  # every facts' `extra` that holds nothing: one object


def _extra(d: Mapping[str, Any], known: frozenset[str]) -> Mapping[str, Any]:
    extra = {k: v for k, v in d.items() if k not in known}
    return extra or NO_EXTRA


def _put(out: dict[str, Any], key: str, value: object) -> None:
    if value is not None:
        out[key] = value


@dataclass(frozen=True, slots=True)
class Tally:
    """How many of an incident's alerts there were, fired, counted (told), were muted (inhibited or
    silenced), silenced; and, of those that went quiet, whose data stopped (`stale`) or are resolving.
    None: not stored (a storm stores only `alerts`; `stale` and `resolving` only while some alert is)."""

    alerts: int | None = None
    firing: int | None = None
    eligible: int | None = None
    muted: int | None = None
    silenced: int | None = None
    stale: int | None = None
    resolving: int | None = None

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Tally:
        return shared_tally(cls(*[_int(d.get(name)) for name in _TALLY_NAMES]))

    def put(self, out: dict[str, Any]) -> None:
        for name in _TALLY_NAMES:
            _put(out, name, getattr(self, name))


_TALLY_NAMES = tuple(f.name for f in fields(Tally))
_TALLY = frozenset(_TALLY_NAMES)
# Equal tallies, one object: most of a fleet's incidents count the same few numbers (1 alert, 1 firing,
# ...). Bounded: past it, a new tally keeps its own object.
_TALLIES: dict[Tally, Tally] = {}
TALLIES_MAX = 10_000


def shared_tally(tally: Tally) -> Tally:
    """The one object held for tallies equal to `tally` (it, the first time)."""
    held = _TALLIES.get(tally)
    if held is not None:
        return held
    if len(_TALLIES) < TALLIES_MAX:
        _TALLIES[tally] = tally
    return tally


@dataclass(frozen=True, slots=True)
class NoData:
    """The node-down incident that explains why an incident's data stopped (`pipeline.stale`): its key,
    its alert name, its node, and whether it still fires."""

    source: str
    cause: str = ""
    node: str = ""
    down: bool = False

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> NoData | None:
        source = _str(d.get("no_data_source"))
        if source is None:
            return None
        return cls(
            source, _str(d.get("no_data_cause")) or "", _str(d.get("no_data_node")) or "", d.get("no_data_down") is True
        )

    def put(self, out: dict[str, Any]) -> None:
        out |= {"no_data_source": self.source, "no_data_cause": self.cause, "no_data_node": self.node}
        out["no_data_down"] = self.down


_NO_DATA = frozenset({"no_data_source", "no_data_cause", "no_data_node", "no_data_down"})


@dataclass(frozen=True, slots=True)
class EscalationNote:
    """The escalation step a message is sent for (`engine.escalation.escalation_note`): 1-based `step` of
    `steps`, taken after `after_seconds` unacknowledged (`after` as the policy spells it), to `receivers`."""

    policy: str = ""
    step: int = 0
    steps: int = 0
    after: str = ""
    after_seconds: int = 0
    receivers: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, value: object) -> EscalationNote | None:
        if not isinstance(value, Mapping):
            return None
        receivers = _texts(value.get("receivers")) or ()
        return cls(
            _str(value.get("policy")) or "",
            _int(value.get("step")) or 0,
            _int(value.get("steps")) or 0,
            _str(value.get("after")) or "",
            _int(value.get("after_seconds")) or 0,
            receivers,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"policy": self.policy, "step": self.step, "steps": self.steps, "after": self.after}
        return out | {"after_seconds": self.after_seconds, "receivers": list(self.receivers)}


@dataclass(frozen=True, slots=True)
class MemberFacts:
    """One member node of a storm, as its line is worded: `gpu-node-07: GPUXidError on 8/8 GPUs`."""

    where: str
    units: int = 0
    units_total: int | None = None

    @classmethod
    def from_json(cls, value: object) -> MemberFacts | None:
        if not isinstance(value, Mapping) or not isinstance(where := value.get("where"), str):
            return None
        return cls(where, _int(value.get("units")) or 0, _int(value.get("units_total")))

    def to_json(self) -> dict[str, Any]:
        return {"where": self.where, "units": self.units, "units_total": self.units_total}


def _members(value: object) -> tuple[MemberFacts, ...] | None:
    """All of them, or None when any is not facts: the members are then told by their stored headlines."""
    if not isinstance(value, list | tuple):
        return None
    members = tuple(MemberFacts.from_json(m) for m in value)
    return None if any(m is None for m in members) else members  # type: ignore[return-value]


def _scope(value: object) -> tuple[tuple[str, str], ...] | None:
    if not isinstance(value, list | tuple):
        return None
    return tuple((str(p[0]), str(p[1])) for p in value if isinstance(p, list | tuple) and len(p) == 2)


@dataclass(frozen=True, slots=True)
class Nearby:
    """A neighbour of the incident's node (the same rack) in maintenance: named in its messages, so whoever
    is paged knows that node is being worked on. `until` None: while the cluster says so (a cordon)."""

    node: str
    reason: str = ""
    until: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "reason": self.reason,
            "until": None if self.until is None else self.until.isoformat(),
        }

    @classmethod
    def listed(cls, value: object) -> tuple[Nearby, ...]:
        """From the stored list; a malformed item is left out."""
        out: list[Nearby] = []
        for item in value if isinstance(value, list) else ():
            if isinstance(item, dict) and (node := _str(item.get("node"))):
                until = item.get("until")
                when = parse_time(until) if isinstance(until, str) else None
                out.append(cls(node, _str(item.get("reason")) or "", when))
        return tuple(out)


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """A node incident (alerts of one kind on one node, or on one group of label values): `where` it is,
    `alertname`, which `units` (GPU indexes) alert of `units_total`, named `unit_name` (a rule's
    `count.name`; empty is GPUs). `where` or `alertname` None: stored before the facts were, so the
    message keeps its stored English headline."""

    headline: str | None = None
    where: str | None = None
    alertname: str | None = None
    units: tuple[str, ...] | None = None
    units_total: int | None = None
    unit_name: str | None = None
    tally: Tally = Tally()
    no_data_since: datetime | None = None
    no_data: NoData | None = None
    escalation: EscalationNote | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: NO_EXTRA)
    triage: GpuTriageFacts | None = None  # the GPU triage of its Xid alerts, when it has one
    nearby: tuple[Nearby, ...] = ()  # its neighbours in maintenance (`pipeline.maintenance`)

    @property
    def kind(self) -> IncidentKind:
        return IncidentKind.NODE

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> NodeFacts:
        since = d.get("no_data_since")
        triage = GpuTriageFacts.from_json(d.get("triage"))  # a malformed one is kept as it was (`extra`)
        known = _NODE_KEYS if triage is None else _NODE_KEYS | {"triage"}
        return cls(
            headline=_str(d.get("headline")),
            where=_str(d.get("where")),
            alertname=_str(d.get("alertname")),
            units=_texts(d.get("units")),
            units_total=_int(d.get("units_total")),
            unit_name=_str(d.get("unit_name")),
            tally=Tally.from_json(d),
            no_data_since=parse_time(since) if isinstance(since, str) else None,
            no_data=NoData.from_json(d),
            escalation=EscalationNote.from_json(d.get("escalation")),
            extra=_extra(d, known),
            triage=triage,
            nearby=Nearby.listed(d.get("nearby_maintenance")),
        )

    def to_json(self) -> dict[str, Any]:
        """The keys in the order the engine has always written them; `units_total` (null when unknown)
        with `units`."""
        out: dict[str, Any] = {}
        _put(out, "headline", self.headline)
        _put(out, "where", self.where)
        _put(out, "alertname", self.alertname)
        if self.units is not None:
            out |= {"units": list(self.units), "units_total": self.units_total}
        else:
            _put(out, "units_total", self.units_total)
        _put(out, "unit_name", self.unit_name)
        self.tally.put(out)
        _put(out, "no_data_since", None if self.no_data_since is None else self.no_data_since.isoformat())
        if self.no_data is not None:
            self.no_data.put(out)
        if self.triage is not None:
            out["triage"] = self.triage.to_json()
        if self.escalation is not None:
            out["escalation"] = self.escalation.to_json()
        if self.nearby:
            out["nearby_maintenance"] = [n.to_json() for n in self.nearby]
        return out | dict(self.extra)


_NODE_KEYS = (
    frozenset(
        {
            "headline",
            "where",
            "alertname",
            "units",
            "units_total",
            "unit_name",
            "no_data_since",
            "escalation",
            "nearby_maintenance",
        }
    )
    | _TALLY
    | _NO_DATA
)


@dataclass(frozen=True, slots=True)
class StormFacts:
    """A storm (a cluster incident): `alertname` on `nodes` nodes in `scope` (label name, value pairs),
    `units` of them alerting in all; the first members' English headlines (`members`) and the facts
    they are worded from in another language (`member_facts`). `scope` or `nodes` None: stored before
    the facts were, so the message keeps its stored English headline."""

    headline: str | None = None
    nodes: int | None = None
    units: int | None = None
    members: tuple[str, ...] | None = None
    alertname: str | None = None
    unit_name: str | None = None
    scope: tuple[tuple[str, str], ...] | None = None
    member_facts: tuple[MemberFacts, ...] | None = None
    tally: Tally = Tally()
    escalation: EscalationNote | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: NO_EXTRA)

    @property
    def kind(self) -> IncidentKind:
        return IncidentKind.CLUSTER

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> StormFacts:
        return cls(
            headline=_str(d.get("headline")),
            nodes=_int(d.get("nodes")),
            units=_int(d.get("units")),
            members=_texts(d.get("members")),
            alertname=_str(d.get("alertname")),
            unit_name=_str(d.get("unit_name")),
            scope=_scope(d.get("scope")),
            member_facts=_members(d.get("member_facts")),
            tally=Tally.from_json(d),
            escalation=EscalationNote.from_json(d.get("escalation")),
            extra=_extra(d, _STORM_KEYS),
        )

    def to_json(self) -> dict[str, Any]:
        """The keys in the order `pipeline.storms.storm_state` writes them."""
        out: dict[str, Any] = {}
        _put(out, "headline", self.headline)
        _put(out, "nodes", self.nodes)
        _put(out, "units", self.units)
        _put(out, "members", None if self.members is None else list(self.members))
        self.tally.put(out)
        _put(out, "alertname", self.alertname)
        _put(out, "unit_name", self.unit_name)
        _put(out, "scope", None if self.scope is None else [list(pair) for pair in self.scope])
        if self.member_facts is not None:
            out["member_facts"] = [m.to_json() for m in self.member_facts]
        if self.escalation is not None:
            out["escalation"] = self.escalation.to_json()
        return out | dict(self.extra)


_STORM_KEYS = (
    frozenset(
        {"headline", "nodes", "units", "members", "alertname", "unit_name", "scope", "member_facts", "escalation"}
    )
    | _TALLY
)

Facts = NodeFacts | StormFacts


def facts_from_json(kind: IncidentKind, data: object) -> Facts:
    """The facts of a stored summary of an incident of `kind`; anything not an object reads as none."""
    d: Mapping[str, Any] = data if isinstance(data, Mapping) else {}
    return StormFacts.from_json(d) if kind is IncidentKind.CLUSTER else NodeFacts.from_json(d)

"""What a node incident's message states of its GPU triage (`alertrouter.gpu.triage`): the root fault (GPU,
Xid, NVIDIA's meaning and action), the consequences folded into it by Xid with how many other GPUs reported
each, and the verdict with its reason as figures. Stored under `triage` in the incident's summary
(`message.facts.NodeFacts`), only for an incident that has one: every other summary stays as it was.
Reading is lenient like the other facts: a value of the wrong type reads as absent."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["FollowOnFacts", "GpuTriageFacts", "ReasonFacts"]


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


@dataclass(frozen=True, slots=True)
class FollowOnFacts:
    """`gpus` GPUs other than the root's reported consequence `xid` (`alerts` alerts of it in all)."""

    xid: int
    gpus: int = 0
    alerts: int = 0

    @classmethod
    def from_json(cls, value: object) -> FollowOnFacts | None:
        if not isinstance(value, Mapping) or (xid := _int(value.get("xid"))) is None:
            return None
        return cls(xid, _int(value.get("gpus")) or 0, _int(value.get("alerts")) or 0)

    def to_json(self) -> dict[str, Any]:
        return {"xid": self.xid, "gpus": self.gpus, "alerts": self.alerts}


@dataclass(frozen=True, slots=True)
class ReasonFacts:
    """Why the verdict (`gpu.triage.Reason`): `rule` (repeated_fatal, repeated_on_gpu, across_gpus), the
    `xid`, `count` occurrences or GPUs against `threshold` within `window_seconds`, on `gpus` GPUs, of
    `workload` ("" unknown)."""

    rule: str
    xid: int
    count: int = 0
    threshold: int = 0
    window_seconds: int = 0
    gpus: int = 0
    workload: str = ""

    @classmethod
    def from_json(cls, value: object) -> ReasonFacts | None:
        if not isinstance(value, Mapping) or (xid := _int(value.get("xid"))) is None:
            return None
        count, threshold, window, gpus = (
            _int(value.get(k)) or 0 for k in ("count", "threshold", "window_seconds", "gpus")
        )
        return cls(_str(value.get("rule")), xid, count, threshold, window, gpus, _str(value.get("workload")))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule, "xid": self.xid, "count": self.count, "threshold": self.threshold}
        return out | {"window_seconds": self.window_seconds, "gpus": self.gpus, "workload": self.workload}


@dataclass(frozen=True, slots=True)
class GpuTriageFacts:
    """The root: GPU `gpu` (its index, "" unknown) reported `xid` (`meaning`: NVIDIA's words); `action`:
    NVIDIA's immediate bucket (RESTART_BM), `action_class` the class a message words (reboot_node).
    `verdict`: HARDWARE, APPLICATION or UNKNOWN (then no `reason`)."""

    xid: int
    gpu: str = ""
    meaning: str = ""
    action: str = ""
    action_class: str = ""
    follow_ons: tuple[FollowOnFacts, ...] = ()
    verdict: str = "UNKNOWN"
    reason: ReasonFacts | None = None

    @classmethod
    def from_json(cls, value: object) -> GpuTriageFacts | None:
        if not isinstance(value, Mapping) or (xid := _int(value.get("xid"))) is None:
            return None
        raw = value.get("follow_ons")
        follow_ons = tuple(f for v in raw if (f := FollowOnFacts.from_json(v))) if isinstance(raw, list) else ()
        return cls(
            xid,
            _str(value.get("gpu")),
            _str(value.get("meaning")),
            _str(value.get("action")),
            _str(value.get("action_class")),
            follow_ons,
            _str(value.get("verdict")) or "UNKNOWN",
            ReasonFacts.from_json(value.get("reason")),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"xid": self.xid, "gpu": self.gpu, "meaning": self.meaning, "action": self.action}
        out |= {"action_class": self.action_class, "follow_ons": [f.to_json() for f in self.follow_ons]}
        out["verdict"] = self.verdict
        out["reason"] = None if self.reason is None else self.reason.to_json()
        return out

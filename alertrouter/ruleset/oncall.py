"""The `oncall:` section: people, on-call schedules (layers, rotations, overrides) and escalation policies.

Checked here on their own; what spans sections (a receiver mentioning a schedule, a route naming a
policy, a policy naming receivers) is checked by `ruleset.build` with the file and path of the item.
"""

from __future__ import annotations

import re
from datetime import datetime, time, timedelta
from typing import Any

from pydantic import Field, field_validator, model_validator

from alertrouter.pipeline.oncall import Layer, Override, Person, Rota, Schedule
from alertrouter.ruleset.base import Duration, Name, Section
from alertrouter.ruleset.schedule import zone

__all__ = [
    "EscalationPolicyConfig",
    "EscalationStepConfig",
    "LayerConfig",
    "OnCallConfig",
    "OverrideConfig",
    "PersonConfig",
    "RestrictConfig",
    "ScheduleConfig",
    "build_rota",
    "parse_local",
]

_CLOCK = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]*$")


def parse_local(value: Any) -> datetime:
    """`2026-11-02 10:00` (or ISO 8601 `2026-11-02T10:00`): a wall-clock time, with or without an offset."""
    if isinstance(value, datetime):
        return value
    text = str(value).strip()
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a date and time, e.g. '2026-11-02 10:00'") from None


def _clock(value: str) -> time:
    m = _CLOCK.match(value)
    if m is None:
        raise ValueError(f"{value!r} is not a time of day HH:MM, e.g. '20:00'")
    return time(int(m.group(1)), int(m.group(2)))


def _name(value: str) -> str:
    if not _NAME.match(value):
        raise ValueError(f"{value!r}: names are letters, digits, and . _ - @ (no spaces)")
    return value


class PersonConfig(Section):
    """Someone who can be on call; any of the ways to reach them may be empty (`${ONCALL_..._MOBILE:-}`)."""

    name: str = Field(description="How schedules and overrides name them, e.g. li.lei")
    display_name: str = Field("", description="How messages and the console show them; default: name")
    mobile: str = Field("", description="Phone number: SMS and voice calls, DingTalk/WeCom @mobile")
    dingtalk: str = Field("", description="DingTalk user id (atUserIds)")
    wecom: str = Field("", description="WeCom user id (mentioned_list)")
    email: str = ""

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        return _name(value)


class RestrictConfig(Section):
    """The daily local hours a layer covers, `from` included, `to` excluded; `20:00`-`08:00` wraps midnight."""

    from_: str = Field(alias="from")
    to: str

    @field_validator("from_", "to")
    @classmethod
    def _time(cls, value: str) -> str:
        _clock(value)
        return value

    @model_validator(mode="after")
    def _not_empty(self) -> RestrictConfig:
        if self.from_ == self.to:
            raise ValueError("from and to are the same time: leave `restrict` out for a layer that covers all day")
        return self


class LayerConfig(Section):
    name: str = ""
    people: list[str] = Field(min_length=1, description="In turn, the first from `start`")
    rotation: Duration = Field(description="Length of one turn, e.g. 1w, 1d, 12h")
    start: str = Field(description="Local date and handover time of the first turn, e.g. '2026-11-02 10:00'")
    restrict: RestrictConfig | None = None

    @field_validator("rotation")
    @classmethod
    def _rotation(cls, value: timedelta) -> timedelta:
        if value < timedelta(hours=1):
            raise ValueError("a rotation is at least 1h")
        return value

    @field_validator("start")
    @classmethod
    def _start(cls, value: Any) -> str:
        parsed = parse_local(value)
        if parsed.tzinfo is not None:
            raise ValueError("start is a local time in the schedule's time zone: leave the offset out")
        return str(value)


class OverrideConfig(Section):
    """`person` covers from `from` to `to` (local times of the schedule): a swap, a holiday cover."""

    from_: str = Field(alias="from")
    to: str
    person: str
    note: str = ""

    @field_validator("from_", "to", mode="before")
    @classmethod
    def _when(cls, value: Any) -> str:
        parse_local(value)
        return str(value)

    @model_validator(mode="after")
    def _ordered(self) -> OverrideConfig:
        start, end = parse_local(self.from_), parse_local(self.to)
        if (start.tzinfo is None) != (end.tzinfo is None):
            raise ValueError("from and to must both have an offset or both be local times")
        if end <= start:
            raise ValueError("`to` must be after `from`")
        return self


class ScheduleConfig(Section):
    name: str
    description: str = ""
    timezone: str = Field("Asia/Shanghai", description="IANA zone of the layers' starts, hours and overrides")
    layers: list[LayerConfig] = Field(min_length=1, description="A later layer wins where it has someone on call")
    overrides: list[OverrideConfig] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        return _name(value)

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        zone(value)
        return value


class EscalationStepConfig(Section):
    after: Duration = Field(description="Since the incident's first message, e.g. 10m")
    receivers: list[str] = Field(min_length=1)


class EscalationPolicyConfig(Section):
    """What happens while an incident is not acknowledged: each step notifies its receivers `after` the
    incident's first message; an acknowledgement or the resolve stops the chain."""

    name: Name
    severities: list[str] = Field(default_factory=lambda: ["critical"])
    steps: list[EscalationStepConfig] = Field(min_length=1)

    @model_validator(mode="after")
    def _increasing(self) -> EscalationPolicyConfig:
        previous = timedelta(0)
        for i, step in enumerate(self.steps):
            if step.after <= previous:
                raise ValueError(
                    f"steps[{i}].after ({step.after}) must be later than the step before it"
                    + (" and than the first message (0s)" if i == 0 else "")
                )
            previous = step.after
        return self


class OnCallConfig(Section):
    people: list[PersonConfig] = Field(default_factory=list)
    schedules: list[ScheduleConfig] = Field(default_factory=list)
    escalations: list[EscalationPolicyConfig] = Field(default_factory=list)


def _schedule(cfg: ScheduleConfig) -> Schedule:
    tz = zone(cfg.timezone)
    layers = []
    for i, layer in enumerate(cfg.layers):
        restrict = None if layer.restrict is None else (_clock(layer.restrict.from_), _clock(layer.restrict.to))
        layers.append(
            Layer(
                name=layer.name or f"layers[{i}]",
                people=tuple(layer.people),
                rotation=layer.rotation,
                start=parse_local(layer.start),
                restrict=restrict,
            )
        )
    overrides = []
    for o in cfg.overrides:
        start, end = parse_local(o.from_), parse_local(o.to)
        if start.tzinfo is None:
            start, end = start.replace(tzinfo=tz), end.replace(tzinfo=tz)
        overrides.append(Override(start, end, o.person))
    return Schedule(cfg.name, tz, tuple(layers), tuple(overrides), timezone=cfg.timezone)


def build_rota(cfg: OnCallConfig | None) -> Rota:
    """The pure rota of a validated section (the cross-checks have passed)."""
    if cfg is None:
        return Rota()
    people = {p.name: Person(p.name, p.display_name, p.mobile, p.dingtalk, p.wecom, p.email) for p in cfg.people}
    return Rota(people=people, schedules={s.name: _schedule(s) for s in cfg.schedules})

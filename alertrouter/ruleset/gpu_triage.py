"""The `gpu_triage:` section: how GPU Xid alerts are triaged (`alertrouter.gpu.triage`) and the label naming
each alert's action class; compiled to `TriageRules`, `ActionLabel` and the pipeline's `FollowOnRules`.

    gpu_triage:
      action_label: xid_action      # "" adds no label
      follow_on_window: 5m
      follow_on_hold: 30s           # a consequence's first message waits this long for its root
      burst: 3m                     # starts of one Xid on one GPU this close are one time
      consequences: [45, 94, 95, 154, 159, 171, 172]   # absent: NVIDIA's catalog's
      hardware: {count: 5, window: 24h}                # the same fatal Xid on one GPU
      diagnose: {xids: [13, 31], count: 2, window: 24h} # these twice on the same GPU
      application: {gpus: 2, window: 24h}              # one application Xid on this many GPUs

Without the section the defaults above apply (they are `TriageRules()`'s).
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field, field_validator

from alertrouter.gpu.labels import ACTION_LABEL, ActionLabel
from alertrouter.gpu.triage import DEFAULT_RULES, TriageRules
from alertrouter.gpu.xid import lookup
from alertrouter.labels import is_valid_label_name
from alertrouter.pipeline.folding import FollowOnRules
from alertrouter.ruleset.base import Duration, Section

__all__ = ["GpuTriageConfig", "action_label", "follow_on_rules", "triage_rules"]

_D = DEFAULT_RULES


def _positive(value: timedelta) -> timedelta:
    if value <= timedelta(0):
        raise ValueError("must be more than 0s")
    return value


def _catalogued(codes: list[int]) -> list[int]:
    unknown = [c for c in codes if not lookup(c).known]
    if unknown:
        raise ValueError(f"not in NVIDIA's Xid catalog: {', '.join(map(str, unknown))}")
    if len(set(codes)) != len(codes):
        raise ValueError("codes must not repeat")
    return codes


class _Windowed(Section):
    @field_validator("window", check_fields=False)
    @classmethod
    def _window(cls, value: timedelta) -> timedelta:
        return _positive(value)


class RepeatConfig(_Windowed):
    count: int = Field(_D.hardware_count, ge=2, description="Occurrences of one fatal Xid on one GPU")
    window: Duration = Field(_D.hardware_window, description="Counted within this long, up to the latest")


class DiagnoseConfig(_Windowed):
    xids: list[int] = Field(default_factory=lambda: sorted(_D.diagnose_xids), description="Xids to count")
    count: int = Field(_D.diagnose_count, ge=2, description="Occurrences of one of `xids` on one GPU")
    window: Duration = _D.diagnose_window

    @field_validator("xids")
    @classmethod
    def _xids(cls, value: list[int]) -> list[int]:
        return _catalogued(value)


class ApplicationConfig(_Windowed):
    gpus: int = Field(_D.application_gpus, ge=2, description="Different GPUs of one workload with one Xid")
    window: Duration = _D.application_window


class GpuTriageConfig(Section):
    """See `alertrouter.gpu.triage` for the rules."""

    action_label: str = Field(ACTION_LABEL, description="Label naming each Xid alert's action class; '' none")
    follow_on_window: Duration = Field(
        _D.follow_on_window, description="A consequence Xid this soon after a root's start is folded into it"
    )
    follow_on_hold: Duration = Field(
        FollowOnRules().hold_down, description="A consequence's first message waits this long for a late root"
    )
    burst: Duration = Field(_D.burst, description="Starts of one Xid on one GPU this close together count once")
    consequences: list[int] | None = Field(None, description="Xids that are consequences; absent: the catalog's")
    hardware: RepeatConfig = Field(default_factory=lambda: RepeatConfig())
    diagnose: DiagnoseConfig = Field(default_factory=lambda: DiagnoseConfig())
    application: ApplicationConfig = Field(default_factory=lambda: ApplicationConfig())

    @field_validator("action_label")
    @classmethod
    def _label(cls, value: str) -> str:
        if value and not is_valid_label_name(value):
            raise ValueError(f"invalid label name {value!r}")
        return value

    @field_validator("follow_on_window")
    @classmethod
    def _follow(cls, value: timedelta) -> timedelta:
        return _positive(value)

    @field_validator("follow_on_hold")
    @classmethod
    def _hold(cls, value: timedelta) -> timedelta:
        if value < timedelta(0):
            raise ValueError("must be 0s or more")
        return value

    @field_validator("burst")
    @classmethod
    def _burst(cls, value: timedelta) -> timedelta:
        if value < timedelta(0):
            raise ValueError("must be 0s or more")
        return value

    @field_validator("consequences")
    @classmethod
    def _consequences(cls, value: list[int] | None) -> list[int] | None:
        return None if value is None else _catalogued(value)


def triage_rules(config: GpuTriageConfig) -> TriageRules:
    return TriageRules(
        follow_on_window=config.follow_on_window,
        burst=config.burst,
        consequences=None if config.consequences is None else frozenset(config.consequences),
        hardware_count=config.hardware.count,
        hardware_window=config.hardware.window,
        diagnose_xids=frozenset(config.diagnose.xids),
        diagnose_count=config.diagnose.count,
        diagnose_window=config.diagnose.window,
        application_gpus=config.application.gpus,
        application_window=config.application.window,
    )


def action_label(config: GpuTriageConfig) -> ActionLabel:
    return ActionLabel(config.action_label)


def follow_on_rules(config: GpuTriageConfig) -> FollowOnRules:
    """How the pipeline folds follow-on Xids (`pipeline.folding`); the root's action goes in `action_label`."""
    return FollowOnRules(triage_rules(config), config.follow_on_hold, config.action_label)

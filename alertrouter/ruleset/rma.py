"""The `rma:` section: when a GPU is an RMA candidate, from its own history; compiled to `gpu.rma.RmaRule`.

    rma:
      rules:
        - name: dbe-repeated
          xids: [48]            # and/or alertnames: [GPURowRemapFailure]
          count: 2
          window: 30d
          description: double-bit ECC error again after the reset that remaps its row

A rule counts a GPU's events matching its Xids or alertnames within `window`; `count` of them make the
GPU a candidate. Without the section the shipped defaults apply (`gpu.rma.DEFAULT_RULES`, also written
out in rules/rma.yml); `rules: []` makes no GPU a candidate.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field, field_validator, model_validator

from alertrouter.gpu.rma import DEFAULT_RULES, RmaRule
from alertrouter.ruleset.base import Duration, Name, Section

__all__ = ["RmaConfig", "RmaRuleConfig", "rma_rules"]

_MAX_XID = 100_000  # as `gpu.xid`: no Xid NVIDIA has numbered is near it


class RmaRuleConfig(Section):
    name: Name
    xids: list[int] = Field(default_factory=list, description="Xid codes that count (e.g. 48 double-bit ECC)")
    alertnames: list[Name] = Field(default_factory=list, description="GPU alerts without an Xid that count")
    count: int = Field(ge=1, description="How many matching events within `window` make a candidate")
    window: Duration = Field(description="e.g. 30d; the events counted are at most this far apart")
    description: str = ""

    @field_validator("xids")
    @classmethod
    def _xids(cls, value: list[int]) -> list[int]:
        bad = [x for x in value if not 0 < x < _MAX_XID]
        if bad:
            raise ValueError(f"not an Xid: {', '.join(map(str, bad))} (a whole number from 1)")
        return value

    @field_validator("window")
    @classmethod
    def _window(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("must be more than 0s")
        return value

    @model_validator(mode="after")
    def _something(self) -> RmaRuleConfig:
        if not self.xids and not self.alertnames:
            raise ValueError("needs xids or alertnames (which events count)")
        return self


def _defaults() -> list[RmaRuleConfig]:
    return [
        RmaRuleConfig(
            name=r.name,
            xids=sorted(r.xids),
            alertnames=sorted(r.alertnames),
            count=r.count,
            window=r.window,
            description=r.description,
        )
        for r in DEFAULT_RULES
    ]


class RmaConfig(Section):
    """See `alertrouter.gpu.rma` for how a rule is evaluated and where the defaults come from."""

    rules: list[RmaRuleConfig] = Field(default_factory=_defaults)

    @field_validator("rules")
    @classmethod
    def _unique(cls, value: list[RmaRuleConfig]) -> list[RmaRuleConfig]:
        names = [r.name for r in value]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"rule names must be unique: {', '.join(twice)}")
        return value


def rma_rules(config: RmaConfig) -> tuple[RmaRule, ...]:
    return tuple(
        RmaRule(
            name=r.name,
            count=r.count,
            window=r.window,
            xids=frozenset(r.xids),
            alertnames=frozenset(r.alertnames),
            description=r.description,
        )
        for r in config.rules
    )

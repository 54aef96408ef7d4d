"""The `stale:` section: when a resolve is not told because the alert's data stopped (its node or
exporter went dark), and how long it waits; compiled to `pipeline.stale.StaleRule`.

    stale:
      source_down: ['alertname=~"NodeDown|DCGMExporterDown|KubeNodeNotReady"']
      targets: ['alertname=~"GPU.*|HAMi.*"']
      window: 2m
      together: 2       # or `all`
      hold: 20m
      settle: 2m

Without the section nothing is stale: every resolve is told as it comes (Alertmanager's behaviour).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import Field, field_validator, model_validator

from alertrouter.pipeline.stale import StaleRule
from alertrouter.ruleset.base import Duration, Matchers, Section

__all__ = ["StaleConfig", "stale_rule"]


class StaleConfig(Section):
    """See docs/en/architecture.md, "Stale is not resolved", and `alertrouter.pipeline.stale` for the rule."""

    enabled: bool = True
    source_down: Matchers = Field(
        default_factory=list,
        description="Alerts that say a node's data stopped (NodeDown, DCGMExporterDown, KubeNodeNotReady...); "
        "the node is the derived node label",
    )
    targets: Matchers = Field(
        default_factory=list,
        description="The alerts that may go stale; empty: every alert that is not a source-down one",
    )
    window: Duration = Field(
        timedelta(minutes=2),
        description="A resolve waits this long for a source-down alert of its node; resolves of one exporter "
        "this close together count as together. About 2x Alertmanager's group_interval",
    )
    together: int | Literal["all"] = Field(
        2, description="How many alerts of one exporter on one node resolving together make them stale (>= 2), or all"
    )
    hold: Duration = Field(
        timedelta(minutes=20),
        description="How long alerts that resolved together stay stale waiting for a source-down alert "
        "(Kubernetes' KubeNodeNotReady starts about 17m after the node died: for: 15m after NotReady)",
    )
    settle: Duration = Field(
        timedelta(minutes=2),
        description="After the source is back, how long a stale alert waits to fire again before its resolve is told",
    )

    @field_validator("together")
    @classmethod
    def _together(cls, value: int | str) -> int | str:
        if isinstance(value, int) and value < 2:
            raise ValueError("must be 2 or more, or `all` (one alert resolving is not together)")
        return value

    @field_validator("window", "hold", "settle")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("must be more than 0s")
        return value

    @model_validator(mode="after")
    def _check(self) -> StaleConfig:
        if self.enabled and not self.source_down:
            raise ValueError("source_down: needs at least one matcher (which alerts say a node went dark)")
        if self.hold < self.window:
            raise ValueError("hold: must be at least window")
        return self


def stale_rule(config: StaleConfig | None) -> StaleRule:
    if config is None or not config.enabled:
        return StaleRule()
    return StaleRule(
        enabled=True,
        source_down=tuple(config.source_down),
        targets=tuple(config.targets),
        window=config.window,
        together=None if config.together == "all" else config.together,
        hold=config.hold,
        settle=config.settle,
    )

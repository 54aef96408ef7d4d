"""The `route:` section: Alertmanager's route tree, with repeat intervals per severity, repeat caps and escalation."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from alertrouter.ruleset.base import Duration, LegacyMap, Matchers, Section

__all__ = ["ALL_SEVERITIES", "UNLIMITED_REPEATS", "RouteConfig"]


def _intervals(value: Any) -> Any:
    """`repeat_interval: 1h` means 1h for every severity, as an Alertmanager user expects (`*` is
    expanded to each of `global.severities` and `default` when the pipeline is built)."""
    return value if isinstance(value, dict) or value is None else {ALL_SEVERITIES: value}


ALL_SEVERITIES = "*"


def _unlimited(value: Any) -> Any:
    return UNLIMITED_REPEATS if value == "unlimited" else value


UNLIMITED_REPEATS = -1  # `max_repeats: unlimited`, to lift a cap set higher up the route tree


class RouteConfig(Section):
    receiver: str | None = None
    matchers: Matchers = Field(default_factory=list)
    match: LegacyMap = Field(default_factory=dict)
    match_re: LegacyMap = Field(default_factory=dict)
    continue_: bool = Field(False, alias="continue")
    routes: list[RouteConfig] = Field(default_factory=list)
    repeat_interval: Annotated[dict[str, Duration] | None, BeforeValidator(_intervals)] = None
    group_wait: Duration | None = None
    group_interval: Duration | None = None
    send_resolved: bool | None = None
    max_repeats: Annotated[int | None, BeforeValidator(_unlimited), Field(ge=-1)] = None
    mute_time_intervals: list[str] = Field(
        default_factory=list, description="Names of time intervals during which this route sends nothing"
    )
    active_time_intervals: list[str] = Field(
        default_factory=list, description="Names of time intervals outside which this route sends nothing"
    )
    escalation: str | None = Field(
        None, description="An escalation policy of `oncall.escalations` (inherited by child routes; `none`: off)"
    )

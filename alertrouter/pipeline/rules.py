"""The rules compiled for the pipeline: each stage's own types, nothing of the YAML."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from alertrouter.pipeline.aggregate import AggregationRule
from alertrouter.pipeline.escalation import EscalationPolicy
from alertrouter.pipeline.folding import FollowOnRules
from alertrouter.pipeline.inhibit import InhibitRule
from alertrouter.pipeline.nodes import NodeIdentity
from alertrouter.pipeline.oncall import Rota
from alertrouter.pipeline.route import Route
from alertrouter.pipeline.stale import DISABLED, StaleRule
from alertrouter.pipeline.timeinterval import TimeInterval

__all__ = ["CompiledRules"]


@dataclass(frozen=True, slots=True)
class CompiledRules:
    """Everything the engine needs from the rules, as the stages' own types (`ruleset.build.compile_rules`
    makes it from a validated `Ruleset`)."""

    nodes: NodeIdentity
    inhibit_rules: tuple[InhibitRule, ...]
    aggregation: tuple[AggregationRule, ...]
    route: Route
    receivers: tuple[str, ...]
    severity_label: str
    severities: tuple[str, ...]
    time_intervals: Mapping[str, TimeInterval] = field(default_factory=dict)  # by name, for routes' mutes
    escalations: Mapping[str, EscalationPolicy] = field(default_factory=dict)  # by name, for routes' `escalation`
    rota: Rota = field(default_factory=Rota)  # people and on-call schedules
    stale: StaleRule = DISABLED  # when a resolve is not told because its data stopped (`pipeline.stale`)
    # follow-on Xids folded into their root (`pipeline.folding`)
    follow_ons: FollowOnRules = field(default_factory=FollowOnRules)

"""The shape of a rules file and of the merged `Ruleset`, with the sections too small for a module of their own."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator

from alertrouter.labels import is_valid_label_name
from alertrouter.message.i18n import DEFAULT_LANGUAGE, DEFAULT_TIMEZONE, LANGUAGES, Locale
from alertrouter.ruleset.base import Duration, LegacyMap, Matchers, Name, Section, known_language, scalar_text
from alertrouter.ruleset.channels import ChannelConfig
from alertrouter.ruleset.gpu_triage import GpuTriageConfig
from alertrouter.ruleset.heartbeats import HeartbeatConfig
from alertrouter.ruleset.jobs import JobsConfig
from alertrouter.ruleset.maintenance import MaintenanceConfig
from alertrouter.ruleset.oncall import OnCallConfig
from alertrouter.ruleset.receivers import ReceiverConfig
from alertrouter.ruleset.rma import RmaConfig
from alertrouter.ruleset.routes import RouteConfig
from alertrouter.ruleset.schedule import zone
from alertrouter.ruleset.stale import StaleConfig
from alertrouter.ruleset.time_intervals import TimeIntervalConfig
from alertrouter.ruleset.topology import TopologyConfig

__all__ = [
    "AggregationConfig",
    "CountConfig",
    "GlobalConfig",
    "InhibitRuleConfig",
    "RollupConfig",
    "RuleFile",
    "Ruleset",
]

# The default `global.node_labels`: an alert's own labels tried in order to name its node (not the
# topology labels `topology.prometheus` reads from kube_node_labels, `ruleset.topology.DEFAULT_NODE_LABELS`).
_GLOBAL_NODE_LABELS_DEFAULT = ["node", "hostname", "Hostname", "nodename", "kubernetes_node", "instance"]


def _off_is_none(value: Any) -> Any:
    return None if value is False or value == "off" else value


class GlobalConfig(Section):
    node_labels: list[str] = Field(
        default_factory=lambda: list(_GLOBAL_NODE_LABELS_DEFAULT),
        description="Labels tried in order to name an alert's node; `instance` loses its :port",
    )
    node_label: str = Field("node", description="Label under which the derived node key is exposed to rules")
    severity_label: str = "severity"
    severities: list[str] = Field(default_factory=lambda: ["critical", "warning", "info"], description="Worst first")
    external_url: str | None = Field(None, description="Base URL of this alertrouter, for links in messages")
    language: str = Field(
        DEFAULT_LANGUAGE, description=f"Language of messages: {' or '.join(LANGUAGES)} (a receiver may override it)"
    )
    timezone: str = Field(
        DEFAULT_TIMEZONE, description="IANA time zone of every time in messages (a receiver may override it)"
    )

    runbook_hosts: list[str] = Field(
        default_factory=list,
        description="Hosts whose `runbook_url` annotation a message shows as its runbook link (http or https); "
        "an annotation is data from whoever fires alerts, so no other URL is ever made a link",
    )

    @field_validator("language")
    @classmethod
    def _language(cls, value: str) -> str:
        return known_language(value)

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        zone(value)
        return value

    @field_validator("node_labels", "severities")
    @classmethod
    def _non_empty_unique(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("must name at least one label")
        if len(set(value)) != len(value):
            raise ValueError("labels must not repeat")
        return value


class InhibitRuleConfig(Section):
    """Alertmanager's inhibit rule. No matchers on a side (or only `{}`) means every alert, as there:
    `target_matchers: [severity="warning"]` alone mutes warnings while any other alert with the same
    `equal` labels fires. With neither side nothing is muted (two alerts that both match both sides
    never mute each other)."""

    name: str | None = None
    source_matchers: Matchers = Field(default_factory=list)
    target_matchers: Matchers = Field(default_factory=list)
    source_match: LegacyMap = Field(default_factory=dict)
    source_match_re: LegacyMap = Field(default_factory=dict)
    target_match: LegacyMap = Field(default_factory=dict)
    target_match_re: LegacyMap = Field(default_factory=dict)
    equal: list[Annotated[str, BeforeValidator(scalar_text)]] = Field(default_factory=list)
    hold_down: Duration = timedelta(seconds=30)

    @field_validator("equal")
    @classmethod
    def _label_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not is_valid_label_name(name):
                raise ValueError(f"invalid label name {name!r} in equal list (must be non-empty UTF-8)")
        return value


class CountConfig(Section):
    label: str = Field(description="Label whose distinct values are counted, e.g. gpu")
    per_group: int | None = Field(None, ge=1, description="The denominator, e.g. 8 GPUs per node")
    name: str = "GPUs"


class RollupConfig(Section):
    threshold: int = Field(5, ge=1)
    window: Duration = timedelta(minutes=2)
    by: list[str] = Field(default_factory=lambda: ["alertname"])
    scope_labels: list[str] = Field(default_factory=lambda: ["region", "rack", "cluster"])


class AggregationConfig(Section):
    name: Name
    matchers: Matchers = Field(default_factory=list)
    group_by: list[str] = Field(default_factory=lambda: ["alertname", "node"], min_length=1)
    count: CountConfig | None = None
    group_wait: Duration | None = None
    group_interval: Duration | None = None
    rollup: Annotated[RollupConfig | None, BeforeValidator(_off_is_none)] = None


class RuleFile(Section):
    """One YAML file: any subset of the sections. Files are merged in name order."""

    global_: GlobalConfig | None = Field(None, alias="global")
    topology: TopologyConfig | None = None
    inhibit_rules: list[InhibitRuleConfig] | None = None
    aggregation: list[AggregationConfig] | None = None
    route: RouteConfig | None = None
    receivers: list[ReceiverConfig] | None = None
    channels: list[ChannelConfig] | None = None
    time_intervals: list[TimeIntervalConfig] | None = None
    mute_time_intervals: list[TimeIntervalConfig] | None = Field(
        None, description="Alertmanager's deprecated name for time_intervals; both are read"
    )
    oncall: OnCallConfig | None = None
    heartbeats: list[HeartbeatConfig] | None = None
    stale: StaleConfig | None = None
    gpu_triage: GpuTriageConfig | None = None
    rma: RmaConfig | None = None
    maintenance: MaintenanceConfig | None = None
    jobs: JobsConfig | None = None


class Ruleset(Section):
    """The merged, validated configuration the server runs on (see `ruleset.build` for the stages)."""

    global_: GlobalConfig = Field(default_factory=lambda: GlobalConfig(), alias="global")
    topology: TopologyConfig = Field(default_factory=lambda: TopologyConfig())
    inhibit_rules: list[InhibitRuleConfig] = Field(default_factory=list)
    aggregation: list[AggregationConfig] = Field(default_factory=list)
    route: RouteConfig | None = None
    receivers: list[ReceiverConfig] = Field(default_factory=list)
    channels: list[ChannelConfig] = Field(default_factory=list)
    time_intervals: list[TimeIntervalConfig] = Field(default_factory=list)
    mute_time_intervals: list[TimeIntervalConfig] = Field(default_factory=list)
    oncall: OnCallConfig = Field(default_factory=lambda: OnCallConfig())
    heartbeats: list[HeartbeatConfig] = Field(default_factory=list)
    stale: StaleConfig | None = None  # None: nothing is stale (every resolve told as it comes)
    gpu_triage: GpuTriageConfig = Field(default_factory=lambda: GpuTriageConfig())
    rma: RmaConfig = Field(default_factory=lambda: RmaConfig())  # the shipped defaults unless a file says
    maintenance: MaintenanceConfig = Field(default_factory=lambda: MaintenanceConfig())
    jobs: JobsConfig | None = None  # None: no job views nor job messages
    sources: tuple[str, ...] = ()
    config_hash: str = ""
    origins: dict[str, list[str]] = Field(
        default_factory=dict, description="section -> 'file:section[i]' per item, for problems found after merging"
    )

    def locale(self, receiver: str) -> Locale:
        """The language and time zone of `receiver`'s messages: its own, else `global`'s."""
        config = next((r for r in self.receivers if r.name == receiver), None)
        language = (config.language if config else None) or self.global_.language
        return Locale(language, (config.timezone if config else None) or self.global_.timezone)

    def origin(self, section: str, index: int | None = None) -> tuple[str, str]:
        """(file, path) of a section or of one item of a list section."""
        where = self.origins.get(section)
        if not where:
            return "(defaults)", section if index is None else f"{section}[{index}]"
        item = where[index] if index is not None and index < len(where) else where[0]
        file, _, path = item.rpartition(":")
        return file, path

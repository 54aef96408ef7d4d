"""The shape of a rules file and of the merged `Ruleset`, with the sections too small for a module of their own."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BeforeValidator, Field, SecretStr, field_validator, model_validator

from alertrouter.i18n import DEFAULT_LANGUAGE, DEFAULT_TIMEZONE, LANGUAGES, Locale
from alertrouter.labels import is_valid_label_name
from alertrouter.ruleset.base import Duration, LegacyMap, Matchers, Section, known_language, scalar_text
from alertrouter.ruleset.channels import (
    SECRET_FIELDS,
    AliyunSmsConfig,
    ChannelConfig,
    DingTalkChannelConfig,
    EmailChannelConfig,
    FeishuChannelConfig,
    GenericSmsConfig,
    RateLimitConfig,
    RetryConfig,
    SmsChannelConfig,
    TencentSmsConfig,
    WeComChannelConfig,
)
from alertrouter.ruleset.heartbeats import HeartbeatConfig
from alertrouter.ruleset.oncall import OnCallConfig
from alertrouter.ruleset.receivers import ReceiverConfig
from alertrouter.ruleset.routes import RouteConfig
from alertrouter.ruleset.schedule import zone
from alertrouter.ruleset.stale import StaleConfig
from alertrouter.ruleset.time_intervals import TimeIntervalConfig

__all__ = [
    "SECRET_FIELDS",
    "AggregationConfig",
    "AliyunSmsConfig",
    "ChannelConfig",
    "CountConfig",
    "DingTalkChannelConfig",
    "EmailChannelConfig",
    "FeishuChannelConfig",
    "GenericSmsConfig",
    "GlobalConfig",
    "InhibitRuleConfig",
    "PrometheusLookupConfig",
    "RateLimitConfig",
    "RetryConfig",
    "RollupConfig",
    "RuleFile",
    "Ruleset",
    "SmsChannelConfig",
    "TencentSmsConfig",
    "TopologyConfig",
    "WeComChannelConfig",
]

_DEFAULT_NODE_LABELS = ["node", "hostname", "Hostname", "nodename", "kubernetes_node", "instance"]


def _off_is_none(value: Any) -> Any:
    return None if value is False or value == "off" else value


class GlobalConfig(Section):
    node_labels: list[str] = Field(
        default_factory=lambda: list(_DEFAULT_NODE_LABELS),
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


LookupSeries = Literal["node_uname_info", "kube_node_info", "kube_pod_info", "kube_node_labels"]
LOOKUP_SERIES: tuple[LookupSeries, ...] = ("node_uname_info", "kube_node_info", "kube_pod_info", "kube_node_labels")
# kube-state-metrics' `kube_node_labels` names: a node label `topology.kubernetes.io/zone` is
# `label_topology_kubernetes_io_zone`; the first present of each list gives the alertrouter label.
DEFAULT_NODE_LABELS = {
    "region": ["label_topology_kubernetes_io_region", "label_failure_domain_beta_kubernetes_io_region"],
    "zone": ["label_topology_kubernetes_io_zone", "label_failure_domain_beta_kubernetes_io_zone"],
    "rack": ["label_rack"],
}
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def _one_or_many(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: [v] if isinstance(v, str) else v for k, v in value.items()}
    return value


class PrometheusLookupConfig(Section):
    """Read which address (and pod) is which node, and the nodes' topology labels, from Prometheus."""

    url: str = Field(description="Base URL of the Prometheus HTTP API, e.g. http://prometheus:9090")
    refresh: Duration = Field(timedelta(minutes=1), description="How often the series are read again")
    timeout: Duration = Field(timedelta(seconds=10), description="For each query")
    bearer_token: SecretStr | None = Field(None, description="Sent as `Authorization: Bearer`; a ${ENV} reference")
    keep_for: Duration | None = Field(
        None,
        description="How long a discovered name stays in force after the last answer that had it (Prometheus "
        "down, or the series gone with a dead node); default: topology.learned_alias_ttl",
    )
    series: list[LookupSeries] = Field(default_factory=lambda: list(LOOKUP_SERIES), description="Which series to read")
    node_labels: Annotated[dict[str, list[str]], BeforeValidator(_one_or_many)] = Field(
        default_factory=lambda: {k: list(v) for k, v in DEFAULT_NODE_LABELS.items()},
        description="alertrouter label -> kube_node_labels label names, the first present wins",
    )

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"must be an http:// or https:// URL with a host, e.g. http://prometheus:9090, not {value!r}"
            )
        if parts.query or parts.fragment:
            raise ValueError("must be the base URL of Prometheus, without ?query or #fragment")
        try:
            parts.port  # noqa: B018 - raises on a port that is not a number or out of range
        except ValueError as exc:
            raise ValueError(f"invalid port: {exc}") from None
        return value.rstrip("/")

    @field_validator("refresh", "timeout")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value < timedelta(seconds=1):
            raise ValueError("must be at least 1s")
        return value

    @field_validator("series")
    @classmethod
    def _some_series(cls, value: list[LookupSeries]) -> list[LookupSeries]:
        if not value:
            raise ValueError("must name at least one series")
        return list(dict.fromkeys(value))

    @field_validator("node_labels")
    @classmethod
    def _label_names(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for target, names in value.items():
            for name in [target, *names]:
                if not _LABEL_NAME.fullmatch(name):
                    raise ValueError(f"{name!r} is not a Prometheus label name")
            if not names:
                raise ValueError(f"{target}: name at least one kube_node_labels label")
        return value


class TopologyConfig(Section):
    """Labels for nodes whose alerts lack them, and other names (IPs) of nodes."""

    nodes: dict[str, dict[str, str]] = Field(default_factory=dict)
    aliases: dict[str, str] = Field(default_factory=dict)
    learned_alias_ttl: Duration = Field(
        timedelta(days=7),
        description="How long an address learned from an alert (IP instance + hostname) stays that node's "
        "without being seen again; 0s learns nothing. `aliases` always win over learned ones",
    )
    prometheus: PrometheusLookupConfig | None = Field(
        None, description="Off unless set: discover addresses, pods and topology labels of nodes from Prometheus"
    )

    @property
    def lookup_keep_for(self) -> timedelta:
        """How long a discovered name outlives the last answer that had it."""
        if self.prometheus is not None and self.prometheus.keep_for is not None:
            return self.prometheus.keep_for
        return self.learned_alias_ttl

    @model_validator(mode="after")
    def _keep_outlives_refresh(self) -> TopologyConfig:
        lookup = self.prometheus
        if lookup is not None and self.lookup_keep_for <= lookup.refresh:
            where = (
                "prometheus.keep_for"
                if lookup.keep_for is not None
                else "learned_alias_ttl (prometheus.keep_for unset)"
            )
            raise ValueError(
                f"{where} must be longer than prometheus.refresh ({lookup.refresh}), or every name "
                "discovered would lapse between two refreshes"
            )
        return self


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
    name: str
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

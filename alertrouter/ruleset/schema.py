"""The shape of the rules configuration; every section rejects unknown keys so typos are errors."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BeforeValidator, Field, SecretStr, field_validator, model_validator

from alertrouter.i18n import DEFAULT_LANGUAGE, DEFAULT_TIMEZONE, LANGUAGES, Locale
from alertrouter.labels import is_valid_label_name
from alertrouter.pipeline.timeinterval import (
    parse_clock,
    parse_days_of_month,
    parse_location,
    parse_months,
    parse_time_range,
    parse_weekdays,
    parse_years,
)
from alertrouter.ruleset.base import Duration, Matchers, Section
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
from alertrouter.ruleset.schedule import parse_schedule, zone
from alertrouter.ruleset.stale import StaleConfig

__all__ = [
    "ALL_SEVERITIES",
    "SECRET_FIELDS",
    "UNLIMITED_REPEATS",
    "AggregationConfig",
    "AliyunSmsConfig",
    "ChannelConfig",
    "CountConfig",
    "DigestConfig",
    "DingTalkChannelConfig",
    "EmailChannelConfig",
    "FeishuChannelConfig",
    "GenericSmsConfig",
    "GlobalConfig",
    "InhibitRuleConfig",
    "MentionsConfig",
    "PrometheusLookupConfig",
    "RateLimitConfig",
    "ReceiverChannelConfig",
    "ReceiverConfig",
    "RetryConfig",
    "RollupConfig",
    "RouteConfig",
    "RuleFile",
    "Ruleset",
    "SmsChannelConfig",
    "TencentSmsConfig",
    "TimeIntervalConfig",
    "TimeIntervalSpecConfig",
    "TimeRangeConfig",
    "TopologyConfig",
    "WeComChannelConfig",
]

_DEFAULT_NODE_LABELS = ["node", "hostname", "Hostname", "nodename", "kubernetes_node", "instance"]


def _scalar_text(value: Any) -> Any:
    """A YAML scalar as the string Alertmanager reads into a `match` map (Go's YAML decoder takes the
    scalar's text): `{priority: 1}` is `priority="1"`, `{paged: true}` is `paged="true"`, no value is
    `""`. (PyYAML has already read `yes` and `0x1F` as a bool and an int: they come back as `true`
    and `31`, not as written.)"""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


LegacyMap = dict[str, Annotated[str, BeforeValidator(_scalar_text)]]


def _intervals(value: Any) -> Any:
    """`repeat_interval: 1h` means 1h for every severity, as an Alertmanager user expects (`*` is
    expanded to each of `global.severities` and `default` when the pipeline is built)."""
    return value if isinstance(value, dict) or value is None else {ALL_SEVERITIES: value}


ALL_SEVERITIES = "*"


def _off_is_none(value: Any) -> Any:
    return None if value is False or value == "off" else value


def _unlimited(value: Any) -> Any:
    return UNLIMITED_REPEATS if value == "unlimited" else value


def _known_language(value: str) -> str:
    if value not in LANGUAGES:
        raise ValueError(f"unknown language {value!r} (one of {', '.join(LANGUAGES)})")
    return value


UNLIMITED_REPEATS = -1  # `max_repeats: unlimited`, to lift a cap set higher up the route tree


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
        return _known_language(value)

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
    equal: list[Annotated[str, BeforeValidator(_scalar_text)]] = Field(default_factory=list)
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


def _range_text(parse: Callable[[object], object]) -> Callable[[Any], Any]:
    """An entry of a time interval's list, checked by `parse` and kept as the text written (YAML reads
    `2026` or `-1` as numbers; Alertmanager reads them as text)."""

    def check(value: Any) -> Any:
        parse(value)
        return str(value)

    return check


WeekdayRange = Annotated[str, BeforeValidator(_range_text(parse_weekdays))]
DayOfMonthRange = Annotated[str, BeforeValidator(_range_text(parse_days_of_month))]
MonthRange = Annotated[str, BeforeValidator(_range_text(parse_months))]
YearRange = Annotated[str, BeforeValidator(_range_text(parse_years))]


class TimeRangeConfig(Section):
    """`start_time` included, `end_time` excluded, both HH:MM (00:00 to 24:00), start before end."""

    start_time: str
    end_time: str

    @field_validator("start_time", "end_time")
    @classmethod
    def _clock(cls, value: str) -> str:
        parse_clock(value)
        return value

    @model_validator(mode="after")
    def _ordered(self) -> TimeRangeConfig:
        parse_time_range(self.start_time, self.end_time)
        return self


class TimeIntervalSpecConfig(Section):
    """Alertmanager's `time_interval_spec`: every list given must match (an absent one matches anything)."""

    times: list[TimeRangeConfig] | None = None
    weekdays: list[WeekdayRange] | None = None
    days_of_month: list[DayOfMonthRange] | None = None
    months: list[MonthRange] | None = None
    years: list[YearRange] | None = None
    location: str | None = Field(None, description="IANA time zone the spec is read in; default UTC")

    @field_validator("location")
    @classmethod
    def _location(cls, value: str | None) -> str | None:
        if value is not None:
            parse_location(value)
        return value


class TimeIntervalConfig(Section):
    """A named time interval, referenced by routes' `mute_time_intervals` and `active_time_intervals`."""

    name: str = Field(min_length=1)
    time_intervals: list[TimeIntervalSpecConfig] = Field(default_factory=list)


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


class MentionsConfig(Section):
    mobiles: list[str] = Field(default_factory=list)
    user_ids: list[str] = Field(default_factory=list)
    all: bool = False
    oncall: list[str] = Field(
        default_factory=list, description="Schedules whose person on call is pinged (their mobile and user id)"
    )


def _channel_ref(value: Any) -> Any:
    return {"channel": value} if isinstance(value, str) else value


class ReceiverChannelConfig(Section):
    """One channel of a receiver, with who to ping there (chat) or who receives it (SMS, email)."""

    channel: str
    mentions: MentionsConfig = Field(default_factory=lambda: MentionsConfig())
    to: list[str] = Field(default_factory=list, description="Phone numbers (SMS) or addresses (email)")
    oncall: list[str] = Field(
        default_factory=list,
        description="Schedules whose person on call is added to `to` (their mobile, or email for email)",
    )


class DigestConfig(Section):
    """The receiver's weekly digest email: which email channel, to whom, when, in which time zone (its
    language is the receiver's messages' language)."""

    channel: str = Field(description="An email channel")
    to: list[str] = Field(default_factory=list, description="Recipients; default: the channel's `to`")
    schedule: str = Field("mon 09:00", description="Day and local time the previous week's digest is sent")
    timezone: str | None = Field(
        None,
        description="IANA time zone of the schedule, of the week's bounds and of the times shown; "
        "default: the receiver's `timezone`, else `global.timezone`",
    )

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str) -> str:
        return str(parse_schedule(value))

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str | None) -> str | None:
        if value is not None:
            zone(value)
        return value


class ReceiverConfig(Section):
    """A named destination, fanning out to channels (and optionally a weekly digest email)."""

    name: str
    description: str = ""
    channels: list[Annotated[ReceiverChannelConfig, BeforeValidator(_channel_ref)]] = Field(default_factory=list)
    digest: DigestConfig | None = None
    language: str | None = Field(None, description="Overrides `global.language` for this receiver's messages")
    timezone: str | None = Field(None, description="Overrides `global.timezone` for this receiver's messages")

    @field_validator("language")
    @classmethod
    def _language(cls, value: str | None) -> str | None:
        return None if value is None else _known_language(value)

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str | None) -> str | None:
        if value is not None:
            zone(value)
        return value


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

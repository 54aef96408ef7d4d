"""The shape of the rules configuration; every section rejects unknown keys so typos are errors."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator, model_validator

from alertrouter.i18n import DEFAULT_LANGUAGE, DEFAULT_TIMEZONE, LANGUAGES, Locale
from alertrouter.labels import Matcher, MatcherError, parse_matchers
from alertrouter.ruleset.base import Duration, Section
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
from alertrouter.ruleset.schedule import parse_schedule, zone

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
    "TopologyConfig",
    "WeComChannelConfig",
]

_DEFAULT_NODE_LABELS = ["node", "hostname", "Hostname", "nodename", "kubernetes_node", "instance"]


def _matchers(value: Any) -> Any:
    """A list of Alertmanager matcher strings; each entry may itself hold several (`{a="1", b="2"}`)."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ValueError("must be a list of matchers, e.g. ['alertname=\"NodeDown\"']")
    out: list[Matcher] = []
    for item in value:
        if not isinstance(item, str):
            raise ValueError(f"matcher must be a string, not {type(item).__name__}")
        try:
            out.extend(parse_matchers(item))
        except MatcherError as exc:
            raise ValueError(str(exc)) from None
    return out


Matchers = Annotated[list[Matcher], BeforeValidator(_matchers)]


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


class TopologyConfig(Section):
    """Labels for nodes whose alerts lack them, and other names (IPs) of nodes."""

    nodes: dict[str, dict[str, str]] = Field(default_factory=dict)
    aliases: dict[str, str] = Field(default_factory=dict)
    learned_alias_ttl: Duration = Field(
        timedelta(days=7),
        description="How long an address learned from an alert (IP instance + hostname) stays that node's "
        "without being seen again; 0s learns nothing. `aliases` always win over learned ones",
    )


class InhibitRuleConfig(Section):
    name: str | None = None
    source_matchers: Matchers = Field(default_factory=list)
    target_matchers: Matchers = Field(default_factory=list)
    source_match: dict[str, str] = Field(default_factory=dict)
    source_match_re: dict[str, str] = Field(default_factory=dict)
    target_match: dict[str, str] = Field(default_factory=dict)
    target_match_re: dict[str, str] = Field(default_factory=dict)
    equal: list[str] = Field(default_factory=list)
    hold_down: Duration = timedelta(seconds=30)

    @model_validator(mode="after")
    def _has_both_sides(self) -> InhibitRuleConfig:
        if not (self.source_matchers or self.source_match or self.source_match_re):
            raise ValueError("needs source_matchers (or the legacy source_match / source_match_re)")
        if not (self.target_matchers or self.target_match or self.target_match_re):
            raise ValueError("needs target_matchers (or the legacy target_match / target_match_re)")
        return self


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


class RouteConfig(Section):
    receiver: str | None = None
    matchers: Matchers = Field(default_factory=list)
    match: dict[str, str] = Field(default_factory=dict)
    match_re: dict[str, str] = Field(default_factory=dict)
    continue_: bool = Field(False, alias="continue")
    routes: list[RouteConfig] = Field(default_factory=list)
    repeat_interval: Annotated[dict[str, Duration] | None, BeforeValidator(_intervals)] = None
    group_wait: Duration | None = None
    group_interval: Duration | None = None
    send_resolved: bool | None = None
    max_repeats: Annotated[int | None, BeforeValidator(_unlimited), Field(ge=-1)] = None


class MentionsConfig(Section):
    mobiles: list[str] = Field(default_factory=list)
    user_ids: list[str] = Field(default_factory=list)
    all: bool = False


def _channel_ref(value: Any) -> Any:
    return {"channel": value} if isinstance(value, str) else value


class ReceiverChannelConfig(Section):
    """One channel of a receiver, with who to ping there (chat) or who receives it (SMS, email)."""

    channel: str
    mentions: MentionsConfig = Field(default_factory=lambda: MentionsConfig())
    to: list[str] = Field(default_factory=list, description="Phone numbers (SMS) or addresses (email)")


class DigestConfig(Section):
    """The receiver's weekly digest email: which email channel, to whom, when, in which time zone."""

    channel: str = Field(description="An email channel")
    to: list[str] = Field(default_factory=list, description="Recipients; default: the channel's `to`")
    schedule: str = Field("mon 09:00", description="Day and local time the previous week's digest is sent")
    timezone: str = Field("UTC", description="IANA time zone of the schedule and of the week's bounds")

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str) -> str:
        return str(parse_schedule(value))

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
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


class Ruleset(Section):
    """The merged, validated configuration the server runs on (see `ruleset.build` for the stages)."""

    global_: GlobalConfig = Field(default_factory=lambda: GlobalConfig(), alias="global")
    topology: TopologyConfig = Field(default_factory=lambda: TopologyConfig())
    inhibit_rules: list[InhibitRuleConfig] = Field(default_factory=list)
    aggregation: list[AggregationConfig] = Field(default_factory=list)
    route: RouteConfig | None = None
    receivers: list[ReceiverConfig] = Field(default_factory=list)
    channels: list[ChannelConfig] = Field(default_factory=list)
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

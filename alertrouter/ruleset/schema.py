"""The shape of the rules configuration; every section rejects unknown keys so typos are errors."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SecretStr, field_validator, model_validator

from alertrouter.channels.base import SMS_FIELDS
from alertrouter.durations import parse_duration
from alertrouter.labels import Matcher, MatcherError, parse_matchers

__all__ = [
    "ALL_SEVERITIES",
    "SECRET_FIELDS",
    "UNLIMITED_REPEATS",
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

_DEFAULT_NODE_LABELS = ["node", "hostname", "Hostname", "kubernetes_node", "instance"]


def _duration(value: Any) -> Any:
    if isinstance(value, str):
        return parse_duration(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError("durations need a unit, e.g. 30s, 10m, 2h")
    return value


Duration = Annotated[timedelta, BeforeValidator(_duration)]


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


UNLIMITED_REPEATS = -1  # `max_repeats: unlimited`, to lift a cap set higher up the route tree


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True, populate_by_name=True)


class GlobalConfig(_Section):
    node_labels: list[str] = Field(
        default_factory=lambda: list(_DEFAULT_NODE_LABELS),
        description="Labels tried in order to name an alert's node; `instance` loses its :port",
    )
    node_label: str = Field("node", description="Label under which the derived node key is exposed to rules")
    severity_label: str = "severity"
    severities: list[str] = Field(default_factory=lambda: ["critical", "warning", "info"], description="Worst first")
    external_url: str | None = Field(None, description="Base URL of this alertrouter, for links in messages")

    @field_validator("node_labels", "severities")
    @classmethod
    def _non_empty_unique(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("must name at least one label")
        if len(set(value)) != len(value):
            raise ValueError("labels must not repeat")
        return value


class TopologyConfig(_Section):
    """Labels for nodes whose alerts lack them, and other names (IPs) of nodes."""

    nodes: dict[str, dict[str, str]] = Field(default_factory=dict)
    aliases: dict[str, str] = Field(default_factory=dict)


class InhibitRuleConfig(_Section):
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


class CountConfig(_Section):
    label: str = Field(description="Label whose distinct values are counted, e.g. gpu")
    per_group: int | None = Field(None, ge=1, description="The denominator, e.g. 8 GPUs per node")
    name: str = "GPUs"


class RollupConfig(_Section):
    threshold: int = Field(5, ge=1)
    window: Duration = timedelta(minutes=2)
    by: list[str] = Field(default_factory=lambda: ["alertname"])
    scope_labels: list[str] = Field(default_factory=lambda: ["region", "rack", "cluster"])


class AggregationConfig(_Section):
    name: str
    matchers: Matchers = Field(default_factory=list)
    group_by: list[str] = Field(default_factory=lambda: ["alertname", "node"], min_length=1)
    count: CountConfig | None = None
    group_wait: Duration | None = None
    group_interval: Duration | None = None
    rollup: Annotated[RollupConfig | None, BeforeValidator(_off_is_none)] = None


class RouteConfig(_Section):
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


class RateLimitConfig(_Section):
    """The vendor's limit per robot, enforced before the vendor does (and shared by all replicas)."""

    messages: int = Field(20, ge=1)
    per: Duration = timedelta(minutes=1)
    block: Duration = Field(timedelta(minutes=10), description="How long the vendor blocks a robot that exceeds it")


class RetryConfig(_Section):
    """Exponential backoff with jitter for transient failures; a dead letter after `give_up_after`."""

    initial: Duration = timedelta(seconds=5)
    max: Duration = timedelta(minutes=5)
    give_up_after: Duration = timedelta(hours=24)


class _ChannelBase(_Section):
    name: str
    timeout: Duration = timedelta(seconds=10)
    retry: RetryConfig = Field(default_factory=lambda: RetryConfig())
    failover: str | None = Field(
        None, description="Another channel of the same type that takes critical messages while this one is blocked"
    )

    def missing_credentials(self) -> list[str]:
        """Required secrets left empty (`${VAR:-}` with VAR unset): the channel exists but cannot send."""
        return []


def _empty(*secrets: tuple[str, SecretStr | None]) -> list[str]:
    return [name for name, value in secrets if value is None or not value.get_secret_value()]


def _chat_limit() -> RateLimitConfig:
    return RateLimitConfig()


def _sec_prefixed(value: SecretStr | None) -> SecretStr | None:
    if value is not None and value.get_secret_value() and not value.get_secret_value().startswith("SEC"):
        raise ValueError("a DingTalk signing secret starts with SEC (robot settings, 加签)")
    return value


class DingTalkChannelConfig(_ChannelBase):
    type: Literal["dingtalk"]
    url: str = "https://oapi.dingtalk.com/robot/send"
    access_token: SecretStr
    secret: SecretStr | None = Field(None, description="The robot's signing secret (SEC...), when it signs")
    keyword: str | None = Field(None, description="The robot's required keyword, when it uses keyword mode")
    msgtype: Literal["markdown", "actionCard"] = "markdown"
    rate_limit: RateLimitConfig = Field(default_factory=_chat_limit)

    _check_secret = field_validator("secret")(_sec_prefixed)

    def missing_credentials(self) -> list[str]:
        return _empty(("access_token", self.access_token))


class WeComChannelConfig(_ChannelBase):
    type: Literal["wecom"]
    url: str = "https://qyapi.weixin.qq.com/cgi-bin/webhook/send"
    key: SecretStr
    msgtype: Literal["markdown", "text"] = "markdown"
    rate_limit: RateLimitConfig = Field(default_factory=_chat_limit)

    def missing_credentials(self) -> list[str]:
        return _empty(("key", self.key))


class FeishuChannelConfig(_ChannelBase):
    type: Literal["feishu"]
    url: str = "https://open.feishu.cn/open-apis/bot/v2/hook/"
    hook: SecretStr = Field(description="The id at the end of the bot's webhook URL")
    secret: SecretStr | None = None
    rate_limit: RateLimitConfig = Field(
        default_factory=lambda: RateLimitConfig(messages=100, per=timedelta(minutes=1), block=timedelta(minutes=1))
    )

    def missing_credentials(self) -> list[str]:
        return _empty(("hook", self.hook))


class AliyunSmsConfig(_Section):
    access_key_id: SecretStr
    access_key_secret: SecretStr
    sign_name: str
    template_code: str
    endpoint: str = "https://dysmsapi.aliyuncs.com/"
    region_id: str = "cn-hangzhou"


class TencentSmsConfig(_Section):
    secret_id: SecretStr
    secret_key: SecretStr
    sdk_app_id: str
    sign_name: str
    template_id: str
    region: str = "ap-guangzhou"
    endpoint: str = "https://sms.tencentcloudapi.com/"


class GenericSmsConfig(_Section):
    """An HTTP gateway: POST {"to": [...], "text": "...", "params": {...}} as JSON; any 2xx is success."""

    url: str
    token: SecretStr | None = Field(None, description="Sent as `Authorization: Bearer <token>`")


class SmsChannelConfig(_ChannelBase):
    type: Literal["sms"]
    provider: Literal["aliyun", "tencent", "generic"]
    aliyun: AliyunSmsConfig | None = None
    tencent: TencentSmsConfig | None = None
    generic: GenericSmsConfig | None = None
    params: dict[str, str] = Field(
        default_factory=lambda: {"headline": "headline"},
        description="Vendor template variable -> field (in order, for Tencent's positional variables)",
    )
    param_max_length: int = Field(20, ge=1, description="Characters per template variable; longer values are cut")
    daily_cap_per_number: int = Field(20, ge=1, description="Messages per phone number per 24h, storms included")
    rate_limit: RateLimitConfig | None = None

    @field_validator("params")
    @classmethod
    def _known_fields(cls, value: dict[str, str]) -> dict[str, str]:
        for variable, source in value.items():
            if source not in SMS_FIELDS:
                raise ValueError(f"variable {variable!r}: unknown field {source!r} (known: {', '.join(SMS_FIELDS)})")
        return value

    def missing_credentials(self) -> list[str]:
        if self.aliyun is not None and self.provider == "aliyun":
            a = self.aliyun
            return _empty(("aliyun.access_key_id", a.access_key_id), ("aliyun.access_key_secret", a.access_key_secret))
        if self.tencent is not None and self.provider == "tencent":
            t = self.tencent
            return _empty(("tencent.secret_id", t.secret_id), ("tencent.secret_key", t.secret_key))
        return []

    @model_validator(mode="after")
    def _provider_configured(self) -> SmsChannelConfig:
        if getattr(self, self.provider) is None:
            raise ValueError(f"provider {self.provider} needs its `{self.provider}:` settings")
        return self


class EmailChannelConfig(_ChannelBase):
    type: Literal["email"]
    host: str
    port: int | None = Field(None, description="Default: 587 for starttls, 465 for tls, 25 for none")
    security: Literal["starttls", "tls", "none"] = "starttls"
    username: str | None = None
    password: SecretStr | None = None
    from_: str = Field(alias="from")
    to: list[str] = Field(default_factory=list, description="Default recipients; a receiver may name others")
    rate_limit: RateLimitConfig | None = None

    def missing_credentials(self) -> list[str]:
        return [] if self.host else ["host"]

    @property
    def effective_port(self) -> int:
        return self.port or {"starttls": 587, "tls": 465, "none": 25}[self.security]


ChannelConfig = Annotated[
    DingTalkChannelConfig | WeComChannelConfig | FeishuChannelConfig | SmsChannelConfig | EmailChannelConfig,
    Field(discriminator="type"),
]

# Fields holding secrets, per channel type, with their nested section: rule files must give them as
# ${ENV} references (checked by the loader on the text before interpolation).
SECRET_FIELDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "dingtalk": (("access_token",), ("secret",)),
    "wecom": (("key",),),
    "feishu": (("hook",), ("secret",)),
    "sms": (
        ("aliyun", "access_key_id"),
        ("aliyun", "access_key_secret"),
        ("tencent", "secret_id"),
        ("tencent", "secret_key"),
        ("generic", "token"),
    ),
    "email": (("password",),),
}


class MentionsConfig(_Section):
    mobiles: list[str] = Field(default_factory=list)
    user_ids: list[str] = Field(default_factory=list)
    all: bool = False


def _channel_ref(value: Any) -> Any:
    return {"channel": value} if isinstance(value, str) else value


class ReceiverChannelConfig(_Section):
    """One channel of a receiver, with who to ping there (chat) or who receives it (SMS, email)."""

    channel: str
    mentions: MentionsConfig = Field(default_factory=lambda: MentionsConfig())
    to: list[str] = Field(default_factory=list, description="Phone numbers (SMS) or addresses (email)")


class ReceiverConfig(_Section):
    """A named destination, fanning out to channels."""

    name: str
    description: str = ""
    channels: list[Annotated[ReceiverChannelConfig, BeforeValidator(_channel_ref)]] = Field(default_factory=list)


class RuleFile(_Section):
    """One YAML file: any subset of the sections. Files are merged in name order."""

    global_: GlobalConfig | None = Field(None, alias="global")
    topology: TopologyConfig | None = None
    inhibit_rules: list[InhibitRuleConfig] | None = None
    aggregation: list[AggregationConfig] | None = None
    route: RouteConfig | None = None
    receivers: list[ReceiverConfig] | None = None
    channels: list[ChannelConfig] | None = None


class Ruleset(_Section):
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

    def origin(self, section: str, index: int | None = None) -> tuple[str, str]:
        """(file, path) of a section or of one item of a list section."""
        where = self.origins.get(section)
        if not where:
            return "(defaults)", section if index is None else f"{section}[{index}]"
        item = where[index] if index is not None and index < len(where) else where[0]
        file, _, path = item.rpartition(":")
        return file, path

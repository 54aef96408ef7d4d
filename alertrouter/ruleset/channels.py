"""The `channels:` section: one model per channel type, and which of their fields are secrets."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from alertrouter.ruleset.base import Duration, Name, Section

__all__ = [
    "SECRET_FIELDS",
    "SMS_FIELDS",
    "VOICE_FIELDS",
    "VOICE_TOTAL_LIMIT",
    "AliyunSmsConfig",
    "AliyunVoiceConfig",
    "ChannelConfig",
    "DingTalkChannelConfig",
    "EmailChannelConfig",
    "FeishuChannelConfig",
    "GenericSmsConfig",
    "RateLimitConfig",
    "RetryConfig",
    "SmsChannelConfig",
    "TencentSmsConfig",
    "TencentVoiceConfig",
    "VoiceChannelConfig",
    "WeComChannelConfig",
]

# Fields an SMS template variable may take (`params: {name: headline}` in a channel's config).
SMS_FIELDS = (
    "severity",
    "status",
    "headline",
    "alertname",
    "node",
    "region",
    "count",
    "gpus",
    "since",
    "summary",
    "link",
    "receiver",
    "incidents",
    "xid",  # `XID 79: reboot the node`: the lowest XID of the incident and NVIDIA's first action
    "workload",  # `ml-team/train-0`: exported_namespace/exported_pod of an alerting GPU
    "rma",  # `RMA candidate: GPU 3 (GPU-5f1c…): Xid 48 twice in 11 days`: the first GPU the rma: rules name
)


class RateLimitConfig(Section):
    """The vendor's limit per robot, enforced before the vendor does (and shared by all replicas)."""

    messages: int = Field(20, ge=1)
    per: Duration = timedelta(minutes=1)
    block: Duration = Field(timedelta(minutes=10), description="How long the vendor blocks a robot that exceeds it")


class RetryConfig(Section):
    """Exponential backoff with jitter for transient failures; a dead letter after `give_up_after`."""

    initial: Duration = timedelta(seconds=5)
    max: Duration = timedelta(minutes=5)
    give_up_after: Duration = timedelta(hours=24)


class _ChannelBase(Section):
    name: Name
    timeout: Duration = timedelta(seconds=10)
    retry: RetryConfig = Field(default_factory=lambda: RetryConfig())
    failover: str | None = Field(
        None, description="Another channel of the same type that takes critical messages while this one is blocked"
    )

    def missing_credentials(self) -> list[str]:
        """Required secrets left empty (`${VAR:-}` with VAR unset): the channel exists but cannot send."""
        return []

    def wants(self, *, resolved: bool, reason: str) -> bool:
        """Whether a message about an incident (resolved or not, the throttle's `NotifyReason`) goes to this
        channel at all: every channel takes every message but a voice call (see `VoiceChannelConfig`)."""
        return True


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


class AliyunSmsConfig(Section):
    access_key_id: SecretStr
    access_key_secret: SecretStr
    sign_name: str
    template_code: str
    endpoint: str = "https://dysmsapi.aliyuncs.com/"
    region_id: str = "cn-hangzhou"


class TencentSmsConfig(Section):
    secret_id: SecretStr
    secret_key: SecretStr
    sdk_app_id: str
    sign_name: str
    template_id: str
    region: str = "ap-guangzhou"
    endpoint: str = "https://sms.tencentcloudapi.com/"


class GenericSmsConfig(Section):
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


# Fields a voice template variable may take: those of SMS but the link (a phone call cannot follow one,
# and both vendors refuse variables holding a URL).
VOICE_FIELDS = tuple(f for f in SMS_FIELDS if f != "link")
# What each vendor allows for all variables together (characters); see `VoiceChannelConfig`.
VOICE_TOTAL_LIMIT = {"aliyun": 249, "tencent": 350}


class AliyunVoiceConfig(Section):
    """Dyvms `SingleCallByTts`: an approved text-to-speech template (TtsCode) and, in dedicated mode, the
    number the call shows (CalledShowNumber; left out in the vendor's shared "public" mode)."""

    access_key_id: SecretStr
    access_key_secret: SecretStr
    tts_code: str
    called_show_number: str | None = None
    volume: int | None = Field(None, ge=0, le=100)
    speed: int | None = Field(None, ge=-500, le=500)
    endpoint: str = "https://dyvmsapi.aliyuncs.com/"
    region_id: str = "cn-hangzhou"


class TencentVoiceConfig(Section):
    """VMS `SendTtsVoice`: the voice application (VoiceSdkAppid) and an approved template (TemplateId)."""

    secret_id: SecretStr
    secret_key: SecretStr
    voice_sdk_app_id: str
    template_id: str
    region: str = "ap-guangzhou"
    endpoint: str = "https://vms.tencentcloudapi.com/"


class VoiceChannelConfig(_ChannelBase):
    """A text-to-speech phone call to each number, for the incidents that must wake someone.

    Only firing messages call: a resolved message calls nobody, and neither does an update for alerts
    that joined an incident already called about; a repeat (still firing after the route's repeat
    interval) calls again. `daily_cap_per_number` calls per number per 24 hours, shared by all replicas.
    """

    type: Literal["voice"]
    provider: Literal["aliyun", "tencent"]
    aliyun: AliyunVoiceConfig | None = None
    tencent: TencentVoiceConfig | None = None
    params: dict[str, str] = Field(
        default_factory=lambda: {"headline": "headline"},
        description="Vendor template variable -> field (in order, for Tencent's positional variables)",
    )
    param_max_length: int = Field(30, ge=1, description="Characters per template variable; longer values are cut")
    play_times: int = Field(2, ge=1, le=3, description="How often the message is spoken in one call (1-3)")
    daily_cap_per_number: int = Field(10, ge=1, description="Calls per phone number per 24h, storms included")
    rate_limit: RateLimitConfig | None = None

    @field_validator("params")
    @classmethod
    def _known_fields(cls, value: dict[str, str]) -> dict[str, str]:
        if not value:
            raise ValueError("a voice call needs at least one template variable (the headline is what is spoken)")
        for variable, source in value.items():
            if source not in VOICE_FIELDS:
                known = ", ".join(VOICE_FIELDS)
                raise ValueError(f"variable {variable!r}: unknown field {source!r} (known: {known})")
        return value

    def missing_credentials(self) -> list[str]:
        if self.aliyun is not None and self.provider == "aliyun":
            a = self.aliyun
            return _empty(("aliyun.access_key_id", a.access_key_id), ("aliyun.access_key_secret", a.access_key_secret))
        if self.tencent is not None and self.provider == "tencent":
            t = self.tencent
            return _empty(("tencent.secret_id", t.secret_id), ("tencent.secret_key", t.secret_key))
        return []

    def wants(self, *, resolved: bool, reason: str) -> bool:
        return not resolved and reason != "grew"

    @model_validator(mode="after")
    def _provider_configured(self) -> VoiceChannelConfig:
        if getattr(self, self.provider) is None:
            raise ValueError(f"provider {self.provider} needs its `{self.provider}:` settings")
        total, limit = len(self.params) * self.param_max_length, VOICE_TOTAL_LIMIT[self.provider]
        if total > limit:
            raise ValueError(
                f"{len(self.params)} variables of up to {self.param_max_length} characters make {total}; "
                f"{self.provider} takes at most {limit} for all variables of a call"
            )
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
    DingTalkChannelConfig
    | WeComChannelConfig
    | FeishuChannelConfig
    | SmsChannelConfig
    | VoiceChannelConfig
    | EmailChannelConfig,
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
    "voice": (
        ("aliyun", "access_key_id"),
        ("aliyun", "access_key_secret"),
        ("tencent", "secret_id"),
        ("tencent", "secret_key"),
    ),
    "email": (("password",),),
}

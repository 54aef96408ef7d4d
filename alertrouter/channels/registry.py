"""Channel objects from the rules: one per configured channel, sharing one HTTP client and renderer."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
from pydantic import BaseModel, SecretStr

from alertrouter.channels.base import Channel, Renderer
from alertrouter.channels.dingtalk import DingTalkChannel
from alertrouter.channels.email import EmailChannel
from alertrouter.channels.feishu import FeishuChannel
from alertrouter.channels.sms import SmsChannel
from alertrouter.channels.voice import VoiceChannel
from alertrouter.channels.wecom import WeComChannel
from alertrouter.ruleset import Ruleset
from alertrouter.ruleset.build import unconfigured_channels
from alertrouter.ruleset.channels import (
    ChannelConfig,
    DingTalkChannelConfig,
    EmailChannelConfig,
    FeishuChannelConfig,
    SmsChannelConfig,
    VoiceChannelConfig,
    WeComChannelConfig,
)

__all__ = ["build_channel", "build_channels", "secret_values"]


def build_channel(config: ChannelConfig, *, client: httpx.AsyncClient, renderer: Renderer) -> Channel:
    if isinstance(config, DingTalkChannelConfig):
        return DingTalkChannel(config, client=client, renderer=renderer)
    if isinstance(config, WeComChannelConfig):
        return WeComChannel(config, client=client, renderer=renderer)
    if isinstance(config, FeishuChannelConfig):
        return FeishuChannel(config, client=client, renderer=renderer)
    if isinstance(config, SmsChannelConfig):
        return SmsChannel(config, client=client, renderer=renderer)
    if isinstance(config, VoiceChannelConfig):
        return VoiceChannel(config, client=client)
    if isinstance(config, EmailChannelConfig):
        return EmailChannel(config, renderer=renderer)
    raise TypeError(f"no channel for {type(config).__name__}")


def build_channels(ruleset: Ruleset, *, client: httpx.AsyncClient, renderer: Renderer) -> dict[str, Channel]:
    """Every channel that has its credentials; the others are reported by `unconfigured_channels`."""
    skip = unconfigured_channels(ruleset)
    return {c.name: build_channel(c, client=client, renderer=renderer) for c in ruleset.channels if c.name not in skip}


def secret_values(ruleset: Ruleset) -> list[str]:
    """Every secret in the channel configs and the Prometheus lookup's token, for the log redaction filter."""
    found = {v for c in ruleset.channels for v in _secrets(c)}
    lookup = ruleset.topology.prometheus
    if lookup is not None and lookup.bearer_token is not None:
        found.add(lookup.bearer_token.get_secret_value())
    return sorted(v for v in found if len(v) >= 4)


def _secrets(model: BaseModel) -> Iterator[str]:
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, SecretStr):
            yield value.get_secret_value()
        elif isinstance(value, BaseModel):
            yield from _secrets(value)

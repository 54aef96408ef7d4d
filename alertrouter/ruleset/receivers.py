"""The `receivers:` section: named destinations, the channels each fans out to, who is pinged or
texted there, and the receiver's weekly digest email."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator

from alertrouter.ruleset.base import Name, Section, known_language
from alertrouter.ruleset.schedule import parse_schedule, zone

__all__ = ["DigestConfig", "MentionsConfig", "ReceiverChannelConfig", "ReceiverConfig"]


class MentionsConfig(Section):
    mobiles: list[str] = Field(default_factory=list)
    user_ids: list[str] = Field(default_factory=list)
    all: bool = False
    oncall: list[str] = Field(
        default_factory=list, description="Schedules whose person on call is pinged (their mobile and user id)"
    )


def _known_zone(value: str | None) -> str | None:
    """An IANA time zone `zoneinfo` knows, or None (the default's); raises one that it does not."""
    if value is not None:
        zone(value)
    return value


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

    _timezone = field_validator("timezone")(_known_zone)


class ReceiverConfig(Section):
    """A named destination, fanning out to channels (and optionally a weekly digest email)."""

    name: Name
    description: str = ""
    channels: list[Annotated[ReceiverChannelConfig, BeforeValidator(_channel_ref)]] = Field(default_factory=list)
    digest: DigestConfig | None = None
    language: str | None = Field(None, description="Overrides `global.language` for this receiver's messages")
    timezone: str | None = Field(None, description="Overrides `global.timezone` for this receiver's messages")

    @field_validator("language")
    @classmethod
    def _language(cls, value: str | None) -> str | None:
        return None if value is None else known_language(value)

    _timezone = field_validator("timezone")(_known_zone)

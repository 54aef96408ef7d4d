"""What every section of the rules schema is built from: strict frozen models, durations, matchers, match maps."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from alertrouter.durations import parse_duration
from alertrouter.labels import Matcher, MatcherError, parse_matchers
from alertrouter.message.i18n import LANGUAGES
from alertrouter.model import NAME_MAX

__all__ = ["Duration", "LegacyMap", "Name", "Section", "known_language", "scalar_text"]


def _duration(value: Any) -> Any:
    if isinstance(value, str):
        return parse_duration(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError("durations need a unit, e.g. 30s, 10m, 2h")
    return value


Duration = Annotated[timedelta, BeforeValidator(_duration)]

# What names a rule, receiver, channel, heartbeat or policy: the engine and the delivery loop store it in
# columns of `NAME_MAX` characters, so a longer one is refused here, by `check-config`, not by the store.
Name = Annotated[str, Field(min_length=1, max_length=NAME_MAX)]


class Section(BaseModel):
    """Unknown keys are errors, so a typo never silently does nothing."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True, populate_by_name=True)


def _matchers(value: Any) -> Any:
    """A list of Alertmanager matcher strings, as everywhere in the rules; each entry may itself hold
    several (`{a="1", b="2"}`)."""
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


def scalar_text(value: Any) -> Any:
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


LegacyMap = dict[str, Annotated[str, BeforeValidator(scalar_text)]]


def known_language(value: str) -> str:
    if value not in LANGUAGES:
        raise ValueError(f"unknown language {value!r} (one of {', '.join(LANGUAGES)})")
    return value

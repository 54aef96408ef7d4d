"""The `time_intervals:` section: Alertmanager's named time intervals, each entry checked and kept as written."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator, model_validator

from alertrouter.pipeline.timeinterval import (
    parse_clock,
    parse_days_of_month,
    parse_location,
    parse_months,
    parse_time_range,
    parse_weekdays,
    parse_years,
)
from alertrouter.ruleset.base import Section

__all__ = ["TimeIntervalConfig", "TimeIntervalSpecConfig", "TimeRangeConfig"]


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

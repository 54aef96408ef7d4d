"""The digest's schedule and time zone as the rules write them: `mon 09:00` and an IANA zone name.

Parsed here, where the rules are validated; the calendar arithmetic on them is `alertrouter.digest.period`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["DAYS", "Schedule", "parse_schedule", "zone"]

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_SCHEDULE = re.compile(r"^([a-z]{3})\s+([01]?\d|2[0-3]):([0-5]\d)$")


@dataclass(frozen=True, slots=True)
class Schedule:
    """When in the following week a week's digest goes out: `weekday` 0 = Monday."""

    weekday: int = 0
    hour: int = 9
    minute: int = 0

    def __str__(self) -> str:
        return f"{DAYS[self.weekday]} {self.hour:02d}:{self.minute:02d}"


def parse_schedule(text: str) -> Schedule:
    """`mon 09:00` (day name, 24-hour local time); ValueError with the accepted form otherwise."""
    m = _SCHEDULE.match(text.strip().lower())
    if m is None or m.group(1) not in DAYS:
        raise ValueError(f"schedule {text!r}: expected a day and a time, e.g. 'mon 09:00' (days: {', '.join(DAYS)})")
    return Schedule(DAYS.index(m.group(1)), int(m.group(2)), int(m.group(3)))


def zone(name: str) -> ZoneInfo:
    """The IANA zone `name`; ValueError (not ZoneInfoNotFoundError) for an unknown one."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (IANA names, e.g. Asia/Shanghai, Europe/Berlin, UTC)") from None

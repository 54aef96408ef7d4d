"""Pure time arithmetic of the digest: ISO weeks (`2026-W47`) as local periods, and when each is sent.

A week is Monday 00:00 to the next Monday 00:00 *local time* in the receiver's IANA zone, so a week
holding a DST change lasts 167 or 169 hours. The digest of week W is sent in week W+1 at the
schedule's weekday and time (default Monday 09:00), when W is over.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from alertrouter.ruleset.schedule import Schedule

__all__ = [
    "due_period",
    "format_week",
    "next_send",
    "parse_week",
    "send_time",
    "shift_week",
    "week_bounds",
    "week_of",
]

_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")


def parse_week(text: str) -> tuple[int, int]:
    """`2026-W47` -> (2026, 47); the week must exist (W53 only in years that have one)."""
    m = _WEEK.match(text.strip())
    if m is None:
        raise ValueError(f"week {text!r}: expected YYYY-Www, e.g. 2026-W47")
    year, week = int(m.group(1)), int(m.group(2))
    try:
        date.fromisocalendar(year, week, 1)
    except ValueError:
        raise ValueError(f"week {text!r} does not exist (ISO year {year} has {_weeks_in(year)} weeks)") from None
    return year, week


def _weeks_in(year: int) -> int:
    return date(year, 12, 28).isocalendar().week  # 28 December is always in the last ISO week


def format_week(year: int, week: int) -> str:
    return f"{year:04d}-W{week:02d}"


def _monday(period: str) -> date:
    year, week = parse_week(period)
    return date.fromisocalendar(year, week, 1)


def week_of(at: datetime, tz: ZoneInfo) -> str:
    """The ISO week `at` falls in, local time in `tz`."""
    iso = at.astimezone(tz).date().isocalendar()
    return format_week(iso.year, iso.week)


def shift_week(period: str, weeks: int) -> str:
    iso = (_monday(period) + timedelta(weeks=weeks)).isocalendar()
    return format_week(iso.year, iso.week)


def _local(day: date, at: time, tz: ZoneInfo) -> datetime:
    """Local wall time `day at` in `tz`, as UTC. A time skipped by DST is read with the offset before
    the change (zoneinfo's fold=0), i.e. it lands just after the gap; a repeated one is the first."""
    return datetime.combine(day, at, tzinfo=tz).astimezone(UTC)


def week_bounds(period: str, tz: ZoneInfo) -> tuple[datetime, datetime]:
    """[start, end) of the week in UTC: local Monday 00:00 to the next local Monday 00:00."""
    monday = _monday(period)
    return _local(monday, time(0, 0), tz), _local(monday + timedelta(days=7), time(0, 0), tz)


def send_time(period: str, schedule: Schedule, tz: ZoneInfo) -> datetime:
    """When the digest of `period` is due (UTC): the schedule's day and time in the week after it."""
    day = _monday(period) + timedelta(days=7 + schedule.weekday)
    return _local(day, time(schedule.hour, schedule.minute), tz)


def due_period(now: datetime, schedule: Schedule, tz: ZoneInfo) -> str:
    """The latest period whose send time is at or before `now`: the one a scheduler (or a replica
    starting after downtime) should have sent by now. Older periods are never caught up."""
    previous = shift_week(week_of(now, tz), -1)
    return previous if send_time(previous, schedule, tz) <= now else shift_week(previous, -1)


def next_send(now: datetime, schedule: Schedule, tz: ZoneInfo) -> tuple[str, datetime]:
    """The next (period, send time) strictly after `now`."""
    period = shift_week(due_period(now, schedule, tz), 1)
    return period, send_time(period, schedule, tz)

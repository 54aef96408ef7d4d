"""Named time intervals, as Alertmanager's `time_intervals`: when a route is muted (or active).

An interval is a list of specs; it is active when any spec contains the instant. A spec holds
optional lists (`times`, `weekdays`, `days_of_month`, `months`, `years`) read in its `location`
(default UTC); it contains an instant when every list it has holds at least one matching entry. A list
that is absent matches anything; an empty list matches nothing (as in Alertmanager).

Edge cases, all as Alertmanager decides them:
- `times` are wall-clock minutes, the start included and the end excluded; `24:00` ends a day. A
  range never crosses midnight (a start at or after its end is refused): `22:00`-`06:00` is written
  as two ranges, `22:00`-`24:00` and `00:00`-`06:00`. Seconds are ignored (08:59:59 is 08:59).
- weekdays run sunday to saturday, so `saturday:sunday` is refused: write `['saturday', 'sunday']`.
- `days_of_month` may count from the month's end (`-1` is its last day); a range is clamped to the
  month (`1:31` ends on Feb 28/29), and a range starting after the month's last day is skipped.
- on a DST day, the wall clock decides: a range inside the skipped hour never matches that day, and
  one in the repeated hour matches both times round.

The parsers take the strings of the YAML (case-insensitive) and raise ValueError in Alertmanager's terms.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = [
    "MONTHS",
    "WEEKDAYS",
    "DayRange",
    "IntervalClock",
    "IntervalMute",
    "TimeInterval",
    "TimeRange",
    "TimeSpec",
    "describe_spec",
    "parse_days_of_month",
    "parse_location",
    "parse_months",
    "parse_time_range",
    "parse_weekdays",
    "parse_years",
    "route_mute",
]

WEEKDAYS = ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")  # 0 = sunday
MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_CLOCK = re.compile(r"^(?:(?:[01]\d|2[0-3]):[0-5]\d|24:00)$")
_DAY = 1440
HORIZON = timedelta(days=400)  # how far ahead the next change is looked for (a year, whatever the leap)


@dataclass(frozen=True, slots=True)
class TimeRange:
    """Minutes of the day, `start` included, `end` excluded (0..1440)."""

    start: int
    end: int

    def __str__(self) -> str:
        return f"{_clock(self.start)}-{_clock(self.end)}"


@dataclass(frozen=True, slots=True)
class DayRange:
    """An inclusive range of weekdays (0 = sunday), days of the month (negative: from its end), months
    (1 = january) or years."""

    begin: int
    end: int

    def holds(self, value: int) -> bool:
        return self.begin <= value <= self.end


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _text(value: object, what: str) -> str:
    """One list entry as text: YAML gives `2024` and `-1` as numbers, Alertmanager reads them as text."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"{value!r} is not a valid {what}")
    return str(value).strip().lower()


def _split(text: str) -> tuple[str, str]:
    parts = text.split(":")
    if len(parts) > 2:
        raise ValueError(f"couldn't parse range {text!r}, invalid format (expected <start>:<end>)")
    return (parts[0], parts[-1])


def parse_clock(text: str) -> int:
    """`HH:MM` (two-digit hour, 00:00 to 24:00) -> minutes since midnight."""
    if not _CLOCK.match(text):
        raise ValueError(f"couldn't parse timestamp {text!r}, invalid format (expected HH:MM, 00:00 to 24:00)")
    hours, minutes = text.split(":")
    return int(hours) * 60 + int(minutes)


def parse_time_range(start_time: str, end_time: str) -> TimeRange:
    start, end = parse_clock(start_time), parse_clock(end_time)
    if start >= end:
        raise ValueError(
            f"start_time {start_time} must be before end_time {end_time} (the end is excluded, and a range "
            f"cannot cross midnight: write two ranges, {start_time}-24:00 and 00:00-{end_time})"
        )
    return TimeRange(start, end)


def _weekday(name: str) -> int:
    if name not in WEEKDAYS:
        raise ValueError(f"{name} is not a valid weekday (sunday to saturday, by name)")
    return WEEKDAYS.index(name)


def parse_weekdays(value: object) -> DayRange:
    """`monday`, `monday:friday` (names only; the week starts on sunday)."""
    first, last = _split(_text(value, "weekday"))
    begin, end = _weekday(first), _weekday(last)
    if begin > end:
        head = first if first == "saturday" else f"{first}:saturday"
        tail = last if last == "sunday" else f"sunday:{last}"
        raise ValueError(
            f"start day {first} is after end day {last}: weekdays run sunday to saturday, so a range cannot "
            f"wrap round the week; list two, ['{head}', '{tail}']"
        )
    return DayRange(begin, end)


def _number(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{text} is not a valid {what}") from None


def parse_days_of_month(value: object) -> DayRange:
    """`1`, `1:15`, `-1` (the last day), `-7:-1`, `20:-1`; each -31..31 but not 0."""
    first, last = _split(_text(value, "day of the month"))
    begin, end = _number(first, "day of the month"), _number(last, "day of the month")
    for day in (begin, end):
        if day == 0 or not -31 <= day <= 31:
            raise ValueError(
                f"{day} is not a valid day of the month: out of range (1 to 31, or -1 to -31 from its end)"
            )
    if begin < 0 < end:
        raise ValueError("end day must be negative if start day is negative")
    # Whether a range mixing signs is empty depends on the month's length; refuse only those empty in
    # every month (counted on the shortest, 28 days), as Alertmanager does.
    if (28 + begin if begin < 0 else begin) > (28 + end if end < 0 else end):
        raise ValueError(f"end day {end} is always before start day {begin}")
    return DayRange(begin, end)


def _month(name: str) -> int:
    if name in MONTHS:
        return MONTHS.index(name) + 1
    try:
        number = int(name)
    except ValueError:
        raise ValueError(f"{name} is not a valid month (january to december, or 1 to 12)") from None
    if not 1 <= number <= 12:  # Alertmanager accepts these and never matches them
        raise ValueError(f"{name} is not a valid month: out of range (1 to 12)")
    return number


def parse_months(value: object) -> DayRange:
    """`may`, `january:march`, `1:3` (names case-insensitive, or numbers, 1 = january)."""
    first, last = _split(_text(value, "month"))
    begin, end = _month(first), _month(last)
    if begin > end:
        raise ValueError(f"end month {MONTHS[end - 1]} is before start month {MONTHS[begin - 1]}")
    return DayRange(begin, end)


def parse_years(value: object) -> DayRange:
    """`2026`, `2025:2027`."""
    first, last = _split(_text(value, "year"))
    begin, end = _number(first, "year"), _number(last, "year")
    if begin > end:
        raise ValueError(f"end year {end} is before start year {begin}")
    return DayRange(begin, end)


def parse_location(name: str) -> ZoneInfo:
    """An IANA zone name. Alertmanager's `Local` (the machine's zone) is not taken: name the zone."""
    if name == "Local":
        raise ValueError(
            "location 'Local' (the machine's zone) is not supported: name the IANA zone, e.g. Asia/Shanghai"
        )
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown location {name!r} (IANA time zone names, e.g. Asia/Shanghai, Europe/Berlin, UTC)"
        ) from None


def _any(ranges: Sequence[DayRange] | None, value: int) -> bool:
    return ranges is None or any(r.holds(value) for r in ranges)


@dataclass(frozen=True, slots=True)
class TimeSpec:
    """One entry of an interval's `time_intervals`; `None` in a field means "any"."""

    times: tuple[TimeRange, ...] | None = None
    weekdays: tuple[DayRange, ...] | None = None
    days_of_month: tuple[DayRange, ...] | None = None
    months: tuple[DayRange, ...] | None = None
    years: tuple[DayRange, ...] | None = None
    location: tzinfo = UTC

    def contains(self, at: datetime) -> bool:
        """Whether the aware instant `at` is inside, read on this spec's wall clock."""
        local = at.astimezone(self.location)
        return self.matches_day(local.date()) and self._matches_minute(local.hour * 60 + local.minute)

    def _matches_minute(self, minute: int) -> bool:
        return self.times is None or any(r.start <= minute < r.end for r in self.times)

    def matches_day(self, day: date) -> bool:
        if not _any(self.years, day.year) or not _any(self.months, day.month):
            return False
        if not _any(self.weekdays, (day.weekday() + 1) % 7):  # python: monday = 0; here sunday = 0
            return False
        return self.days_of_month is None or any(_holds_day(r, day) for r in self.days_of_month)

    def _edges(self, day: date) -> Iterator[datetime]:
        """The instants of local `day` where this spec may start or stop containing: midnight, each
        range's ends (both readings of a repeated wall time), and the day's DST jump."""
        minutes = {0} | {m for r in self.times or () for m in (r.start, r.end) if m < _DAY}
        for minute in minutes:
            wall = datetime.combine(day, time(minute // 60, minute % 60), tzinfo=self.location)
            yield wall.astimezone(UTC)
            yield wall.replace(fold=1).astimezone(UTC)
        start = datetime.combine(day, time(0), tzinfo=self.location).astimezone(UTC)
        end = datetime.combine(day + timedelta(days=1), time(0), tzinfo=self.location).astimezone(UTC)
        if start.astimezone(self.location).utcoffset() != end.astimezone(self.location).utcoffset():
            yield _jump(start, end, self.location)


def _holds_day(r: DayRange, day: date) -> bool:
    last = calendar.monthrange(day.year, day.month)[1]
    begin = last + r.begin + 1 if r.begin < 0 else r.begin
    end = last + r.end + 1 if r.end < 0 else r.end
    if begin > last:  # e.g. 30:31 in February: skipped, not clamped to the 28th
        return False
    return max(begin, 1) <= day.day <= min(end, last)


def _jump(start: datetime, end: datetime, zone: tzinfo) -> datetime:
    """The UTC instant (to the second) between `start` and `end` where `zone`'s offset changes."""
    before = start.astimezone(zone).utcoffset()
    low, high = start, end  # offset(low) == before != offset(high)
    while high - low > timedelta(seconds=1):
        mid = low + (high - low) / 2
        mid = mid.replace(microsecond=0)
        if mid.astimezone(zone).utcoffset() == before:
            low = mid
        else:
            high = mid
    return high


@dataclass(frozen=True, slots=True)
class TimeInterval:
    """A named interval: active when any of its specs contains the instant (none: never)."""

    name: str
    specs: tuple[TimeSpec, ...]

    def active(self, at: datetime) -> bool:
        return any(spec.contains(at) for spec in self.specs)

    def next_change(self, at: datetime, horizon: timedelta = HORIZON) -> datetime | None:
        """The first instant after `at` where `active` differs from `active(at)`; None if not within
        `horizon` (the caller looks again by then)."""
        now = self.active(at)
        window = at
        while window < at + horizon:
            upto = window + timedelta(days=1)
            edges = sorted({e for spec in self.specs for e in _spec_edges(spec, window, upto) if at < e})
            for edge in edges:
                if self.active(edge) != now:
                    return edge
            window = upto
        return None


def _spec_edges(spec: TimeSpec, start: datetime, end: datetime) -> Iterable[datetime]:
    """The spec's edges in [start, end): from every local day the window touches."""
    first = start.astimezone(spec.location).date() - timedelta(days=1)
    last = end.astimezone(spec.location).date()
    day = first
    while day <= last:
        if spec.matches_day(day) or spec.matches_day(day - timedelta(days=1)):
            yield from (e for e in spec._edges(day) if start <= e < end)
        day += timedelta(days=1)


def _ranges(ranges: Sequence[DayRange], name: Callable[[int], str]) -> str:
    return ", ".join(name(r.begin) if r.begin == r.end else f"{name(r.begin)}:{name(r.end)}" for r in ranges)


def describe_spec(spec: TimeSpec) -> str:
    """One line, in the config's own terms: `weekdays monday:friday; times 09:00-18:00; in Asia/Shanghai`."""
    parts = []
    if spec.times is not None:
        parts.append("times " + (", ".join(str(t) for t in spec.times) or "(none)"))
    for field_name, ranges, name in (
        ("weekdays", spec.weekdays, WEEKDAYS.__getitem__),
        ("days_of_month", spec.days_of_month, str),
        ("months", spec.months, lambda m: MONTHS[m - 1]),
        ("years", spec.years, str),
    ):
        if ranges is not None:
            parts.append(f"{field_name} " + (_ranges(ranges, name) or "(none)"))
    return "; ".join([*(parts or ["always"]), f"in {spec.location}"])


@dataclass(frozen=True, slots=True)
class IntervalMute:
    """Why a route sends nothing now: the `mute_time_intervals` active, or (`outside_active`) the
    route's `active_time_intervals`, none of which is. `until`: when this may change."""

    intervals: tuple[str, ...]
    outside_active: bool
    until: datetime | None


class IntervalClock:
    """The named intervals, remembering each one's next change: between two changes an interval is
    constant, so the search (up to a year of days for a rare interval) runs once per change, not once
    per engine pass."""

    def __init__(self, intervals: Mapping[str, TimeInterval]) -> None:
        self.intervals = intervals
        self._known: dict[str, tuple[datetime, datetime | None]] = {}  # name -> (looked at, next change)

    def next_change(self, name: str, at: datetime) -> datetime | None:
        known = self._known.get(name)
        if known is not None:
            since, change = known
            if since <= at and at < (since + HORIZON / 2 if change is None else change):
                return change
        change = self.intervals[name].next_change(at)
        self._known[name] = (at, change)
        return change

    def route_mute(
        self, *, mute: Sequence[str], active: Sequence[str], at: datetime
    ) -> tuple[IntervalMute | None, datetime | None]:
        """Alertmanager's TimeActiveStage then TimeMuteStage for one route: (the mute or None, when the
        answer may change next). Outside every active interval it is muted by all of them; inside, a
        mute interval in force mutes it with the names of those in force. Names were checked at load."""
        changes = [c for name in {*mute, *active} if (c := self.next_change(name, at)) is not None]
        change = min(changes, default=None)
        if active and not any(self.intervals[name].active(at) for name in active):
            return IntervalMute(tuple(active), True, change), change
        muting = tuple(name for name in mute if self.intervals[name].active(at))
        return (IntervalMute(muting, False, change) if muting else None), change


def route_mute(
    intervals: Mapping[str, TimeInterval],
    *,
    mute: Sequence[str],
    active: Sequence[str],
    at: datetime,
) -> tuple[IntervalMute | None, datetime | None]:
    """`IntervalClock.route_mute` once, for a caller that asks about one moment (the CLI)."""
    return IntervalClock(intervals).route_mute(mute=mute, active=active, at=at)

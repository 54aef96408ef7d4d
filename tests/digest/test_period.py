"""Digest periods: ISO weeks in a receiver's zone (DST weeks of 167 and 169 hours, year boundaries,
week 53), when each week's digest is due, and schedule/zone parsing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from alertrouter.digest.period import (
    due_period,
    next_send,
    parse_week,
    send_time,
    shift_week,
    week_bounds,
    week_of,
)
from alertrouter.ruleset.schedule import Schedule, parse_schedule, zone


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("period", "tz", "start", "end", "hours"),
    [
        ("2026-W47", "Asia/Shanghai", "2026-11-15T16:00", "2026-11-22T16:00", 168),
        ("2026-W47", "UTC", "2026-11-16T00:00", "2026-11-23T00:00", 168),
        # Europe/Berlin: CEST -> CET on Sunday 25 October 2026, CET -> CEST on Sunday 29 March 2026
        ("2026-W43", "Europe/Berlin", "2026-10-18T22:00", "2026-10-25T23:00", 169),
        ("2026-W13", "Europe/Berlin", "2026-03-22T23:00", "2026-03-29T22:00", 167),
        # America/New_York: EST -> EDT on Sunday 8 March 2026, EDT -> EST on Sunday 1 November 2026
        ("2026-W10", "America/New_York", "2026-03-02T05:00", "2026-03-09T04:00", 167),
        ("2026-W44", "America/New_York", "2026-10-26T04:00", "2026-11-02T05:00", 169),
        # 2026 has 53 ISO weeks (1 January 2026 is a Thursday); W53 runs into 2027
        ("2026-W53", "UTC", "2026-12-28T00:00", "2027-01-04T00:00", 168),
        ("2025-W01", "Asia/Shanghai", "2024-12-29T16:00", "2025-01-05T16:00", 168),
    ],
)
def test_week_bounds(period: str, tz: str, start: str, end: str, hours: int) -> None:
    got = week_bounds(period, zone(tz))
    assert got == (utc(start), utc(end))
    assert got[1] - got[0] == timedelta(hours=hours)


@pytest.mark.parametrize(
    ("at", "tz", "period"),
    [
        ("2027-01-01T12:00", "UTC", "2026-W53"),
        ("2024-12-30T00:00", "UTC", "2025-W01"),
        ("2026-11-15T15:59", "Asia/Shanghai", "2026-W46"),  # Sunday 23:59 local
        ("2026-11-15T16:00", "Asia/Shanghai", "2026-W47"),  # Monday 00:00 local, still Sunday in UTC
        ("2026-10-25T22:59", "Europe/Berlin", "2026-W43"),  # Sunday 23:59 CET, the 169-hour week's last minute
    ],
)
def test_week_of(at: str, tz: str, period: str) -> None:
    assert week_of(utc(at), zone(tz)) == period


@pytest.mark.parametrize(
    ("period", "weeks", "expected"),
    [
        ("2026-W53", 1, "2027-W01"),
        ("2027-W01", -1, "2026-W53"),
        ("2025-W52", 1, "2026-W01"),
        ("2026-W47", -47, "2025-W52"),
    ],
)
def test_shift_week(period: str, weeks: int, expected: str) -> None:
    assert shift_week(period, weeks) == expected


@pytest.mark.parametrize("text", ["2025-W53", "2026-W00", "2026-W54", "2026-47", "2026W47", "26-W47", ""])
def test_bad_weeks_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="week"):
        parse_week(text)


@pytest.mark.parametrize(
    ("period", "schedule", "tz", "expected"),
    [
        ("2026-W47", "mon 09:00", "Asia/Shanghai", "2026-11-23T01:00"),
        ("2026-W43", "mon 09:00", "Europe/Berlin", "2026-10-26T08:00"),  # CET after the change
        ("2026-W12", "mon 09:00", "Europe/Berlin", "2026-03-23T08:00"),
        ("2026-W13", "mon 09:00", "Europe/Berlin", "2026-03-30T07:00"),  # CEST
        ("2026-W47", "sun 23:30", "UTC", "2026-11-29T23:30"),
        ("2026-W53", "mon 09:00", "UTC", "2027-01-04T09:00"),
    ],
)
def test_send_time(period: str, schedule: str, tz: str, expected: str) -> None:
    assert send_time(period, parse_schedule(schedule), zone(tz)) == utc(expected)


@pytest.mark.parametrize(
    ("now", "schedule", "tz", "period"),
    [
        ("2026-11-23T00:59", "mon 09:00", "Asia/Shanghai", "2026-W46"),  # a minute before W47's digest
        ("2026-11-23T01:00", "mon 09:00", "Asia/Shanghai", "2026-W47"),  # exactly at its send time
        ("2026-11-25T12:00", "mon 09:00", "Asia/Shanghai", "2026-W47"),  # days later: still W47 (catch-up)
        ("2026-11-22T15:59", "mon 09:00", "Asia/Shanghai", "2026-W46"),  # W47's last minute
        ("2026-11-29T23:29", "sun 23:30", "UTC", "2026-W46"),
        ("2026-11-29T23:30", "sun 23:30", "UTC", "2026-W47"),
        ("2027-01-04T09:00", "mon 09:00", "UTC", "2026-W53"),
        ("2027-01-04T08:59", "mon 09:00", "UTC", "2026-W52"),
        ("2026-10-26T07:59", "mon 09:00", "Europe/Berlin", "2026-W42"),  # 08:59 CET
        ("2026-10-26T08:00", "mon 09:00", "Europe/Berlin", "2026-W43"),
    ],
)
def test_due_period(now: str, schedule: str, tz: str, period: str) -> None:
    assert due_period(utc(now), parse_schedule(schedule), zone(tz)) == period


def test_next_send_follows_the_due_one() -> None:
    tz, schedule = zone("Asia/Shanghai"), parse_schedule("mon 09:00")
    assert next_send(utc("2026-11-23T01:00"), schedule, tz) == ("2026-W48", utc("2026-11-30T01:00"))
    assert next_send(utc("2026-11-23T00:59"), schedule, tz) == ("2026-W47", utc("2026-11-23T01:00"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [("mon 09:00", Schedule(0, 9, 0)), ("Sun 23:59", Schedule(6, 23, 59)), ("wed 7:05", Schedule(2, 7, 5))],
)
def test_parse_schedule(text: str, expected: Schedule) -> None:
    assert parse_schedule(text) == expected
    assert parse_schedule(str(expected)) == expected


@pytest.mark.parametrize("text", ["monday 09:00", "mon 24:00", "mon 9", "0 9 * * 1", "xyz 09:00", ""])
def test_bad_schedules_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="mon 09:00"):
        parse_schedule(text)


def test_unknown_zone_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        zone("Mars/Olympus")

from __future__ import annotations

from datetime import timedelta

import pytest

from alertrouter.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", timedelta(0)),
        ("30s", timedelta(seconds=30)),
        ("10m", timedelta(minutes=10)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("2h", timedelta(hours=2)),
        ("7d", timedelta(days=7)),
        ("1w", timedelta(days=7)),
        ("500ms", timedelta(milliseconds=500)),
        (" 5m ", timedelta(minutes=5)),
    ],
)
def test_parse(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "10", "m", "30m1h", "1h1h", "1.5h", "-5m", "5 m", "10x"])
def test_parse_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(0), "0s"),
        (timedelta(minutes=90), "1h30m"),
        (timedelta(days=8), "1w1d"),
        (timedelta(seconds=1.5), "1s500ms"),
    ],
)
def test_format_round_trips(value: timedelta, text: str) -> None:
    assert format_duration(value) == text
    assert parse_duration(text) == value

"""How long something lasted, in its two spellings (`message.ages`): a message's and the console's age,
and the digest's table durations, which pad minutes and count hours to 47 so a column reads alike."""

from __future__ import annotations

from datetime import timedelta

import pytest

from alertrouter.message.ages import age_text, span_text, table_duration
from alertrouter.message.i18n import translations

EN, ZH = translations("en"), translations("zh-CN")


@pytest.mark.parametrize(
    ("seconds", "age", "table"),
    [
        (45, "45s", "45s"),
        (12 * 60 + 5, "12m", "12m"),
        (3 * 3600, "3h", "3h 00m"),
        (3 * 3600 + 5 * 60, "3h 5m", "3h 05m"),
        (30 * 3600 + 5 * 60, "1d 6h", "30h 05m"),
        (47 * 3600 + 59 * 60, "1d 23h", "47h 59m"),
        (52 * 3600, "2d 4h", "2d 4h"),
    ],
)
def test_an_age_and_a_table_duration_spell_one_length(seconds: int, age: str, table: str) -> None:
    assert age_text(EN, timedelta(seconds=seconds)) == age
    assert table_duration(EN, timedelta(seconds=seconds)) == table


def test_the_edges_of_each_spelling() -> None:
    assert age_text(EN, timedelta(seconds=-30)) == "0s"  # clocks apart: never a negative age
    assert table_duration(EN, None) == "—"
    assert span_text(EN, timedelta(days=1)) == "1d"  # a silence's length: whole days alone
    assert span_text(EN, timedelta(hours=26)) == "1d 2h"


def test_both_spellings_read_the_same_catalogue_entries() -> None:
    assert age_text(ZH, timedelta(hours=3, minutes=5)) == "3 小时 5 分钟"
    assert table_duration(ZH, timedelta(hours=3, minutes=5)) == "3 小时 05 分钟"

"""The digest counts the "no data" resolves stale held back (pipeline/stale.py), by why."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from alertrouter.digest.summarize import Labelling, summarize
from alertrouter.digest.types import WeekRows
from alertrouter.digest.words import mechanism_name
from alertrouter.message.i18n import translations

START = datetime(2026, 11, 16, tzinfo=UTC)


def test_stale_is_a_mechanism_counted_by_alert_and_reason() -> None:
    rows = WeekRows(start=START, end=START + timedelta(days=7))
    since = (START + timedelta(days=1)).isoformat()
    stale = {"decision": "stale", "incident": "k", "stale_since": since}
    rows.decisions = [
        ("a", {"decision": "resolving", "incident": "k", "stale_reason": "resolving", "stale_since": since}),
        ("a", {**stale, "stale_reason": "source_down", "stale_source": "d"}),
        ("b", {**stale, "stale_reason": "together"}),
        ("b", {**stale, "stale_reason": "source_down", "stale_source": "d"}),
        ("a", {**stale, "stale_reason": "returning"}),
        ("c", {"decision": "resolved", "incident": "k"}),
    ]
    stats = summarize(rows, period="2026-W47", tz=ZoneInfo("UTC"), labelling=Labelling())
    by_name = {m.name: m for m in stats.noise.mechanisms}
    assert by_name["stale"].alerts == 2
    assert {(r.name, r.count) for r in by_name["stale"].rules} == {
        ("source_down", 2),
        ("together", 1),
        ("returning", 1),
    }
    assert "resolving" not in by_name  # a resolve waiting its window is not "no data"


def test_the_mechanism_is_worded_in_both_languages() -> None:
    assert mechanism_name(translations("en"), "stale") == "stale (no data)"
    assert mechanism_name(translations("zh-CN"), "stale") == "数据中断（无数据）"

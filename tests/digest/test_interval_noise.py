"""The digest's noise figures count alerts a time interval kept quiet, per interval."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from alertrouter.digest.summarize import Labelling, summarize
from alertrouter.digest.types import WeekRows

START = datetime(2026, 11, 16, tzinfo=UTC)


def test_muted_by_interval_is_a_mechanism_named_by_its_intervals() -> None:
    rows = WeekRows(start=START, end=START + timedelta(days=7))
    muted = {"decision": "muted_by_interval", "incident": "k", "routed_to": ["ops"]}
    rows.decisions = [
        ("a", {**muted, "muted_by_interval": {"ops": ["north-maintenance"]}}),
        ("a", {**muted, "muted_by_interval": {"ops": ["north-maintenance"]}}),  # the same alert again
        ("b", {**muted, "muted_by_interval": {"ops": ["north-maintenance"]}}),
        ("c", {**muted, "outside_active_time_intervals": {"ops": ["business-hours"]}}),
        ("d", {"decision": "silenced", "incident": "k", "silenced_by": "s1"}),
    ]
    stats = summarize(rows, period="2026-W47", tz=ZoneInfo("UTC"), labelling=Labelling())
    by_name = {m.name: m for m in stats.noise.mechanisms}
    mechanism = by_name["muted_by_interval"]
    assert mechanism.alerts == 3
    assert {(r.name, r.count) for r in mechanism.rules} == {
        ("time interval north-maintenance", 2),
        ("time interval business-hours", 1),
    }
    assert by_name["silenced"].alerts == 1

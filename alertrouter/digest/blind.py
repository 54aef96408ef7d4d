"""The digest's "monitoring blind" lines: each heartbeat's silences in the week, from the episodes of the
alert alertrouter raised for it (`AlertrouterHeartbeatMissing{heartbeat=<name>}`); pure."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

from alertrouter.digest.types import BlindCount, WeekRows
from alertrouter.model import HEARTBEAT_ALERTNAME, HEARTBEAT_LABEL

__all__ = ["blind_periods"]


def blind_periods(rows: WeekRows) -> list[BlindCount]:
    """Per heartbeat, the silences that overlap the week and their time within it; a silence still going
    on counts until the week's end, or until the store was read in a week not over yet (a silence of 13
    minutes is not blind until next Monday). The longest blind first."""
    times: dict[str, int] = defaultdict(int)
    total: dict[str, timedelta] = defaultdict(timedelta)
    until = min(rows.end, rows.read_at) if rows.read_at is not None else rows.end
    for e in rows.episodes:
        labels = rows.alerts.get(e.fingerprint, ({}, None))[0]
        name = labels.get(HEARTBEAT_LABEL)
        if labels.get("alertname") != HEARTBEAT_ALERTNAME or not name:
            continue
        start = max(e.starts_at, rows.start)
        end = min(e.ends_at or e.closed_at or until, rows.end)
        if end <= rows.start or start >= rows.end:
            continue
        times[name] += 1
        total[name] += max(timedelta(0), end - start)
    return sorted((BlindCount(n, times[n], total[n]) for n in times), key=lambda b: (-b.total, b.heartbeat))

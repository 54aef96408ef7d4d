"""One week's history, as the store returns it, turned into the digest's `WeekRows`: what each outbox
row's stored message says (its severity, headline and, for an incident's first message, its facts)."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from datetime import datetime
from typing import Any

from alertrouter.digest.types import WeekRows
from alertrouter.message.snapshot import MessageError, MessageSnapshot
from alertrouter.store.digest import WeekHistory

__all__ = ["week_rows"]


def _text(message: Mapping[str, Any], key: str) -> str:
    value = message.get(key)
    return value if isinstance(value, str) else ""


def week_rows(week: WeekHistory, *, start: datetime, end: datetime, now: datetime | None = None) -> WeekRows:
    """`now`: when it was read (a preview of the week still going on ends there, not at the week's end).
    A message too damaged to read back counts with its stored headline; its incident's facts come from
    the incident's next readable message, if any."""
    rows = WeekRows(
        start=start,
        end=end,
        episodes=week.episodes,
        alerts=week.alerts,
        changes=week.changes,
        decisions=week.decisions,
        payloads=week.payloads,
        payload_alerts=week.payload_alerts,
        deliveries=week.deliveries,
        incidents=week.incidents,
        escalations=week.escalations,
        read_at=now,
        gpus=week.gpus,
    )
    for entry in week.outbox:
        msg, key = entry.message, entry.incident_key
        headline = _text(msg, "headline") or key
        rows.intents.append((entry.receiver, entry.reason, key, _text(msg, "severity"), headline, entry.created_at))
        if key not in rows.snapshots:  # the first message about the incident: its headline's facts
            with suppress(MessageError):
                rows.snapshots[key] = MessageSnapshot.from_json(msg)
    return rows

"""How stored rows read on a console page: incident state, the GPU grid, ages, why an alert was decided
as it was. Pure functions over rows and dicts; the templates escape whatever these return."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from alertrouter.model import MessageError, MessageSnapshot, parse_time
from alertrouter.render.context import age_text, unit_cells
from alertrouter.store.tables import IncidentRow, SilenceRow

__all__ = [
    "DECISION_TEXT",
    "LABELS_SHOWN",
    "VALUE_CAP",
    "Cell",
    "cap_text",
    "delivery_headline",
    "duration_text",
    "gpu_grid",
    "incident_age",
    "incident_state",
    "short_time",
    "shown_labels",
    "silence_state",
    "when",
]

# A page shows at most this much of one label or annotation value, and this many labels per alert: one
# alert with huge labels must not make a page of megabytes. The JSON API keeps the whole values.
VALUE_CAP = 1000
NAME_CAP = 200  # label names
LABELS_SHOWN = 40

DECISION_TEXT = {
    "notify": "notified",
    "aggregated": "aggregated into the incident",
    "rolled_up": "rolled up into a cluster incident",
    "throttled": "throttled (already told)",
    "inhibited": "inhibited",
    "held": "held (waiting for a possible source)",
    "silenced": "silenced",
    "muted_by_interval": "muted by a time interval (its routes send nothing now)",
    "quarantined": "quarantined (processing it failed; left out of every pass)",
    "resolved": "resolved",
}


@dataclass(frozen=True, slots=True)
class Cell:
    unit: str
    firing: bool


def incident_state(row: IncidentRow) -> str:
    """resolved, acknowledged, silenced (every firing alert silenced) or notified."""
    if row.status == "resolved":
        return "resolved"
    if row.acknowledged_at is not None:
        return "acknowledged"
    summary = row.summary or {}
    firing, silenced = summary.get("firing"), summary.get("silenced")
    if isinstance(firing, int) and isinstance(silenced, int) and firing > 0 and silenced >= firing:
        return "silenced"
    return "notified"


def gpu_grid(summary: Mapping[str, Any]) -> list[Cell]:
    """One cell per unit of the node, lit when it alerts (`render.context.unit_cells`, as in chat)."""
    return [Cell(str(i), lit) for i, lit in enumerate(unit_cells(summary.get("units"), summary.get("units_total")))]


def duration_text(delta: timedelta | None) -> str:
    """`45s`, `12m`, `3h 5m`, `2d 4h`."""
    return "" if delta is None else age_text(delta)


def incident_age(row: IncidentRow, now: datetime) -> str:
    """How long it has been firing, or how long it lasted."""
    start = row.active_since or row.opened_at
    end = row.resolved_at if row.status == "resolved" and row.resolved_at else now
    return duration_text(end - start)


def when(value: datetime | str | None) -> str:
    """An absolute UTC time, to the second; a text that is not a time is shown as it is."""
    t = parse_time(value)
    if t is None:
        return value if isinstance(value, str) else ""
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def short_time(value: datetime | str | None) -> str:
    text = when(value)
    return text[5:16] if text and text[0].isdigit() else text


def delivery_headline(message: object) -> str:
    """What a delivery was about: its first item's headline; "" for a message that cannot be read."""
    items = message.get("items") if isinstance(message, Mapping) else None
    if not isinstance(items, list) or not items:
        return ""
    try:
        return MessageSnapshot.from_json(items[0]).headline
    except MessageError:
        return ""


def silence_state(row: SilenceRow, now: datetime) -> str:
    if row.ends_at <= now:
        return "expired"
    return "pending" if row.starts_at > now else "active"


def cap_text(value: object, limit: int = VALUE_CAP) -> str:
    """`value` as text, cut after `limit` characters with a note of how much was left out."""
    text = "" if value is None else str(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def shown_labels(values: Mapping[str, object], limit: int = LABELS_SHOWN) -> tuple[list[tuple[str, str]], int]:
    """The first `limit` labels by name, names and values capped, and how many more there are."""
    names = sorted(values)
    shown = [(cap_text(name, NAME_CAP), cap_text(values[name])) for name in names[:limit]]
    return shown, len(names) - len(shown)

"""The input limits: what an accepted alert may hold, checked once at ingest for both stores.

Everything past this boundary (the store's columns, the engine's time arithmetic, the renderers)
may rely on these limits. They are those of the tighter store (PostgreSQL's `varchar(255)`
alertname, Python's datetime range that asyncpg reads into) and generous for anything an exporter
or Alertmanager really sends. A value outside them rejects its own alert with a 400 that names the
field, never the rest of the payload, and never a 5xx that Alertmanager would retry for ever.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from alertrouter.model import NAME_MAX

__all__ = [
    "MAX_ALERTNAME",
    "MAX_ANNOTATIONS",
    "MAX_ANNOTATION_VALUE",
    "MAX_GENERATOR_URL",
    "MAX_LABELS",
    "MAX_LABEL_VALUE",
    "MAX_NAME",
    "MAX_RECEIVER",
    "MAX_TRUNCATED",
    "TIME_MAX",
    "TIME_MIN",
    "check_instant",
    "check_mapping",
    "shown",
]

MAX_LABELS = 256  # labels per alert (kube-state-metrics alerts carry 30-60)
MAX_NAME = 256  # characters in a label or annotation name
MAX_LABEL_VALUE = 4096  # characters in a label value
MAX_ALERTNAME = NAME_MAX  # characters: the alerts.alertname column
MAX_ANNOTATIONS = 256
MAX_ANNOTATION_VALUE = 65536  # characters: descriptions and runbooks, not documents
MAX_GENERATOR_URL = 65536  # Prometheus puts the URL-encoded expression here
MAX_RECEIVER = NAME_MAX  # characters: the raw log's receiver column
MAX_TRUNCATED = 2**31 - 1  # an INTEGER column on both stores
# Timestamps are normalised to UTC and must fall in [TIME_MIN, TIME_MAX): before the Unix epoch
# nothing real happened, and the ceiling leaves the engine's time arithmetic (hold-downs, repeat
# intervals, retention) far from Python's year-9999 end, past which a stored row cannot be read.
TIME_MIN = datetime(1970, 1, 1, tzinfo=UTC)
TIME_MAX = datetime(9000, 1, 1, tzinfo=UTC)
_SHOWN = 64  # characters of an offending name quoted in an error


def shown(text: str) -> str:
    """A name quoted in an error, cut so that a hostile 20,000-character name does not fill the answer."""
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "…")


def check_instant(value: datetime, where: str) -> datetime | str:
    """`value` in UTC, or the problem with it: no time zone, or outside [TIME_MIN, TIME_MAX)."""
    if value.tzinfo is None or value.utcoffset() is None:
        return f"{where}: timestamp without a time zone (RFC 3339 needs Z or an offset)"
    try:
        utc = value if value.tzinfo is UTC else value.astimezone(UTC)
    except OverflowError:
        return f"{where}: out of range (timestamps must be from {TIME_MIN:%Y-%m-%d} to before {TIME_MAX:%Y-%m-%d} UTC)"
    if not TIME_MIN <= utc < TIME_MAX:
        return f"{where}: out of range (timestamps must be from {TIME_MIN:%Y-%m-%d} to before {TIME_MAX:%Y-%m-%d} UTC)"
    return utc


def check_mapping(items: Mapping[str, str], where: str, *, most: int, longest_value: int) -> str | None:
    """Count, name length and value length of a label or annotation set (C-speed in the common case)."""
    if len(items) > most:
        return f"{where}: {len(items)} entries, at most {most}"
    if not items:
        return None
    if max(map(len, items)) > MAX_NAME:
        name = next(n for n in items if len(n) > MAX_NAME)
        return f"{where}: name {shown(name)} has {len(name)} characters, at most {MAX_NAME}"
    if max(map(len, items.values())) > longest_value:
        name = next(n for n, v in items.items() if len(v) > longest_value)
        return f"{where}.{name}: value has {len(items[name])} characters, at most {longest_value}"
    return None

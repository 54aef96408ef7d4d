"""How stored rows read on a console page: incident state, the GPU grid, ages, why an alert was decided
as it was, in the page's language and time zone. Pure functions over rows and dicts; the templates escape
whatever these return."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache
from gettext import NullTranslations
from typing import Any

from alertrouter.message import i18n, phrases, vocabulary
from alertrouter.message.ages import age_text
from alertrouter.message.facts import NodeFacts, Tally, facts_from_json
from alertrouter.message.snapshot import MessageError, MessageSnapshot
from alertrouter.message.vocabulary import IncidentState, SilenceState, say
from alertrouter.model import HEARTBEAT_ALERTNAME, AlertStatus, IncidentKind, parse_time
from alertrouter.pipeline.stale import Reason
from alertrouter.render.context import unit_cells
from alertrouter.store.console import AlertTimes
from alertrouter.store.tables import IncidentRow, SilenceRow

__all__ = [
    "DECISION_TEXT",
    "LABELS_SHOWN",
    "LANGUAGE_NAMES",
    "N_",
    "VALUE_CAP",
    "Cell",
    "alert_state",
    "cap_text",
    "delivery_headline",
    "duration_text",
    "gpu_grid",
    "incident_age",
    "incident_headline",
    "incident_state",
    "message_kind",
    "short_time",
    "shown_labels",
    "silence_state",
    "when",
    "who",
    "word",
]


def N_(message: str) -> str:
    """Marks a console word said from Python for the catalogue (Babel extracts `N_`); the page translates it."""
    return message


# The switch shows each language in its own words, so a reader finds theirs whatever the page is in.
LANGUAGE_NAMES = {"en": "English", "zh-CN": "中文"}

# A page shows at most this much of one label or annotation value, and this many labels per alert: one
# alert with huge labels must not make a page of megabytes. The JSON API keeps the whole values.
VALUE_CAP = 1000
NAME_CAP = 200  # label names
LABELS_SHOWN = 40

# What a decision means, said in full: the English (msgid) by stored value, for the templates.
DECISION_TEXT = {str(decision): term.text for decision, term in vocabulary.DECISION_TEXT.items()}


def message_kind(tr: NullTranslations, kind: object) -> str:
    """What a delivery carried (`message.vocabulary.MESSAGE_KINDS`), in the deliveries and dead letters tables."""
    text = "" if kind is None else str(kind)
    return say(tr, vocabulary.MESSAGE_KINDS, text) or text


def who(tr: NullTranslations, name: object) -> str:
    """Who acknowledged or silenced: a person's or token's name as stored, or a message's signed link
    (`web.operations.use_link` records those as `link`)."""
    text = "" if name is None else str(name)
    return tr.gettext("a signed link") if text == "link" else text


def word(tr: NullTranslations, value: object) -> str:
    """A stored state, decision or outcome in the page's language (`message.vocabulary.CONSOLE_WORDS`); one
    the product does not list is shown as stored."""
    text = "" if value is None else str(value)
    return say(tr, vocabulary.CONSOLE_WORDS, text) or text


@dataclass(frozen=True, slots=True)
class Cell:
    unit: str
    firing: bool
    title: str  # in the page's language


def incident_state(row: IncidentRow) -> str:
    """resolved, acknowledged, silenced (every firing alert silenced), no_data (alerts stale: its node or
    exporter went dark, `pipeline.stale`) or notified."""
    if row.status == AlertStatus.RESOLVED:
        return AlertStatus.RESOLVED
    if row.acknowledged_at is not None:
        return IncidentState.ACKNOWLEDGED
    tally = Tally.from_json(row.summary or {})
    if (tally.stale or 0) > 0 and not tally.eligible:
        return IncidentState.NO_DATA
    firing, silenced = tally.firing, tally.silenced
    if firing is not None and silenced is not None and firing > 0 and silenced >= firing:
        return IncidentState.SILENCED
    return IncidentState.NOTIFIED


def alert_state(tr: NullTranslations, status: object, detail: Mapping[str, Any] | None, node: str) -> str:
    """An alert's status beside its decision: a stale alert's data stopped, it did not resolve
    (`pipeline.stale`): `no data (gpu-node-07 down)` while the source-down alert of `node` fires, `no data
    (gpu-node-07 was down)` once it resolved, `no data` while nothing explains it yet (held together)."""
    reason = (detail or {}).get("stale_reason")
    if reason == Reason.SOURCE_DOWN:
        return tr.gettext("no data (%(node)s down)") % {"node": node}
    if reason == Reason.RETURNING:
        return tr.gettext("no data (%(node)s was down)") % {"node": node}
    if reason in (Reason.TOGETHER, Reason.RESOLVING):
        return word(tr, "no_data" if reason == Reason.TOGETHER else Reason.RESOLVING)
    return word(tr, status)


_ENGLISH = NullTranslations()


def gpu_grid(summary: Mapping[str, Any], tr: NullTranslations = _ENGLISH) -> list[Cell]:
    """One cell per unit of the node, lit when it alerts (`render.context.unit_cells`, as in chat)."""
    facts = NodeFacts.from_json(summary)
    cells = unit_cells(facts.units, facts.units_total)
    return [_cell(tr, str(i), lit) for i, lit in enumerate(cells)]


@lru_cache(maxsize=1024)
def _cell(tr: NullTranslations, unit: str, firing: bool) -> Cell:
    """Worded once per language: a page of node incidents has eight cells a row, and the template's
    `_()` per cell was a third of the incident list's rendering."""
    title = tr.gettext("GPU %(unit)s alerting") if firing else tr.gettext("GPU %(unit)s")
    return Cell(unit, firing, title % {"unit": unit})


def duration_text(delta: timedelta | None, tr: NullTranslations = _ENGLISH) -> str:
    """`45s`, `12m`, `3h 5m`, `2d 4h` (`12 分钟`, ...): `message.ages.age_text`, as messages say it."""
    return "" if delta is None else age_text(tr, delta)


def incident_span(row: IncidentRow, now: datetime, times: AlertTimes | None = None) -> tuple[datetime, datetime]:
    """When it started and ended (firing: now), as its alerts say (`store.console.alert_times`): from
    their earliest startsAt to the endsAt that resolved it, as messages tell it. Without alert times (its
    alerts are gone), from when alertrouter opened it to when it resolved it."""
    if row.status != AlertStatus.RESOLVED:
        since = times.firing_since if times is not None else None
        return since or row.active_since or row.opened_at, now
    started, ended = (times.started, times.ended) if times is not None else (None, None)
    return started or row.active_since or row.opened_at, ended or row.resolved_at or now


def incident_age(
    row: IncidentRow, now: datetime, tr: NullTranslations = _ENGLISH, times: AlertTimes | None = None
) -> str:
    """How long it has been firing, or how long it lasted (`incident_span`)."""
    start, end = incident_span(row, now, times)
    return duration_text(end - start, tr)


def when(value: datetime | str | None, zone: tzinfo = UTC) -> str:
    """An absolute time in `zone` (the rules' `global.timezone`), to the second, with the zone's
    abbreviation; a text that is not a time is shown as it is."""
    t = parse_time(value)
    if t is None:
        return value if isinstance(value, str) else ""
    try:
        local = t.astimezone(zone)
    except OverflowError:  # a zone east of UTC would take 9999-12-31T23:00Z past year 9999
        local = t.astimezone(UTC)
    return local.strftime("%Y-%m-%d %H:%M:%S %Z")


def short_time(value: datetime | str | None, zone: tzinfo = UTC) -> str:
    """`MM-DD HH:MM` in `zone`."""
    text = when(value, zone)
    return text[5:16] if text and text[0].isdigit() else text


def incident_headline(tr: NullTranslations, row: IncidentRow, language: str) -> str:
    """The incident's headline worded in the page's language from the facts in its summary, as messages
    word it (`message.phrases.headline`); English pages show the stored headline, which is the same words (except
    for a silent heartbeat's incident, worded "monitoring is blind: <name>" in every language)."""
    if language == i18n.DEFAULT_LANGUAGE and (row.labels or {}).get("alertname") != HEARTBEAT_ALERTNAME:
        return row.headline
    try:
        kind = IncidentKind(row.kind)
    except ValueError:
        return row.headline
    snapshot = MessageSnapshot(
        incident=row.key,
        kind=kind,
        reason="",
        status=AlertStatus.RESOLVED if row.status == AlertStatus.RESOLVED else AlertStatus.FIRING,
        severity=row.severity,
        headline=row.headline,
        labels=row.labels or {},
        summary=facts_from_json(kind, row.summary),
    )
    return phrases.headline(tr, snapshot) or row.headline


def delivery_headline(message: object, tr: NullTranslations = _ENGLISH) -> str:
    """What a delivery was about: its first item's headline in the page's language; "" for a message
    that cannot be read."""
    items = message.get("items") if isinstance(message, Mapping) else None
    if not isinstance(items, list) or not items:
        return ""
    try:
        return phrases.headline(tr, MessageSnapshot.from_json(items[0]))
    except MessageError:
        return ""


def silence_state(row: SilenceRow, now: datetime) -> str:
    """expired, active, or pending (not begun: worded `not_started`, as the template asks)."""
    if row.ends_at <= now:
        return SilenceState.EXPIRED
    return "pending" if row.starts_at > now else SilenceState.ACTIVE


def cap_text(value: object, limit: int = VALUE_CAP, tr: NullTranslations = _ENGLISH) -> str:
    """`value` as text, cut after `limit` characters with a note of how much was left out."""
    text = "" if value is None else str(value)
    if len(text) <= limit:
        return text
    return text[:limit] + tr.gettext("… (%(n)s more characters)") % {"n": len(text) - limit}


def shown_labels(
    values: Mapping[str, object], limit: int = LABELS_SHOWN, tr: NullTranslations = _ENGLISH
) -> tuple[list[tuple[str, str]], int]:
    """The first `limit` labels by name, names and values capped, and how many more there are."""
    names = sorted(values)
    shown = [(cap_text(name, NAME_CAP, tr), cap_text(values[name], VALUE_CAP, tr)) for name in names[:limit]]
    return shown, len(names) - len(shown)

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

from alertrouter.message import i18n, phrases
from alertrouter.message.ages import age_text
from alertrouter.message.facts import NodeFacts, Tally, facts_from_json
from alertrouter.message.snapshot import MessageError, MessageSnapshot
from alertrouter.model import HEARTBEAT_ALERTNAME, AlertStatus, IncidentKind, parse_time
from alertrouter.pipeline.stale import Reason
from alertrouter.render.context import unit_cells
from alertrouter.store.console import AlertTimes
from alertrouter.store.tables import IncidentRow, SilenceRow

__all__ = [
    "DECISION_TEXT",
    "LABELS_SHOWN",
    "LANGUAGE_NAMES",
    "MESSAGE_KINDS",
    "N_",
    "VALUE_CAP",
    "WORDS",
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

DECISION_TEXT = {
    "notify": N_("notified"),
    "aggregated": N_("aggregated into the incident"),
    "rolled_up": N_("rolled up into a cluster incident"),
    "throttled": N_("throttled (already told)"),
    "inhibited": N_("inhibited"),
    "held": N_("held (waiting for a possible source)"),
    "silenced": N_("silenced"),
    "muted_by_interval": N_("muted by a time interval (its routes send nothing now)"),
    "quarantined": N_("quarantined (processing it failed; left out of every pass)"),
    "resolved": N_("resolved"),
    "stale": N_("stale: resolved because its data stopped, told resolved when the data returns"),
    "resolving": N_("resolving: its resolve waits to see whether its node went dark"),
}

# The product's one-word states and outcomes as a page shows them (badges, tables); the stored value stays
# in `data-*` attributes and URLs. A value not listed (a future state) is shown as stored.
WORDS = {
    # incidents
    "notified": N_("notified"),
    "acknowledged": N_("acknowledged"),
    "silenced": N_("silenced"),
    "resolved": N_("resolved"),
    "firing": N_("firing"),
    # decisions of alerts
    "notify": N_("notify"),
    "aggregated": N_("aggregated"),
    "rolled_up": N_("rolled up"),
    "throttled": N_("throttled"),
    "inhibited": N_("inhibited"),
    "held": N_("held"),
    "muted_by_interval": N_("muted by interval"),
    "quarantined": N_("quarantined"),
    "pending": N_("pending"),
    "stale": N_("stale"),
    "resolving": N_("resolving"),
    "no_data": N_("no data"),
    # why an alert is stale (`pipeline.stale.Reason`)
    "source_down": N_("a node-down alert of its node fires"),
    "together": N_("its exporter's alerts resolved together"),
    "returning": N_("its node is back: waiting for it to fire again"),
    # kinds
    "node": N_("node"),
    "cluster": N_("cluster"),
    # silences ("pending" is an alert's or a delivery's word; a silence that has not begun is `not_started`)
    "active": N_("active"),
    "not_started": N_("not started"),
    "expired": N_("expired"),
    # notifications (the throttle's reasons), outbox rows, deliveries and their attempts
    "first": N_("first"),
    "grew": N_("grew"),
    "repeat": N_("repeat"),
    "escalated": N_("escalated"),
    "exhausted": N_("every step taken"),
    "policy_gone": N_("policy removed from the rules"),
    "superseded": N_("superseded by a new chain"),
    "started": N_("started"),
    "step": N_("step taken"),
    "dispatched": N_("dispatched"),
    "no_channels": N_("no channels"),
    "sending": N_("sending"),
    "sent": N_("sent"),
    "dead": N_("dead"),
    "coalesced": N_("coalesced"),
    "failed_over": N_("failed over"),
    "split": N_("split"),
    "capped": N_("capped"),
    "unconfigured": N_("unconfigured"),
    "discarded": N_("discarded"),
    "in_flight": N_("in flight"),
    "lost": N_("lost"),
    "error": N_("error"),
    "rate_limited": N_("rate limited"),
    "retry": N_("will retry"),
    # node addresses
    "learned": N_("learned"),
    "configured": N_("configured"),
    "prometheus": N_("Prometheus"),
}


# What a delivery carried (`channels.base.MessageKind`), in the deliveries and dead letters tables.
MESSAGE_KINDS = {
    "firing": N_("firing message"),
    "update": N_("update message"),
    "resolved": N_("resolved message"),
    "cluster": N_("storm message"),
    "coalesced": N_("combined message"),
}


def message_kind(tr: NullTranslations, kind: object) -> str:
    text = "" if kind is None else str(kind)
    return tr.gettext(MESSAGE_KINDS[text]) if text in MESSAGE_KINDS else text


def who(tr: NullTranslations, name: object) -> str:
    """Who acknowledged or silenced: a person's or token's name as stored, or a message's signed link
    (`web.operations.use_link` records those as `link`)."""
    text = "" if name is None else str(name)
    return tr.gettext("a signed link") if text == "link" else text


def word(tr: NullTranslations, value: object) -> str:
    """A stored state or outcome in the page's language; one the product does not list is shown as stored."""
    text = "" if value is None else str(value)
    return tr.gettext(WORDS[text]) if text in WORDS else text


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
        return "acknowledged"
    tally = Tally.from_json(row.summary or {})
    if (tally.stale or 0) > 0 and not tally.eligible:
        return "no_data"
    firing, silenced = tally.firing, tally.silenced
    if firing is not None and silenced is not None and firing > 0 and silenced >= firing:
        return "silenced"
    return "notified"


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
    if row.ends_at <= now:
        return "expired"
    return "pending" if row.starts_at > now else "active"


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

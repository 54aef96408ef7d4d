"""The product's fixed words, in one place: severities, statuses, reasons, decisions, incident kinds, noise
mechanisms, delivery outcomes and the console's other one-word states, each catalogue keyed by the enum of
what it names. A `Term` is the English (the msgid) and its gettext context; `Words` says them in one
language, and the console and the digest read theirs from here too.

Several catalogues name the same value on purpose: a message says why it is sent (`new`, `more alerts
joined`), the console's tables name the reason (`first`, `grew`), the digest's its own way (context
`reason`); the contexts keep translators free to word each place as it reads.

The enums the engine's values come from (`pipeline.types.Decision`, `pipeline.throttle.NotifyReason`,
`pipeline.stale.Reason`, `pipeline.escalation.Stop`) live in the stage that decides them, which imports
`message`, so the catalogues are keyed by enums of the same values here; `tests/message/test_vocabulary.py`
holds the two sides equal. A value no catalogue lists (a future state) is shown as stored.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from gettext import NullTranslations
from typing import Any, TypeVar

from alertrouter.model import AlertStatus, AttemptOutcome, DeliveryStatus, IncidentKind, OutboxStatus

__all__ = [
    "ADDRESS_SOURCES",
    "ATTEMPTS",
    "CONSOLE_CATALOGUES",
    "CONSOLE_REASONS",
    "CONSOLE_WORDS",
    "DECISIONS",
    "DECISION_TEXT",
    "DELIVERIES",
    "DELIVERY_OUTCOMES",
    "DIGEST_REASONS",
    "ESCALATIONS",
    "INCIDENT_STATES",
    "KINDS",
    "MECHANISMS",
    "MESSAGE_KINDS",
    "N_",
    "OUTBOX",
    "REASONS",
    "SEVERITY_LABELS",
    "SEVERITY_NAMES",
    "SILENCE_STATES",
    "STALE_REASONS",
    "STATUS",
    "AddressSource",
    "Decision",
    "Escalation",
    "IncidentState",
    "MessageKind",
    "Reason",
    "Severity",
    "SilenceState",
    "StaleReason",
    "Term",
    "enum_of",
    "pgettext",
    "say",
]


@dataclass(frozen=True, slots=True)
class Term:
    """A fixed word: its English (the catalogue's msgid) and the gettext context it is translated in."""

    text: str
    context: str | None = None

    def said(self, tr: NullTranslations) -> str:
        return tr.pgettext(self.context, self.text) if self.context is not None else tr.gettext(self.text)


def N_(text: str) -> Term:
    """Marks a word for the catalogue (Babel extracts `N_`); translated when said."""
    return Term(text)


def pgettext(context: str, text: str) -> Term:
    """Marks a word of a context for the catalogue (Babel extracts `pgettext` with its context); translated
    when said, not here."""
    return Term(text, context)


class Severity(enum.StrEnum):
    """The severities the product words; any other is data, shown as written."""

    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"


class Reason(enum.StrEnum):
    """Why a message is sent (`pipeline.throttle.NotifyReason`'s values)."""

    FIRST = "first"
    GREW = "grew"
    REPEAT = "repeat"
    RESOLVED = "resolved"
    ESCALATED = "escalated"


class Decision(enum.StrEnum):
    """What the engine decided about an alert (`pipeline.types.Decision`'s values)."""

    NOTIFY = "notify"
    AGGREGATED = "aggregated"
    ROLLED_UP = "rolled_up"
    THROTTLED = "throttled"
    INHIBITED = "inhibited"
    SILENCED = "silenced"
    MAINTENANCE = "maintenance"
    HELD = "held"
    MUTED_BY_INTERVAL = "muted_by_interval"
    RESOLVED = "resolved"
    RESOLVING = "resolving"
    STALE = "stale"
    QUARANTINED = "quarantined"


class StaleReason(enum.StrEnum):
    """Why an alert's data stopped (`pipeline.stale.Reason`'s values)."""

    SOURCE_DOWN = "source_down"
    TOGETHER = "together"
    RETURNING = "returning"
    RESOLVING = "resolving"


class IncidentState(enum.StrEnum):
    """An incident as the console shows it (`web.console.views.incident_state`); resolved is its status."""

    NOTIFIED = "notified"
    ACKNOWLEDGED = "acknowledged"
    SILENCED = "silenced"
    NO_DATA = "no_data"


class SilenceState(enum.StrEnum):
    """A silence as the console shows it; one that has not begun is `not_started` (`pending` is an alert's
    or a delivery's word)."""

    ACTIVE = "active"
    NOT_STARTED = "not_started"
    EXPIRED = "expired"


class Escalation(enum.StrEnum):
    """What happened to an escalation chain: it started, took a step, or stopped (the stops that are not
    `pipeline.escalation.Stop`'s other words: acknowledged, resolved, silenced, ...)."""

    STARTED = "started"
    STEP = "step"
    EXHAUSTED = "exhausted"
    POLICY_GONE = "policy_gone"
    SUPERSEDED = "superseded"


class AddressSource(enum.StrEnum):
    """Where the console's node page learned a node's address."""

    LEARNED = "learned"
    CONFIGURED = "configured"
    PROMETHEUS = "prometheus"


class MessageKind(enum.StrEnum):
    """Which template a notification is rendered with."""

    FIRING = "firing"  # an incident's first message
    UPDATE = "update"  # more alerts joined, or a repeat of a still-firing incident
    RESOLVED = "resolved"
    CLUSTER = "cluster"  # a storm roll-up (cluster incident), first message or update
    COALESCED = "coalesced"  # several notifications for one robot merged into one message


# A message's words: a title's severity, running text's, the status, why it is sent.
SEVERITY_LABELS: Mapping[Severity, Term] = {
    Severity.CRITICAL: N_("CRITICAL"),
    Severity.WARNING: N_("WARNING"),
    Severity.INFO: N_("INFO"),
}
SEVERITY_NAMES: Mapping[Severity, Term] = {
    Severity.CRITICAL: N_("critical"),
    Severity.WARNING: N_("warning"),
    Severity.INFO: N_("info"),
}
STATUS: Mapping[AlertStatus, Term] = {AlertStatus.FIRING: N_("firing"), AlertStatus.RESOLVED: N_("resolved")}
REASONS: Mapping[Reason, Term] = {  # escalated is worded with its step (`Words.reason`)
    Reason.FIRST: N_("new"),
    Reason.GREW: N_("more alerts joined"),
    Reason.REPEAT: N_("still firing"),
    Reason.RESOLVED: N_("resolved"),
}

# What a decision means, said in full on an alert's page.
DECISION_TEXT: Mapping[Decision, Term] = {
    Decision.NOTIFY: N_("notified"),
    Decision.AGGREGATED: N_("aggregated into the incident"),
    Decision.ROLLED_UP: N_("rolled up into a cluster incident"),
    Decision.THROTTLED: N_("throttled (already told)"),
    Decision.INHIBITED: N_("inhibited"),
    Decision.HELD: N_("held (waiting for a possible source)"),
    Decision.SILENCED: N_("silenced"),
    Decision.MAINTENANCE: N_("its node is in maintenance: shown, not sent"),
    Decision.MUTED_BY_INTERVAL: N_("muted by a time interval (its routes send nothing now)"),
    Decision.QUARANTINED: N_("quarantined (processing it failed; left out of every pass)"),
    Decision.RESOLVED: N_("resolved"),
    Decision.STALE: N_("stale: resolved because its data stopped, told resolved when the data returns"),
    Decision.RESOLVING: N_("resolving: its resolve waits to see whether its node went dark"),
}

# The console's one-word states and outcomes (badges, tables); the stored value stays in `data-*`
# attributes and URLs.
INCIDENT_STATES: Mapping[IncidentState, Term] = {
    IncidentState.NOTIFIED: N_("notified"),
    IncidentState.ACKNOWLEDGED: N_("acknowledged"),
    IncidentState.SILENCED: N_("silenced"),
    IncidentState.NO_DATA: N_("no data"),
}
DECISIONS: Mapping[Decision, Term] = {
    Decision.NOTIFY: N_("notify"),
    Decision.AGGREGATED: N_("aggregated"),
    Decision.ROLLED_UP: N_("rolled up"),
    Decision.THROTTLED: N_("throttled"),
    Decision.INHIBITED: N_("inhibited"),
    Decision.SILENCED: N_("silenced"),
    Decision.MAINTENANCE: N_("maintenance"),
    Decision.HELD: N_("held"),
    Decision.MUTED_BY_INTERVAL: N_("muted by interval"),
    Decision.RESOLVED: N_("resolved"),
    Decision.RESOLVING: N_("resolving"),
    Decision.STALE: N_("stale"),
    Decision.QUARANTINED: N_("quarantined"),
}
STALE_REASONS: Mapping[StaleReason, Term] = {
    StaleReason.SOURCE_DOWN: N_("a node-down alert of its node fires"),
    StaleReason.TOGETHER: N_("its exporter's alerts resolved together"),
    StaleReason.RETURNING: N_("its node is back: waiting for it to fire again"),
    StaleReason.RESOLVING: N_("resolving"),
}
KINDS: Mapping[IncidentKind, Term] = {IncidentKind.NODE: N_("node"), IncidentKind.CLUSTER: N_("cluster")}
SILENCE_STATES: Mapping[SilenceState, Term] = {
    SilenceState.ACTIVE: N_("active"),
    SilenceState.NOT_STARTED: N_("not started"),
    SilenceState.EXPIRED: N_("expired"),
}
CONSOLE_REASONS: Mapping[Reason, Term] = {
    Reason.FIRST: N_("first"),
    Reason.GREW: N_("grew"),
    Reason.REPEAT: N_("repeat"),
    Reason.RESOLVED: N_("resolved"),
    Reason.ESCALATED: N_("escalated"),
}
ESCALATIONS: Mapping[Escalation, Term] = {
    Escalation.STARTED: N_("started"),
    Escalation.STEP: N_("step taken"),
    Escalation.EXHAUSTED: N_("every step taken"),
    Escalation.POLICY_GONE: N_("policy removed from the rules"),
    Escalation.SUPERSEDED: N_("superseded by a new chain"),
}
OUTBOX: Mapping[OutboxStatus, Term] = {
    OutboxStatus.PENDING: N_("pending"),
    OutboxStatus.DISPATCHED: N_("dispatched"),
    OutboxStatus.NO_CHANNELS: N_("no channels"),
    OutboxStatus.QUARANTINED: N_("quarantined"),
}
DELIVERIES: Mapping[DeliveryStatus, Term] = {
    DeliveryStatus.PENDING: N_("pending"),
    DeliveryStatus.SENDING: N_("sending"),
    DeliveryStatus.SENT: N_("sent"),
    DeliveryStatus.DEAD: N_("dead"),
    DeliveryStatus.COALESCED: N_("coalesced"),
    DeliveryStatus.FAILED_OVER: N_("failed over"),
    DeliveryStatus.SPLIT: N_("split"),
    DeliveryStatus.CAPPED: N_("capped"),
    DeliveryStatus.UNCONFIGURED: N_("unconfigured"),
    DeliveryStatus.DISCARDED: N_("discarded"),
}
ATTEMPTS: Mapping[AttemptOutcome, Term] = {
    AttemptOutcome.IN_FLIGHT: N_("in flight"),
    AttemptOutcome.SENT: N_("sent"),
    AttemptOutcome.RETRY: N_("will retry"),
    AttemptOutcome.RATE_LIMITED: N_("rate limited"),
    AttemptOutcome.DEAD: N_("dead"),
    AttemptOutcome.ERROR: N_("error"),
    AttemptOutcome.LOST: N_("lost"),
}
ADDRESS_SOURCES: Mapping[AddressSource, Term] = {
    AddressSource.LEARNED: N_("learned"),
    AddressSource.CONFIGURED: N_("configured"),
    AddressSource.PROMETHEUS: N_("Prometheus"),
}
# What a delivery carried, in the deliveries and dead letters tables.
MESSAGE_KINDS: Mapping[MessageKind, Term] = {
    MessageKind.FIRING: N_("firing message"),
    MessageKind.UPDATE: N_("update message"),
    MessageKind.RESOLVED: N_("resolved message"),
    MessageKind.CLUSTER: N_("storm message"),
    MessageKind.COALESCED: N_("combined message"),
}

# The digest's names, in their own contexts: what kept alerts from being messages of their own (the
# decisions `digest.summarize.MECHANISMS` counts, and `held`), why a message was intended, and how a
# delivery that was not sent ended.
MECHANISMS: Mapping[Decision, Term] = {
    Decision.INHIBITED: pgettext("mechanism", "inhibited"),
    Decision.AGGREGATED: pgettext("mechanism", "aggregated"),
    Decision.ROLLED_UP: pgettext("mechanism", "rolled up"),
    Decision.THROTTLED: pgettext("mechanism", "throttled"),
    Decision.SILENCED: pgettext("mechanism", "silenced"),
    Decision.MAINTENANCE: pgettext("mechanism", "node in maintenance"),
    Decision.MUTED_BY_INTERVAL: pgettext("mechanism", "muted by interval"),
    Decision.HELD: pgettext("mechanism", "held"),
    Decision.STALE: pgettext("mechanism", "stale (no data)"),
}
DIGEST_REASONS: Mapping[Reason, Term] = {
    Reason.FIRST: pgettext("reason", "first"),
    Reason.GREW: pgettext("reason", "grew"),
    Reason.REPEAT: pgettext("reason", "repeat"),
    Reason.RESOLVED: pgettext("reason", "resolved"),
    Reason.ESCALATED: pgettext("reason", "escalated"),
}
DELIVERY_OUTCOMES: Mapping[DeliveryStatus, Term] = {  # sent is counted, not named
    DeliveryStatus.PENDING: pgettext("delivery", "pending"),
    DeliveryStatus.SENDING: pgettext("delivery", "sending"),
    DeliveryStatus.DEAD: pgettext("delivery", "dead"),
    DeliveryStatus.COALESCED: pgettext("delivery", "coalesced"),
    DeliveryStatus.FAILED_OVER: pgettext("delivery", "failed over"),
    DeliveryStatus.SPLIT: pgettext("delivery", "split"),
    DeliveryStatus.CAPPED: pgettext("delivery", "capped"),
    DeliveryStatus.UNCONFIGURED: pgettext("delivery", "unconfigured"),
    DeliveryStatus.DISCARDED: pgettext("delivery", "discarded"),
}


# The catalogues of the console's one-word values (badges, tables). Those that name the same value name it
# alike (`resolved`, `pending`, `sent`, ...), which `tests/message/test_vocabulary.py` holds.
CONSOLE_CATALOGUES: tuple[Mapping[Any, Term], ...] = (
    STATUS,
    INCIDENT_STATES,
    DECISIONS,
    STALE_REASONS,
    KINDS,
    SILENCE_STATES,
    CONSOLE_REASONS,
    ESCALATIONS,
    OUTBOX,
    DELIVERIES,
    ATTEMPTS,
    ADDRESS_SOURCES,
)
# The console's `word` filter: a stored state, decision or outcome -> its word.
CONSOLE_WORDS: Mapping[str, Term] = {
    str(value): term for catalogue in CONSOLE_CATALOGUES for value, term in catalogue.items()
}

_E = TypeVar("_E", bound=enum.StrEnum)


def enum_of(kind: type[_E], value: str) -> _E | None:
    """`value` as a member of `kind`, or None for a value the enum does not list."""
    try:
        return kind(value)
    except ValueError:
        return None


def say(tr: NullTranslations, catalogue: Mapping[Any, Term], value: object) -> str | None:
    """The word `catalogue` has for `value` (an enum member or its stored text) in the language of `tr`;
    None for a value it does not list."""
    term = catalogue.get(value) if isinstance(value, str) else None
    return term.said(tr) if term is not None else None

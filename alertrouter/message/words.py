"""The words a message is told in, of one language, asked for once per message (`words_for`): severity
and status words, why it is sent, headlines, ages, counts, places and units.

The renderer builds a notification's context from one `Words`, and the channels take theirs from the
same object: the receiver's language is looked up once, not by each word. The templates' own sentences
stay `_()` calls in the templates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache
from gettext import NullTranslations

from alertrouter.message import ages, phrases, vocabulary
from alertrouter.message.facts import EscalationNote, Facts, MemberFacts
from alertrouter.message.i18n import DEFAULT_LANGUAGE, localized_annotations, translations
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.message.vocabulary import Reason, Severity, enum_of
from alertrouter.model import AlertStatus

__all__ = ["Reason", "Severity", "Words", "words_for"]


@dataclass(frozen=True, slots=True, eq=False)
class Words:
    """Every word of one language a message is told in: the fixed ones worded when made, keyed by enum
    (`labels`: `CRITICAL` / `严重` in a title; `names`: `critical` / `严重` in running text), said from
    `message.vocabulary`'s catalogues, and the phrases made from a message's facts (`headline`, `age`, ...)."""

    language: str
    tr: NullTranslations
    labels: Mapping[Severity, str] = field(default_factory=dict)
    names: Mapping[Severity, str] = field(default_factory=dict)
    status: Mapping[AlertStatus, str] = field(default_factory=dict)
    reasons: Mapping[Reason, str] = field(default_factory=dict)

    @classmethod
    def of(cls, language: str, tr: NullTranslations) -> Words:
        labels = {s: term.said(tr) for s, term in vocabulary.SEVERITY_LABELS.items()}
        names = {s: term.said(tr) for s, term in vocabulary.SEVERITY_NAMES.items()}
        status = {s: term.said(tr) for s, term in vocabulary.STATUS.items()}
        reasons = {r: term.said(tr) for r, term in vocabulary.REASONS.items()}
        return cls(language, tr, labels, names, status, reasons)

    def severity_label(self, severity: str, *, resolved: bool = False) -> str:
        """`CRITICAL` / `严重`, `RESOLVED` / `已恢复`; an unknown severity upper case, an empty one `ALERT`."""
        if resolved:
            return self.tr.gettext("RESOLVED")
        known = enum_of(Severity, severity.lower())
        return self.labels[known] if known is not None else severity.upper() or self.tr.gettext("ALERT")

    def severity_name(self, severity: str) -> str:
        """`critical` / `严重` in running text; `resolved` / `已恢复`; an unknown severity as written."""
        if severity == AlertStatus.RESOLVED:
            return self.status[AlertStatus.RESOLVED]
        known = enum_of(Severity, severity.lower())
        return self.names[known] if known is not None else severity

    def reason(self, reason: str, facts: Facts | None = None) -> str | None:
        """Why an update is sent (`more alerts joined` / `有新的告警加入`); an escalation's step from its note;
        None for a reason the product does not know."""
        known = enum_of(Reason, reason)
        if known is Reason.ESCALATED:
            note = (facts.escalation if facts is not None else None) or EscalationNote()
            return self.tr.gettext("escalated: not acknowledged for %(after)s, step %(step)s of %(steps)s") % {
                "after": self.age(timedelta(seconds=note.after_seconds)),
                "step": note.step,
                "steps": note.steps,
            }
        return self.reasons.get(known) if known is not None else None

    def counts(self, counts: Sequence[tuple[str, int]]) -> str:
        """`3 critical, 9 warning` / `3 条严重，9 条警告` (severities, or `resolved`, with how many)."""
        tr = self.tr
        parts = (tr.gettext("%(n)s %(severity)s") % {"n": n, "severity": self.severity_name(s)} for s, n in counts)
        return tr.gettext(", ").join(parts)

    def age(self, delta: timedelta) -> str:
        return ages.age_text(self.tr, delta)

    def span(self, delta: timedelta) -> str:
        return ages.span_text(self.tr, delta)

    def scope(self, scope: Sequence[tuple[str, str]]) -> str:
        return phrases.scope_text(self.tr, scope)

    def no_data(self, *, node: str, cause: str, down: bool) -> str:
        return phrases.no_data_text(self.tr, node=node, cause=cause, down=down)

    def nearby(self, nodes: list[tuple[str, str, str]]) -> str:
        return phrases.nearby_text(self.tr, nodes) if nodes else ""

    def unit_label(self, unit_name: str) -> str:
        return phrases.unit_label(self.tr, unit_name)

    def headline(self, snapshot: MessageSnapshot) -> str:
        return phrases.headline(self.tr, snapshot)

    def node_headline(self, where: str, what: str, units: int = 0, total: int | None = None) -> str:
        return phrases.node_headline(self.tr, where, what, units, total)

    def member_line(self, member: MemberFacts, alertname: str, unit_name: str) -> str:
        return phrases.member_line(self.tr, member, alertname, unit_name)

    def blind_text(self, heartbeat: str, since: str) -> str:
        return phrases.blind_text(self.tr, heartbeat, since)

    def annotations(self, notes: Mapping[str, str]) -> dict[str, str]:
        """`notes` as this language's reader sees them (`i18n.localized_annotations`)."""
        return localized_annotations(notes, self.language)


@cache
def words_for(language: str = DEFAULT_LANGUAGE) -> Words:
    """The words of `language`, made once per process; ValueError for a language without a catalogue."""
    return Words.of(language, translations(language))

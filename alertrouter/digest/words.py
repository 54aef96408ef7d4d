"""The digest's wording made in Python, in the digest's language: dates (CLDR patterns from the catalogue,
names of days and months from Babel's locale data), and the names of the product's own categories
(severities it knows, noise mechanisms, notification reasons, delivery outcomes), read from
`message.vocabulary`; its durations are `message.ages.table_duration`.

What the stats hold as label values (alert names, nodes, regions, rule names, a severity the product does
not know) is data and is shown as written.
"""

from __future__ import annotations

from datetime import date, datetime
from gettext import NullTranslations

from babel.dates import format_date, format_datetime

from alertrouter.message.i18n import translations
from alertrouter.message.phrases import severity_name
from alertrouter.message.vocabulary import DELIVERY_OUTCOMES, DIGEST_REASONS, MECHANISMS, say

__all__ = [
    "NONE",
    "day_label",
    "mechanism_name",
    "range_label",
    "reason_name",
    "rule_name",
    "severity_label",
    "status_name",
    "time_label",
]

NONE = "(none)"  # how `summarize` names a missing label value


def _babel_locale(language: str) -> str:
    return language.replace("-", "_")


def day_label(day: date, language: str, *, short: bool = False) -> str:
    """`Mon 17 Nov` / `11月17日 周一`; short (a chart's axis): `Mon 17` / `17日 周一`."""
    tr = translations(language)
    pattern = tr.pgettext("date format", "EEE dd") if short else tr.pgettext("date format", "EEE dd MMM")
    return format_date(day, pattern, locale=_babel_locale(language))


def range_label(first: date, last: date, language: str) -> str:
    """`Mon 17 Nov 2026 – Sun 23 Nov 2026` / `2026年11月17日 周一 – 2026年11月23日 周日`."""
    tr = translations(language)
    pattern = tr.pgettext("date format", "EEE dd MMM yyyy")
    locale = _babel_locale(language)
    return f"{format_date(first, pattern, locale=locale)} – {format_date(last, pattern, locale=locale)}"


def time_label(at: datetime, language: str) -> str:
    """A local time (`at` already in the zone): `Wed 19 Nov 15:00` / `11月19日 周三 15:00`."""
    pattern = translations(language).pgettext("date format", "EEE dd MMM HH:mm")
    return format_datetime(at, pattern, tzinfo=at.tzinfo, locale=_babel_locale(language))


def severity_label(tr: NullTranslations, severity: str) -> str:
    """A severity the product knows in the digest's language; `all` (every severity) too; others as written."""
    if severity == "all":
        return tr.pgettext("severity", "all")
    if severity == NONE:
        return tr.gettext("(none)")
    return severity_name(tr, severity)


def mechanism_name(tr: NullTranslations, name: str) -> str:
    """What kept alerts from being messages of their own (`summarize.MECHANISMS`,
    `message.vocabulary.MECHANISMS`); another as written, its underscores spaces."""
    return say(tr, MECHANISMS, name) or name.replace("_", " ")


def reason_name(tr: NullTranslations, reason: str) -> str:
    """Why a message was intended (`pipeline.throttle.NotifyReason`, `message.vocabulary.DIGEST_REASONS`)."""
    return say(tr, DIGEST_REASONS, reason) or reason


def status_name(tr: NullTranslations, status: str) -> str:
    """A delivery outcome other than sent (`model.DeliveryStatus`, `message.vocabulary.DELIVERY_OUTCOMES`)."""
    return say(tr, DELIVERY_OUTCOMES, status) or status


def rule_name(tr: NullTranslations, rule: str) -> str:
    """A noise rule as `summarize` names it: a configured rule's name is data; the product's own
    (`silence ID`, `time interval NAMES`, `repeat interval`, `-`) are worded in the language."""
    if rule == "repeat interval":
        return tr.gettext("repeat interval")
    if rule.startswith("silence "):
        return tr.gettext("silence %(id)s") % {"id": rule.removeprefix("silence ")}
    if rule.startswith("time interval "):
        return tr.gettext("time interval %(names)s") % {"names": rule.removeprefix("time interval ")}
    return rule

"""The languages messages are written in: the gettext catalogues (Babel), a receiver's `Locale`, and the
per-language annotation variants. The words made from data in Python (headlines, severities, durations,
places) are `alertrouter.message.words`'.

Catalogues are `alertrouter/locale/<locale>/LC_MESSAGES/messages.po`, read at first use and compiled in
memory, so editing a `.po` file needs no build step. English is the source language (the msgids), so
`en` has no catalogue. Alert names, label values and annotations are data and are never translated.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from gettext import NullTranslations
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.support import Translations

__all__ = [
    "ANNOTATION_VARIANTS",
    "DEFAULT_LANGUAGE",
    "DEFAULT_TIMEZONE",
    "LANGUAGES",
    "LOCALE_DIR",
    "LOCALIZED_ANNOTATIONS",
    "Locale",
    "catalogue_path",
    "localized_annotations",
    "translations",
]

LANGUAGES = ("en", "zh-CN")  # what `global.language` and a receiver's `language` accept
DEFAULT_LANGUAGE = "en"  # the code's default; the shipped rules choose zh-CN
DEFAULT_TIMEZONE = "UTC"  # the code's default; the shipped rules choose Asia/Shanghai
LOCALIZED_ANNOTATIONS = ("summary", "description")  # annotations a rule may give per language: `summary_zh_CN`
# The per-language annotation names a stored message keeps beside the plain ones (`summary_zh_CN`, ...).
ANNOTATION_VARIANTS = tuple(
    f"{name}_{language.replace('-', '_')}"
    for name in LOCALIZED_ANNOTATIONS
    for language in LANGUAGES
    if language != "en"
)
LOCALE_DIR = Path(__file__).resolve().parents[1] / "locale"
_CATALOGUES = {"zh-CN": "zh_CN"}  # language -> gettext locale directory


@dataclass(frozen=True, slots=True)
class Locale:
    """How one receiver reads its messages: the language and the IANA time zone of every time shown."""

    language: str = DEFAULT_LANGUAGE
    timezone: str = DEFAULT_TIMEZONE


def catalogue_path(language: str) -> Path | None:
    """The `.po` file of `language`, or None for English (the source language)."""
    folder = _CATALOGUES.get(language)
    return LOCALE_DIR / folder / "LC_MESSAGES" / "messages.po" if folder else None


@cache
def translations(language: str) -> NullTranslations:
    """The gettext translations of `language`: English (and nothing else known) translates nothing.
    ValueError for a language without a catalogue, so a typo in the rules is caught when they load."""
    if language == DEFAULT_LANGUAGE:
        return NullTranslations()
    path = catalogue_path(language)
    if path is None:
        raise ValueError(f"unknown language {language!r} (one of {', '.join(LANGUAGES)})")
    with path.open("rb") as f:
        catalog = read_po(f, locale=_CATALOGUES[language])
    buffer = io.BytesIO()
    write_mo(buffer, catalog)  # fuzzy entries are left out: they are not translations yet
    buffer.seek(0)
    return Translations(buffer)


def localized_annotations(notes: Mapping[str, str], language: str) -> dict[str, str]:
    """`notes` as a reader of `language` sees them: `summary` and `description` replaced by their
    `summary_zh_CN` / `description_zh_CN` variant when the alert carries a non-empty one (the shipped
    Prometheus rules do), else kept as written. Annotations are data: nothing is translated here."""
    suffix = "_" + language.replace("-", "_")
    shown = dict(notes)
    for name in LOCALIZED_ANNOTATIONS:
        variant = notes.get(name + suffix)
        if variant:
            shown[name] = variant
    return shown

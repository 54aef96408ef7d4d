"""The languages messages are written in: the gettext catalogues (Babel), and the wording made from data
in Python (headlines, severities, durations, places) rather than in templates.

Catalogues are `alertrouter/locale/<locale>/LC_MESSAGES/messages.po`, read at first use and compiled in
memory, so editing a `.po` file needs no build step. English is the source language (the msgids), so
`en` has no catalogue. Alert names, label values and annotations are data and are never translated.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from gettext import NullTranslations
from pathlib import Path
from typing import Any

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.support import Translations

from alertrouter.model import HEARTBEAT_ALERTNAME, HEARTBEAT_LABEL, AlertStatus, IncidentKind, MessageSnapshot

__all__ = [
    "ANNOTATION_VARIANTS",
    "DEFAULT_LANGUAGE",
    "DEFAULT_TIMEZONE",
    "LANGUAGES",
    "LOCALE_DIR",
    "LOCALIZED_ANNOTATIONS",
    "Locale",
    "age_text",
    "blind_headline",
    "blind_text",
    "catalogue_path",
    "headline",
    "localized_annotations",
    "member_line",
    "no_data_text",
    "node_headline",
    "scope_text",
    "severity_name",
    "severity_word",
    "span_text",
    "storm_headline",
    "translations",
    "unit_count",
    "unit_label",
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
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
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


_SEVERITIES = {"critical", "warning", "info"}


def severity_word(tr: NullTranslations, severity: str, *, resolved: bool = False) -> str:
    """`CRITICAL` / `严重`; a severity the product does not know is data and shown as written (upper case)."""
    if resolved:
        return tr.gettext("RESOLVED")
    if severity.lower() in _SEVERITIES:
        return {
            "critical": tr.gettext("CRITICAL"),
            "warning": tr.gettext("WARNING"),
            "info": tr.gettext("INFO"),
        }[severity.lower()]
    return severity.upper() or tr.gettext("ALERT")


def severity_name(tr: NullTranslations, severity: str) -> str:
    """`critical` / `严重` in running text (the coalesced counts)."""
    if severity == AlertStatus.RESOLVED:
        return tr.gettext("resolved")
    if severity.lower() in _SEVERITIES:
        return {"critical": tr.gettext("critical"), "warning": tr.gettext("warning"), "info": tr.gettext("info")}[
            severity.lower()
        ]
    return severity


def age_text(tr: NullTranslations, delta: timedelta) -> str:
    """`45s`, `12m`, `3h 5m`, `2d 4h` (`12 分钟`, `3 小时 5 分钟`, ...)."""
    s = max(0, int(delta.total_seconds()))
    if s < 60:
        return tr.gettext("%(s)ss") % {"s": s}
    if s < 3600:
        return tr.gettext("%(m)sm") % {"m": s // 60}
    if s < 86400:
        if s % 3600 >= 60:
            return tr.gettext("%(h)sh %(m)sm") % {"h": s // 3600, "m": s % 3600 // 60}
        return tr.gettext("%(h)sh") % {"h": s // 3600}
    return tr.gettext("%(d)sd %(h)sh") % {"d": s // 86400, "h": s % 86400 // 3600}


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


def span_text(tr: NullTranslations, delta: timedelta) -> str:
    """A length of time said in words, as `age_text` but whole days alone: a silence's `1h`, `1d`
    (`1 小时`, `1 天`), never the config's `1h30m` spelling."""
    s = max(0, int(delta.total_seconds()))
    if s >= 86400 and s % 86400 == 0:
        return tr.gettext("%(d)sd") % {"d": s // 86400}
    return age_text(tr, delta)


def scope_text(tr: NullTranslations, scope: Sequence[tuple[str, str]]) -> str:
    """`region north, rack r12` / `north 区 r12 机架`; other label names as `name value`."""
    words = {"region": tr.gettext("region %(value)s"), "rack": tr.gettext("rack %(value)s")}
    words["cluster"] = tr.gettext("cluster %(value)s")
    parts = [words[name] % {"value": value} if name in words else f"{name} {value}" for name, value in scope]
    return tr.pgettext("scope", ", ").join(parts)


def no_data_text(tr: NullTranslations, *, node: str, cause: str, down: bool) -> str:
    """Why an incident's data stopped, naming the node-down alert that explains it (`pipeline.stale`):
    `No data: gpu-node-07 is down (NodeDown)` while it fires, `No data while gpu-node-07 was down (NodeDown)`
    once the node is back."""
    if down:
        return tr.gettext("No data: %(node)s is down (%(alert)s)") % {"node": node, "alert": cause}
    return tr.gettext("No data while %(node)s was down (%(alert)s)") % {"node": node, "alert": cause}


def unit_label(tr: NullTranslations, unit_name: str) -> str:
    """`GPUs` / `GPU` as a label; another unit name is data, shown as configured."""
    return tr.gettext("GPUs") if unit_name in ("", "GPUs") else unit_name


def unit_count(tr: NullTranslations, count: str, unit_name: str) -> str:
    """`6/8 GPUs` / `6/8 块 GPU`; a unit name other than GPUs is data (`4 NICs` / `4 个 NICs`)."""
    if unit_name in ("", "GPUs"):
        return tr.gettext("%(count)s GPUs") % {"count": count}
    return tr.gettext("%(count)s %(unit_name)s") % {"count": count, "unit_name": unit_name}


def node_headline(
    tr: NullTranslations, where: str, what: str, units: int, total: int | None, unit_name: str = "GPUs"
) -> str:
    """`gpu-node-07: GPUHighTemp on 6/8 GPUs` / `gpu-node-07：6/8 块 GPU GPUHighTemp`; the English is the
    same as the stored headline (`pipeline.aggregate.IncidentSummary.headline`)."""
    if units:
        count = unit_count(tr, f"{units}/{total}" if total else str(units), unit_name)
        if where:
            return tr.gettext("%(where)s: %(what)s on %(count)s") % {"where": where, "what": what, "count": count}
        return tr.gettext("%(what)s on %(count)s") % {"what": what, "count": count}
    return tr.gettext("%(where)s: %(what)s") % {"where": where, "what": what} if where else what


def storm_headline(
    tr: NullTranslations, alertname: str, nodes: int, scope: Sequence[tuple[str, str]], units: int, unit_name: str
) -> str:
    """`GPUXidError on 40 nodes in region north, rack r12: 320 GPUs` /
    `north 区 r12 机架 40 个节点 GPUXidError，共 320 块 GPU` (as `pipeline.aggregate.storm_headline`)."""
    values = {"what": alertname, "nodes": nodes, "scope": scope_text(tr, scope)}
    if scope:
        text = tr.ngettext("%(what)s on %(nodes)s node in %(scope)s", "%(what)s on %(nodes)s nodes in %(scope)s", nodes)
    else:
        text = tr.ngettext("%(what)s on %(nodes)s node", "%(what)s on %(nodes)s nodes", nodes)
    text %= values
    if units:
        text = tr.gettext("%(storm)s: %(count)s") % {"storm": text, "count": unit_count(tr, str(units), unit_name)}
    return text


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _scope(value: object) -> list[tuple[str, str]] | None:
    if not isinstance(value, list):
        return None
    pairs = [p for p in value if isinstance(p, list | tuple) and len(p) == 2]
    return [(str(k), str(v)) for k, v in pairs]


def member_line(tr: NullTranslations, member: object, alertname: str, unit_name: str) -> str | None:
    """A storm member's line from its facts (`{"where", "units", "units_total"}`), or None if not facts."""
    if not isinstance(member, Mapping) or not isinstance(member.get("where"), str):
        return None
    units = _int(member.get("units")) or 0
    return node_headline(tr, member["where"], alertname, units, _int(member.get("units_total")), unit_name)


def headline(tr: NullTranslations, snapshot: MessageSnapshot) -> str:
    """The headline of a snapshot in the language of `tr`, made from the facts the engine stored in its
    summary (`where`, `units`, ... for a node; `scope`, `nodes`, `units` for a storm). A snapshot without
    them (written before they were stored) keeps the English headline it was stored with."""
    summary: Mapping[str, Any] = snapshot.summary
    alertname = str(summary.get("alertname") or snapshot.labels.get("alertname", ""))
    unit_name = str(summary.get("unit_name") or "GPUs")
    if alertname == HEARTBEAT_ALERTNAME and (heartbeat := snapshot.labels.get(HEARTBEAT_LABEL)):
        return blind_headline(tr, heartbeat)
    if snapshot.kind == IncidentKind.CLUSTER:
        scope, nodes = _scope(summary.get("scope")), _int(summary.get("nodes"))
        if scope is None or nodes is None or not alertname:
            return snapshot.headline
        return storm_headline(tr, alertname, nodes, scope, _int(summary.get("units")) or 0, unit_name)
    where = summary.get("where")
    if not isinstance(where, str) or not alertname:
        return snapshot.headline
    units = summary.get("units")
    count = len(units) if isinstance(units, list) else 0
    return node_headline(tr, where, alertname, count, _int(summary.get("units_total")), unit_name)


def blind_headline(tr: NullTranslations, heartbeat: str) -> str:
    """`monitoring is blind: prometheus-north` / `监控失明：prometheus-north` (a silent heartbeat's incident)."""
    return tr.gettext("monitoring is blind: %(heartbeat)s") % {"heartbeat": heartbeat}


def blind_text(tr: NullTranslations, heartbeat: str, since: str) -> str:
    """`monitoring is blind: prometheus-north silent since 10:42 CST`: the summary of the alert raised for
    a silent heartbeat; `since` is the local time it was last heard from (or first watched)."""
    return tr.gettext("monitoring is blind: %(heartbeat)s silent since %(since)s") % {
        "heartbeat": heartbeat,
        "since": since,
    }

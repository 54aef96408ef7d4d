"""The digest as an email: a view of `DigestStats` rendered by `templates/digest/digest.{html,txt}.j2`.

Numbers and times are formatted here, label values cleaned and capped here, the product's own words
made in Python (dates, durations, severity and mechanism names) worded in the digest's language
(`digest.words`), and the templates (sandboxed, HTML autoescaped) lay them out with their own words
marked for translation (`_()`). Charts are `cid:` images for the email, or `data:`
URIs for a standalone preview file.
"""

from __future__ import annotations

import base64
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from gettext import NullTranslations
from typing import Any
from zoneinfo import ZoneInfo

from alertrouter.digest.charts import SEVERITY_COLORS, Chart
from alertrouter.digest.gpuview import gpu_sections
from alertrouter.digest.jobs import job_section
from alertrouter.digest.types import Count, DigestStats, ReceiverSection
from alertrouter.digest.words import (
    NONE,
    day_label,
    mechanism_name,
    range_label,
    reason_name,
    rule_name,
    severity_label,
    status_name,
    time_label,
)
from alertrouter.message.ages import table_duration
from alertrouter.message.i18n import DEFAULT_LANGUAGE, translations
from alertrouter.message.phrases import headline
from alertrouter.render.context import LABEL_CAP, clean
from alertrouter.render.templates import Templates

__all__ = ["RenderedDigest", "format_duration", "render_digest"]

_BAR_WIDTH = 180  # pixels of the widest inline bar in the HTML tables


@dataclass(frozen=True, slots=True)
class RenderedDigest:
    subject: str
    text: str
    html: str
    charts: tuple[Chart, ...]


def format_duration(value: timedelta | None, tr: NullTranslations | None = None) -> str:
    """`45s`, `12m`, `3h 05m`, `2d 4h` (in `tr`'s language; English without); an em dash for no value."""
    return table_duration(tr or NullTranslations(), value)


def _n(value: int) -> str:
    return f"{value:,}"


def _name(value: str) -> str:
    return clean(value, LABEL_CAP)


def _rows(
    counts: Sequence[Count],
    total: int | None = None,
    *,
    name: Callable[[str], str] = _name,
    extra: Callable[[str], str] = _name,
) -> list[dict[str, Any]]:
    top = max((c.count for c in counts), default=0) or 1
    out = []
    for c in counts:
        pct = f"{100 * c.count / total:.0f}%" if total else ""
        bar = max(1, round(_BAR_WIDTH * c.count / top)) if c.count else 0
        out.append({"name": name(c.name), "count": _n(c.count), "extra": extra(c.extra), "pct": pct, "bar": bar})
    return out


def _data(tr: NullTranslations, value: str) -> str:
    """A label value as the digest shows it: cleaned and capped, a missing one as "(none)" in `tr`'s language."""
    return tr.gettext("(none)") if value == NONE else _name(value)


def _unit(tr: NullTranslations, detail: str) -> str:
    """`gpu 3` (a flapping alert's GPU, as `summarize` names it) / `GPU 3`."""
    if detail.startswith("gpu "):
        return tr.gettext("GPU %(unit)s") % {"unit": detail.removeprefix("gpu ")}
    return detail


def pad(text: object, width: int) -> str:
    """`text` followed by spaces up to `width` columns of a monospace font, a CJK character taking two
    (the text part's aligned columns)."""
    value = str(text)
    columns = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in value)
    return value + " " * max(1, width - columns)


def _view(stats: DigestStats, charts: Sequence[Chart], *, inline: bool, now: datetime, language: str) -> dict[str, Any]:
    """The templates' whole context, section by section, in the order the digest shows them."""
    tr = translations(language)
    tz = ZoneInfo(stats.timezone)
    return {
        **_overview(stats, tr, tz, now=now, language=language),
        **_volume(stats, tr),
        **_noise(stats, tr),
        **gpu_sections(stats, tr, tz, language),
        **job_section(stats.jobs, tr),
        **_times(stats, tr),
        "per_day": [
            {
                "day": day_label(d.day, language),
                "total": _n(d.total),
                "by": tr.gettext(", ").join(
                    f"{severity_label(tr, s)} {_n(d.by_severity[s])}" for s in stats.severities if d.by_severity.get(s)
                ),
            }
            for d in stats.per_day
        ],
        "charts": [
            {
                "src": f"data:image/png;base64,{base64.b64encode(c.png).decode()}" if inline else f"cid:{c.cid}",
                "title": c.title,
                "alt": c.alt,
                "width": c.width,
                "height": c.height,
            }
            for c in charts
        ],
        "receiver": None if stats.receiver is None else _receiver(stats.receiver, tr, tz, language),
    }


def _overview(
    stats: DigestStats, tr: NullTranslations, tz: ZoneInfo, *, now: datetime, language: str
) -> dict[str, Any]:
    """The heading, the period and the highlights at the top."""
    t, noise = stats.totals, stats.noise
    first, last = stats.start.astimezone(tz), (stats.end - timedelta(seconds=1)).astimezone(tz)
    ratio = noise.ratio
    return {
        "title": tr.gettext("Weekly alert digest %(period)s") % {"period": stats.period},
        "lang": "zh-CN" if language == "zh-CN" else "en",
        "period": stats.period,
        "range": range_label(first.date(), last.date(), language),
        "timezone": stats.timezone,
        "hours": stats.hours,
        "generated": now.astimezone(tz).strftime("%Y-%m-%d %H:%M %Z"),
        "pad": pad,
        "highlights": [
            {"label": tr.gettext("alerts fired"), "value": _n(t.fired)},
            {"label": tr.gettext("messages to people"), "value": _n(noise.messages_intended)},
            {"label": tr.gettext("alert changes per message"), "value": f"{ratio:.1f}" if ratio is not None else "—"},
            {"label": tr.gettext("still firing at the end"), "value": _n(t.open_at_end)},
        ],
    }


def _volume(stats: DigestStats, tr: NullTranslations) -> dict[str, Any]:
    """How much fired: the totals, and the alerts by severity, region and name."""
    t = stats.totals
    severity = [
        {**row, "color": SEVERITY_COLORS.get(c.name, "#616161")}
        for row, c in zip(
            _rows(t.by_severity, t.fired, name=lambda s: severity_label(tr, s)), t.by_severity, strict=True
        )
    ]
    return {
        "totals": {
            "fired": _n(t.fired),
            "distinct": _n(t.distinct_alerts),
            "new": _n(t.new_alerts),
            "recurring": _n(t.recurring_alerts),
            "open_at_end": _n(t.open_at_end),
            "incidents_opened": _n(t.incidents_opened),
            "incidents_open_at_end": _n(t.incidents_open_at_end),
        },
        "by_severity": severity,
        "by_region": _rows(t.by_region, t.fired, name=partial(_data, tr)),
        "by_alertname": _rows(t.by_alertname, t.fired, name=partial(_data, tr)),
    }


def _noise(stats: DigestStats, tr: NullTranslations) -> dict[str, Any]:
    """What the alerts became in messages, what held them back, and the noisiest and flapping ones."""
    noise = stats.noise
    ratio = noise.ratio
    data = partial(_data, tr)
    return {
        "noise": {
            "changes": _n(noise.alert_changes),
            "payloads": _n(noise.payloads),
            "payload_alerts": _n(noise.payload_alerts),
            "intended": _n(noise.messages_intended),
            "sent": _n(noise.messages_sent),
            "unsent": [{"name": status_name(tr, k), "count": _n(v)} for k, v in noise.messages_unsent.items()],
            "ratio": f"{ratio:.1f}" if ratio is not None else "—",
        },
        "mechanisms": [
            {
                "name": mechanism_name(tr, m.name),
                "alerts": _n(m.alerts),
                "rules": _rows(m.rules, name=lambda r: _name(rule_name(tr, r))),
            }
            for m in noise.mechanisms
        ],
        "noisiest_alerts": _rows(stats.noisiest_alerts, name=data, extra=partial(_nodes, tr)),
        "noisiest_nodes": _rows(stats.noisiest_nodes, name=data),
        "flapping": [
            {
                "alertname": data(f.alertname),
                "node": data(f.node),
                "detail": _name(_unit(tr, f.detail)),
                "episodes": f.episodes,
            }
            for f in stats.flapping
        ],
    }


def _nodes(tr: NullTranslations, extra: str) -> str:
    """The noisiest alerts' spread: on how many nodes."""
    if not extra.isdigit():
        return _name(extra)
    return tr.ngettext("%(num)s node", "%(num)s nodes", int(extra)) % {"num": int(extra)}


def _times(stats: DigestStats, tr: NullTranslations) -> dict[str, Any]:
    """How long: sources gone blind, time to resolve and to acknowledge, escalation steps."""
    return {
        "blind": [
            {"heartbeat": _data(tr, b.heartbeat), "times": b.times, "total": format_duration(b.total, tr)}
            for b in stats.blind
        ],
        "resolve": [
            {
                "name": severity_label(tr, r.name),
                "resolved": _n(r.resolved),
                "mean": format_duration(r.mean, tr),
                "median": format_duration(r.median, tr),
            }
            for r in stats.resolve
        ],
        "ack": [
            {
                "name": severity_label(tr, a.name),
                "opened": _n(a.opened),
                "acknowledged": _n(a.acknowledged),
                "mean": format_duration(a.mean, tr),
                "median": format_duration(a.median, tr),
            }
            for a in stats.ack
        ],
        "escalations": [
            {"step": step, "incidents": _n(count)} for step, count in sorted(stats.escalations.items()) if step > 0
        ],
        "escalations_started": _n(stats.escalations.get(0, 0)),
    }


def _receiver(receiver: ReceiverSection, tr: NullTranslations, tz: ZoneInfo, language: str) -> dict[str, Any]:
    """A receiver's own digest: what it was sent, and for which incidents."""
    return {
        "name": _name(receiver.receiver),
        "messages": _n(receiver.messages),
        "by_reason": _rows(receiver.by_reason, name=lambda r: reason_name(tr, r)),
        "incidents": [
            {
                "headline": clean(headline(tr, i.snapshot) if i.snapshot else i.headline, 200),
                "severity": severity_label(tr, _name(i.severity)),
                "first": time_label(i.first_at.astimezone(tz), language),
                "messages": i.messages,
                "color": SEVERITY_COLORS.get(i.severity, "#616161"),
            }
            for i in receiver.incidents
        ],
        "more": receiver.more_incidents,
    }


def render_digest(
    templates: Templates,
    stats: DigestStats,
    charts: Sequence[Chart],
    *,
    now: datetime,
    inline: bool = False,
    language: str = DEFAULT_LANGUAGE,
) -> RenderedDigest:
    """Subject, text and HTML of one digest in `language`; `inline` puts the charts in the HTML as data: URIs."""
    tr = translations(language)
    view = _view(stats, charts, inline=inline, now=now, language=language)
    subject = tr.gettext("Weekly alert digest %(period)s: %(alerts)s alerts, %(messages)s messages") % {
        "period": stats.period,
        "alerts": view["totals"]["fired"],
        "messages": view["noise"]["intended"],
    }
    if stats.receiver is not None:
        subject += tr.gettext(" (%(receiver)s)") % {"receiver": _name(stats.receiver.receiver)}
    html = templates.template("digest", "html", "digest", language=language).render(view)
    text = templates.template("digest", "txt", "digest", language=language).render(view)
    return RenderedDigest(subject=subject, text=text.strip() + "\n", html=html, charts=tuple(charts))

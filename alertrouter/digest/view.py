"""The digest as an email: a view of `DigestStats` rendered by `templates/digest/digest.{html,txt}.j2`.

Numbers and times are formatted here, label values cleaned and capped here, and the templates
(sandboxed, HTML autoescaped) only lay them out. Charts are `cid:` images for the email, or `data:`
URIs for a standalone preview file.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from alertrouter.digest.charts import SEVERITY_COLORS, Chart
from alertrouter.digest.types import Count, DigestStats
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


def format_duration(value: timedelta | None) -> str:
    """`45s`, `12m`, `3h 05m`, `2d 4h`; an em dash for no value."""
    if value is None:
        return "—"
    seconds = int(value.total_seconds())
    if seconds < 60:
        return f"{seconds}s"
    minutes, hours = seconds // 60, seconds // 3600
    if hours == 0:
        return f"{minutes}m"
    if hours < 48:
        return f"{hours}h {minutes % 60:02d}m"
    return f"{hours // 24}d {hours % 24}h"


def _n(value: int) -> str:
    return f"{value:,}"


def _name(value: str) -> str:
    return clean(value, LABEL_CAP)


def _rows(counts: Sequence[Count], total: int | None = None) -> list[dict[str, Any]]:
    top = max((c.count for c in counts), default=0) or 1
    out = []
    for c in counts:
        pct = f"{100 * c.count / total:.0f}%" if total else ""
        bar = max(1, round(_BAR_WIDTH * c.count / top)) if c.count else 0
        out.append({"name": _name(c.name), "count": _n(c.count), "extra": _name(c.extra), "pct": pct, "bar": bar})
    return out


def _when(t: datetime, tz: ZoneInfo) -> str:
    return t.astimezone(tz).strftime("%a %d %b %H:%M")


def _view(stats: DigestStats, charts: Sequence[Chart], *, inline: bool, now: datetime) -> dict[str, Any]:
    tz = ZoneInfo(stats.timezone)
    t, noise = stats.totals, stats.noise
    first, last = stats.start.astimezone(tz), (stats.end - timedelta(seconds=1)).astimezone(tz)
    ratio = noise.ratio
    severity = [
        {**row, "color": SEVERITY_COLORS.get(c.name, "#616161")}
        for row, c in zip(_rows(t.by_severity, t.fired), t.by_severity, strict=True)
    ]
    receiver = stats.receiver
    return {
        "title": f"Weekly alert digest {stats.period}",
        "period": stats.period,
        "range": f"{first:%a %d %b %Y} – {last:%a %d %b %Y}",
        "timezone": stats.timezone,
        "hours": stats.hours,
        "generated": now.astimezone(tz).strftime("%Y-%m-%d %H:%M %Z"),
        "highlights": [
            {"label": "alerts fired", "value": _n(t.fired)},
            {"label": "messages to people", "value": _n(noise.messages_intended)},
            {"label": "alert changes per message", "value": f"{ratio:.1f}" if ratio is not None else "—"},
            {"label": "still firing at the end", "value": _n(t.open_at_end)},
        ],
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
        "by_region": _rows(t.by_region, t.fired),
        "by_alertname": _rows(t.by_alertname, t.fired),
        "noise": {
            "changes": _n(noise.alert_changes),
            "payloads": _n(noise.payloads),
            "payload_alerts": _n(noise.payload_alerts),
            "intended": _n(noise.messages_intended),
            "sent": _n(noise.messages_sent),
            "unsent": [{"name": k, "count": _n(v)} for k, v in noise.messages_unsent.items()],
            "ratio": f"{ratio:.1f}" if ratio is not None else "—",
        },
        "mechanisms": [
            {"name": m.name.replace("_", " "), "alerts": _n(m.alerts), "rules": _rows(m.rules)}
            for m in noise.mechanisms
        ],
        "noisiest_alerts": _rows(stats.noisiest_alerts),
        "noisiest_nodes": _rows(stats.noisiest_nodes),
        "flapping": [
            {"alertname": _name(f.alertname), "node": _name(f.node), "detail": _name(f.detail), "episodes": f.episodes}
            for f in stats.flapping
        ],
        "xid": [
            {
                "node": _name(x.node),
                "episodes": x.episodes,
                "xids": _name(", ".join(x.xids)) or "—",
                "gpus": _name(", ".join(x.gpus)) or "—",
            }
            for x in stats.xid_suspects
        ],
        "resolve": [
            {
                "name": r.name,
                "resolved": _n(r.resolved),
                "mean": format_duration(r.mean),
                "median": format_duration(r.median),
            }
            for r in stats.resolve
        ],
        "ack": [
            {
                "name": a.name,
                "opened": _n(a.opened),
                "acknowledged": _n(a.acknowledged),
                "mean": format_duration(a.mean),
                "median": format_duration(a.median),
            }
            for a in stats.ack
        ],
        "per_day": [
            {
                "day": d.day.strftime("%a %d %b"),
                "total": _n(d.total),
                "by": ", ".join(f"{s} {_n(d.by_severity[s])}" for s in stats.severities if d.by_severity.get(s)),
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
        "receiver": None
        if receiver is None
        else {
            "name": _name(receiver.receiver),
            "messages": _n(receiver.messages),
            "by_reason": _rows(receiver.by_reason),
            "incidents": [
                {
                    "headline": clean(i.headline, 200),
                    "severity": _name(i.severity),
                    "first": _when(i.first_at, tz),
                    "messages": i.messages,
                    "color": SEVERITY_COLORS.get(i.severity, "#616161"),
                }
                for i in receiver.incidents
            ],
            "more": receiver.more_incidents,
        },
    }


def render_digest(
    templates: Templates, stats: DigestStats, charts: Sequence[Chart], *, now: datetime, inline: bool = False
) -> RenderedDigest:
    """Subject, text and HTML of one digest; `inline` puts the charts in the HTML as data: URIs."""
    view = _view(stats, charts, inline=inline, now=now)
    subject = (
        f"Weekly alert digest {stats.period}: {view['totals']['fired']} alerts, {view['noise']['intended']} messages"
    )
    if stats.receiver is not None:
        subject += f" ({_name(stats.receiver.receiver)})"
    html = templates.template("digest", "html", "digest").render(view)
    text = templates.template("digest", "txt", "digest").render(view)
    return RenderedDigest(subject=subject, text=text.strip() + "\n", html=html, charts=tuple(charts))

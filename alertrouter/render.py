"""Renders notifications with the Jinja2 templates in `templates/<channel>/<kind>.<fmt>.j2`.

Label and annotation values are data: they reach templates only as context values, are cleaned and
capped in Python first, and every `{{ }}` output is escaped for the format (HTML for `.html.j2`,
a markdown escaper for `.md.j2`, mention/control stripping for `.txt.j2`), so a label cannot add a
link, a heading, a `<font>` tag or a mention. All environments are sandboxed with `StrictUndefined`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from jinja2 import BaseLoader, ChoiceLoader, FileSystemLoader, StrictUndefined, Template
from jinja2.sandbox import ImmutableSandboxedEnvironment
from markupsafe import Markup

from alertrouter.channels.base import Mentions, MessageKind, Notification, truncate_utf8, utf8_len
from alertrouter.paths import data_dir

__all__ = [
    "ANNOTATION_CAP",
    "LABEL_CAP",
    "TITLE_LIMIT",
    "AlertContext",
    "ItemContext",
    "Templates",
    "clean",
    "escape_chat_text",
    "escape_markdown",
]

LABEL_CAP = 256  # characters of a label value (and of a cluster member headline)
ANNOTATION_CAP = 1024  # characters of an annotation value
HEADLINE_CAP = 512
KEY_CAP = 128  # label names, incident keys
MAX_LABELS = 64  # labels kept per alert
MAX_LISTED = 500  # alerts / members / items turned into context; the rest count in "+N more"
GRID_MAX = 16  # a GPU grid is drawn for nodes with at most this many units
TITLE_LIMIT = 128  # bytes

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]+")
_SWAP = str.maketrans({"<": "＜", ">": "＞", "@": "＠", "[": "［", "]": "］"})
_CHAT_SWAP = str.maketrans({"<": "＜", ">": "＞", "@": "＠"})
_MD_INLINE = re.compile(r"([\\`*])")
_MD_BLOCK = re.compile(r"^(\s*)([#+=-])(?=[\s#=-]|$)")
_MD_LIST = re.compile(r"^(\s*\d+)([.)])(?=\s|$)")
_MOBILE = re.compile(r"^\+?[0-9][0-9-]{4,19}$")
_USER_ID = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
_UNIT_LABELS = ("gpu", "GPU", "gpu_index", "minor_number", "device")
_NODE_LABELS = ("node", "hostname", "Hostname", "kubernetes_node", "instance")
_REASONS = {"first": "new", "grew": "more alerts joined", "repeat": "still firing", "resolved": "resolved"}
_BLANK_LINES = re.compile(r"\n\s*\n(?:\s*\n)+")
_STYLES = {  # severity -> (emoji, WeCom font colour, HTML colour)
    "critical": ("🔴", "warning", "#c62828"),
    "warning": ("🟠", "warning", "#ef6c00"),
    "info": ("🔵", "comment", "#1565c0"),
}
_OTHER_STYLE = ("⚪", "comment", "#616161")
_RESOLVED_STYLE = ("✅", "info", "#2e7d32")
_PLAIN_CHANNELS = frozenset({"sms", "email"})  # no mention syntax to neutralise in their plain text


def clean(value: object, cap: int) -> str:
    """`value` as one line without control or bidi characters, at most `cap` characters."""
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    text = _CONTROL.sub(" ", text[: cap * 4]).strip()  # cut first: a 100 KB value costs nothing
    return text if len(text) <= cap else text[: cap - 1] + "…"


def escape_markdown(text: str) -> str:
    """Neutralises markdown in `text` whatever the renderer: links, HTML/`<font>`, `<@all>`, `@mobile`
    by full-width look-alikes (DingTalk and WeCom do not document backslash escapes); emphasis, code
    and line-start headings/lists by CommonMark backslash escapes."""
    text = _MD_INLINE.sub(r"\\\1", _CONTROL.sub(" ", text).translate(_SWAP))
    return _MD_LIST.sub(r"\1\\\2", _MD_BLOCK.sub(r"\1\\\2", text))


def escape_chat_text(text: str) -> str:
    """Plain text for chat robots: no `<at ...>` (Feishu), `<@id>` or `@mobile` mention syntax."""
    return _CONTROL.sub(" ", text).translate(_CHAT_SWAP)


def _finalizer(escape: Callable[[str], str]) -> Callable[[Any], Any]:
    """Applied to every `{{ }}` value: escaped text is returned as Markup, so autoescape keeps it."""

    def finalize(value: Any) -> Any:
        if hasattr(value, "__html__"):  # macro output, caller(), |safe: already escaped
            return value
        return Markup(escape(str(value)))  # noqa: S704 - escaped on this line

    return finalize


def _html_finalize(value: Any) -> Any:
    return value if hasattr(value, "__html__") else _CONTROL.sub(" ", str(value))


def _environment(loader: BaseLoader, style: str) -> ImmutableSandboxedEnvironment:
    """Every environment autoescapes (so macros return Markup and are not escaped twice); markdown and
    text escape through `finalize`, HTML through markupsafe."""
    escapes: dict[str, Callable[[str], str]] = {"markdown": escape_markdown, "chat-text": escape_chat_text}
    escape = escapes.get(style, lambda text: _CONTROL.sub(" ", text)) if style != "html" else None
    env = ImmutableSandboxedEnvironment(
        loader=loader,
        undefined=StrictUndefined,
        autoescape=True,
        finalize=_html_finalize if escape is None else _finalizer(escape),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    if escape is not None:
        env.filters["e"] = env.filters["escape"] = _finalizer(escape)
    return env


def _style_for(channel: str, fmt: str) -> str:
    """Which escaping a template gets: html, markdown, chat-text (mentions neutralised) or text."""
    return {"html": "html", "md": "markdown"}.get(fmt) or ("text" if channel in _PLAIN_CHANNELS else "chat-text")


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _seq(value: object) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()


def _int(value: object, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _labels(value: object) -> dict[str, str]:
    items = list(_map(value).items())[:MAX_LABELS]
    return {clean(k, KEY_CAP): clean(v, LABEL_CAP) for k, v in items}


def _first(labels: Mapping[str, str], names: Sequence[str]) -> str:
    return next((labels[n] for n in names if labels.get(n)), "")


def _time(value: object) -> datetime | None:
    if isinstance(value, datetime):
        t = value
    elif isinstance(value, str) and value:
        try:
            t = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    t = t if t.tzinfo else t.replace(tzinfo=UTC)
    return t if t.year > 1 else None  # Alertmanager's zero time


def _age_text(delta: timedelta) -> str:
    """`45s`, `12m`, `3h 5m`, `2d 4h`."""
    s = max(0, int(delta.total_seconds()))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60}m" if s % 3600 >= 60 else f"{s // 3600}h"
    return f"{s // 86400}d {s % 86400 // 3600}h"


def _safe_link(value: object) -> str:
    """An http(s) URL with every character markdown or HTML could read as syntax percent-encoded."""
    url = value.strip() if isinstance(value, str) else ""
    if urlsplit(url).scheme.lower() not in ("http", "https") or _CONTROL.search(url):
        return ""
    return quote(url, safe=":/?#&=%+,;~-._!$")


def _grid(units: Sequence[str], total: int) -> str:
    """`■■■□■□■□`: which of a node's units alert; empty when units are not indexes below `total`."""
    if not 0 < total <= GRID_MAX or not all(u.isdigit() and int(u) < total for u in units):
        return ""
    lit = {int(u) for u in units}
    return "".join("■" if i in lit else "□" for i in range(total))


@dataclass(frozen=True, slots=True)
class AlertContext:
    """One alert of an incident, as templates see it (`incident.alerts`)."""

    alertname: str
    unit: str  # the GPU index (label gpu / GPU / gpu_index / minor_number / device), or ""
    node: str
    firing: bool
    summary: str  # annotations.summary
    description: str
    since: str  # local start time, "18:00 CST"
    labels: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class ItemContext:
    """One outbox snapshot, as templates see it (`incident`, and each of `items`)."""

    incident: str  # the incident key
    kind: str  # node | cluster
    reason: str  # first | grew | repeat | resolved
    reason_text: str  # new | more alerts joined | still firing | resolved
    status: str  # firing | resolved
    resolved: bool
    severity: str
    severity_label: str  # CRITICAL, or RESOLVED
    emoji: str
    color: str  # WeCom <font color>: info | comment | warning
    html_color: str
    headline: str
    alertname: str
    node: str
    region: str
    rack: str
    location: str  # "region north, rack r12"
    gpus: str  # "6/8" (node) or "211" (cluster) or ""
    unit_name: str  # "GPUs"
    units: tuple[str, ...]  # at most GRID_MAX shown
    units_text: str  # "0, 1, 2, 3, 5, 7"
    grid: str  # "■■■□■□■□" or ""
    count: int  # alerts (firing ones while firing)
    nodes: int  # member nodes of a cluster incident
    summary: str  # the most common annotations.summary
    description: str
    since: str  # "18:00 CST", or "11-20 18:00 CST" on another day
    since_full: str  # "2026-11-21 18:00 CST"
    age: str  # "12m": firing for, or (resolved) lasted
    alerts: tuple[AlertContext, ...]
    alerts_more: int
    members: tuple[str, ...]  # cluster: member node headlines
    members_more: int
    labels: Mapping[str, str]

    def shown(self, k: int) -> ItemContext:
        """This item listing at most `k` entries of its main list (members for clusters)."""
        if self.kind == "cluster":
            members = self.members[:k]
            return replace(self, members=members, members_more=self.members_more + len(self.members) - len(members))
        alerts = self.alerts[:k]
        return replace(self, alerts=alerts, alerts_more=self.alerts_more + len(self.alerts) - len(alerts))


def _style(severity: str, resolved: bool) -> tuple[str, str, str]:
    return _RESOLVED_STYLE if resolved else _STYLES.get(severity.lower(), _OTHER_STYLE)


@dataclass(frozen=True, slots=True)
class _Clock:
    tz: ZoneInfo

    def local(self, t: datetime, ref: datetime) -> str:
        lt, lref = t.astimezone(self.tz), ref.astimezone(self.tz)
        fmt = "%H:%M %Z" if lt.date() == lref.date() else "%m-%d %H:%M %Z"
        return lt.strftime(fmt)

    def full(self, t: datetime) -> str:
        return t.astimezone(self.tz).strftime("%Y-%m-%d %H:%M %Z")


def _alert(raw: Mapping[str, Any], clock: _Clock, ref: datetime) -> AlertContext:
    labels = _labels(raw.get("labels"))
    notes = _map(raw.get("annotations"))
    started = _time(raw.get("starts_at"))
    return AlertContext(
        alertname=labels.get("alertname", ""),
        unit=_first(labels, _UNIT_LABELS),
        node=_first(labels, _NODE_LABELS),
        firing=raw.get("firing") is not False,
        summary=clean(notes.get("summary"), ANNOTATION_CAP),
        description=clean(notes.get("description"), ANNOTATION_CAP),
        since=clock.local(started, ref) if started else "",
        labels=labels,
    )


def _alert_order(a: AlertContext) -> tuple[bool, int, str, str]:
    return (not a.firing, int(a.unit) if a.unit.isdigit() and len(a.unit) < 9 else 1 << 30, a.unit, a.alertname)


def _build_item(raw: Mapping[str, Any], *, fallback_severity: str, clock: _Clock, now: datetime) -> ItemContext:
    """The template context of one outbox snapshot; every key may be missing."""
    labels = _labels(raw.get("labels"))
    summary = _map(raw.get("summary"))
    ref = _time(raw.get("at")) or now
    opened = _time(raw.get("opened_at"))
    raw_alerts = _seq(raw.get("alerts"))
    alerts = tuple(sorted((_alert(_map(a), clock, ref) for a in raw_alerts[:MAX_LISTED]), key=_alert_order))
    resolved = raw.get("status") == "resolved"
    kind = "cluster" if raw.get("kind") == "cluster" else "node"
    severity = clean(raw.get("severity") or fallback_severity, KEY_CAP)
    emoji, color, html_color = _style(severity, resolved)
    units_raw = summary.get("units")
    units = tuple(clean(u, LABEL_CAP) for u in _seq(units_raw))
    total = _int(summary.get("units_total"))
    if kind == "cluster":
        gpus = str(units_raw) if _int(units_raw) else ""
    else:
        gpus = (f"{len(units)}/{total}" if total else str(len(units))) if units else ""
    count = _int(summary.get("firing" if not resolved and "firing" in summary else "alerts"), len(raw_alerts))
    listed = max(len(raw_alerts), _int(summary.get("eligible" if not resolved else "alerts"), count))
    members = tuple(clean(m, LABEL_CAP) for m in _seq(summary.get("members"))[:MAX_LISTED])
    nodes = _int(summary.get("nodes"), len(members))
    top = Counter(a.summary for a in alerts if a.summary and a.firing != resolved).most_common(1)
    scope = [f"{name} {labels[name]}" for name in ("region", "rack", "cluster") if labels.get(name)]
    return ItemContext(
        incident=clean(raw.get("incident"), KEY_CAP),
        kind=kind,
        reason=clean(raw.get("reason"), KEY_CAP),
        reason_text=_REASONS.get(str(raw.get("reason")), clean(raw.get("reason"), KEY_CAP)),
        status="resolved" if resolved else "firing",
        resolved=resolved,
        severity=severity,
        severity_label="RESOLVED" if resolved else (severity.upper() or "ALERT"),
        emoji=emoji,
        color=color,
        html_color=html_color,
        headline=clean(raw.get("headline") or summary.get("headline") or labels.get("alertname"), HEADLINE_CAP),
        alertname=labels.get("alertname", "") or (alerts[0].alertname if alerts else ""),
        node=_first(labels, _NODE_LABELS),
        region=labels.get("region", ""),
        rack=labels.get("rack", ""),
        location=", ".join(scope),
        gpus=gpus,
        unit_name=clean(summary.get("unit_name") or "GPUs", KEY_CAP),
        units=units[:GRID_MAX],
        units_text=", ".join(units[:GRID_MAX]) + (", …" if len(units) > GRID_MAX else ""),
        grid="" if kind == "cluster" else _grid(units, total),
        count=count,
        nodes=nodes,
        summary=top[0][0] if top else next((a.summary for a in alerts if a.summary), ""),
        description=next((a.description for a in alerts if a.description), ""),
        since=clock.local(opened, ref) if opened else "",
        since_full=clock.full(opened) if opened else "",
        age=_age_text(ref - opened) if opened else "",
        alerts=alerts,
        alerts_more=max(0, listed - len(alerts)),
        members=members,
        members_more=max(0, nodes - len(members)),
        labels=labels,
    )


def _mention(channel: str, fmt: str, mentions: Mentions) -> Markup:
    """The in-text mention a vendor needs besides its JSON list, built only from valid ids."""
    mobiles = [m for m in mentions.mobiles if _MOBILE.match(m)]
    users = [u for u in mentions.user_ids if _USER_ID.match(u)]
    if channel == "dingtalk":  # DingTalk pings only those whose @mobile / @userid is in the text
        parts = [f"@{x}" for x in mobiles + users]
    elif channel == "wecom" and fmt == "md":
        parts = [f"<@{u}>" for u in users] + (["<@all>"] if mentions.all else [])
    elif channel == "feishu":
        parts = [f'<at user_id="{u}">{u}</at>' for u in users]
        parts += ['<at user_id="all">all</at>'] if mentions.all else []
    else:
        parts = []
    return Markup(" ".join(parts))  # noqa: S704 - ids validated by the patterns above


def _severity_counts(items: Sequence[ItemContext]) -> tuple[tuple[str, int], ...]:
    """(severity, count) in the order first seen (items come worst first); resolved ones apart."""
    counts = Counter("resolved" if i.resolved else i.severity for i in items)
    return tuple(counts.items())


def _counts_text(counts: Sequence[tuple[str, int]]) -> str:
    return ", ".join(f"{n} {name}" for name, n in counts)


def _title(n: Notification, items: Sequence[ItemContext]) -> str:
    """`[CRITICAL] headline`, `[RESOLVED] headline`, `12 notifications: 3 critical, 9 warning`."""
    if n.kind is MessageKind.COALESCED:
        total = len(n.items)
        return f"{total} notification{'s' if total != 1 else ''}: {_counts_text(_severity_counts(items))}"
    label = "RESOLVED" if n.kind is MessageKind.RESOLVED else items[0].severity_label
    return f"[{label}] {items[0].headline or items[0].incident}"


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A notification's context, from which smaller versions are cut while fitting a size limit."""

    top: Mapping[str, Any]
    items: tuple[ItemContext, ...]
    items_more: int
    coalesced: bool

    @property
    def listed(self) -> int:
        if self.coalesced:
            return len(self.items)
        first = self.items[0]
        return len(first.members if first.kind == "cluster" else first.alerts)

    def view(self, k: int | None) -> dict[str, Any]:
        items = self.items
        more = self.items_more
        if k is not None and self.coalesced:
            items, more = items[:k], more + len(items) - k
        elif k is not None:
            items = (items[0].shown(k), *items[1:])
        return {**self.top, "incident": items[0] if items else self.items[0], "items": items, "items_more": more}


class Templates:
    """The Renderer of `alertrouter.channels.base`: built-in templates, overridden file by file by a user dir."""

    def __init__(self, user_dir: Path | None = None, *, builtin_dir: Path | None = None, timezone: str = "UTC") -> None:
        try:
            self._clock = _Clock(ZoneInfo(timezone))
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown timezone {timezone!r}") from exc
        self.builtin_dir = builtin_dir or data_dir("templates")
        self.user_dir = user_dir
        dirs = [d for d in (user_dir, self.builtin_dir) if d is not None]
        self._loader = ChoiceLoader([FileSystemLoader(d) for d in dirs])
        self._envs: dict[str, ImmutableSandboxedEnvironment] = {}

    def names(self) -> list[str]:
        """Every `channel/kind.fmt` a template exists for (files and folders starting with `_` are helpers)."""
        found: set[str] = set()
        for base in (self.user_dir, self.builtin_dir):
            if base is None or not base.is_dir():
                continue
            for path in base.glob("*/*.j2"):
                if not path.parent.name.startswith("_") and not path.name.startswith("_"):
                    found.add(f"{path.parent.name}/{path.name.removesuffix('.j2')}")
        return sorted(found)

    def template(self, channel: str, fmt: str, kind: str) -> Template:
        if not (_NAME.match(channel) and _NAME.match(fmt) and _NAME.match(kind)):
            raise ValueError(f"bad template name {channel!r}/{kind!r}.{fmt!r}")
        style = _style_for(channel, fmt)
        env = self._envs.get(style)
        if env is None:
            env = self._envs[style] = _environment(self._loader, style)
        return env.get_template(f"{channel}/{kind}.{fmt}.j2")

    def render(self, channel: str, fmt: str, notification: Notification, *, limit_bytes: int | None = None) -> str:
        template = self.template(channel, fmt, str(notification.kind))
        prepared = self._prepare(channel, fmt, notification)

        def fill(k: int | None) -> str:  # templates may leave runs of blank lines; one is enough
            return _BLANK_LINES.sub("\n\n", template.render(prepared.view(k))).strip("\n")

        text = fill(None)
        if limit_bytes is None or utf8_len(text) <= limit_bytes:
            return text
        best: str | None = None
        lo, hi = 0, prepared.listed - 1
        while lo <= hi:  # the most entries that fit; size grows with the number shown
            mid = (lo + hi) // 2
            candidate = fill(mid)
            if utf8_len(candidate) <= limit_bytes:
                best, lo = candidate, mid + 1
            else:
                hi = mid - 1
        return best if best is not None else truncate_utf8(fill(0), limit_bytes)

    def title(self, notification: Notification, *, limit_bytes: int | None = None) -> str:
        limit = TITLE_LIMIT if limit_bytes is None else limit_bytes
        return truncate_utf8(_title(notification, self._items(notification)), limit)

    def _items(self, n: Notification) -> tuple[ItemContext, ...]:
        now = n.created_at or datetime.now(UTC)
        raws = n.items[:MAX_LISTED] or ({},)
        return tuple(_build_item(_map(r), fallback_severity=n.severity, clock=self._clock, now=now) for r in raws)

    def _prepare(self, channel: str, fmt: str, n: Notification) -> _Prepared:
        items = self._items(n)
        counts = _severity_counts(items)
        resolved = n.kind is MessageKind.RESOLVED or all(i.resolved for i in items)
        emoji, color, html_color = _style(n.severity, resolved)
        created = n.created_at or datetime.now(UTC)
        top = {
            "kind": str(n.kind),
            "receiver": clean(n.receiver, KEY_CAP),
            "severity": clean(n.severity, KEY_CAP),
            "severity_label": "RESOLVED" if resolved else clean(n.severity, KEY_CAP).upper(),
            "emoji": emoji,
            "color": color,
            "html_color": html_color,
            "link": _safe_link(n.link),
            "title": truncate_utf8(_title(n, items), HEADLINE_CAP),
            "mention": _mention(channel, fmt, n.mentions),
            "items_total": len(n.items),
            "counts": counts,
            "counts_text": _counts_text(counts),
            "created": self._clock.full(created),
        }
        return _Prepared(top, items, max(0, len(n.items) - len(items)), n.kind is MessageKind.COALESCED)

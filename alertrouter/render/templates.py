"""Renders notifications with the Jinja2 templates in `templates/<channel>/<kind>.<fmt>.j2`, within a vendor's size.

Label and annotation values are data, escaped for where each is shown (`alertrouter.render.escape`) by
sandboxed environments with `StrictUndefined` (`alertrouter.render.environment`). The links the product
writes (incident, acknowledge, silence) are checked and percent-encoded here and reach templates already safe.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from jinja2 import ChoiceLoader, FileSystemLoader, Template
from jinja2.sandbox import ImmutableSandboxedEnvironment
from markupsafe import Markup

from alertrouter.channels.base import Mentions, MessageKind, Notification, truncate_utf8, utf8_len
from alertrouter.channels.headline import fitted_headline
from alertrouter.message.i18n import DEFAULT_LANGUAGE, DEFAULT_TIMEZONE, Locale
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.message.words import Words, words_for
from alertrouter.model import AlertStatus, IncidentKind
from alertrouter.paths import data_dir
from alertrouter.render.context import (
    CONTROL_CHARS,
    HEADLINE_CAP,
    KEY_CAP,
    MAX_LISTED,
    LocalClock,
    build_item,
    clean,
)
from alertrouter.render.environment import environment, style_for
from alertrouter.render.escape import plain_title
from alertrouter.render.items import ItemContext, severity_style

__all__ = ["TITLE_LIMIT", "Templates"]

TITLE_LIMIT = 128  # bytes
# What a notification without items (none is made so; a template must still render) is about.
_NOTHING = MessageSnapshot("", IncidentKind.NODE, "", AlertStatus.FIRING, "", "")

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
_MOBILE = re.compile(r"^\+?[0-9][0-9-]{4,19}$")
_USER_ID = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
_BLANK_LINES = re.compile(r"\n\s*\n(?:\s*\n)+")


def _safe_link(value: object) -> str:
    """An http(s) URL with every character markdown or HTML could read as syntax percent-encoded."""
    url = value.strip() if isinstance(value, str) else ""
    if urlsplit(url).scheme.lower() not in ("http", "https") or CONTROL_CHARS.search(url):
        return ""
    return quote(url, safe=":/?#&=%+,;~-._!$")


def _product_link(value: object, style: str) -> Markup:
    """A link the product made (incident, acknowledge, silence), as templates get it: already safe, so
    the escaping meant for label values (`_` in a token, `://`) never touches it. HTML-escaped for HTML
    (`&` in a query); elsewhere `_safe_link` left nothing markdown or a chat client could read as syntax."""
    url = _safe_link(value)
    return Markup.escape(url) if style == "html" else Markup(url)  # noqa: S704 - percent-encoded by _safe_link


def _cut_keeping(text: str, limit: int, anchors: Sequence[str]) -> str:
    """`text` cut to `limit` bytes, the last resort when even no listed entries fit. The lines from the
    first that holds one of `anchors` (the product's links, which the templates put in the footer, or
    last on the one line of an SMS) are kept whole and the text above them is cut instead: a cut message
    must still be actionable. When that line alone is too long, the cut moves into it: the text before
    the first link written on its own (after a space) is cut, the links kept."""
    found = [i for i in (text.find(a) for a in anchors if a) if i >= 0]
    if found:
        first = min(found)
        line = text.rfind("\n", 0, first) + 1
        starts = [(line, "\n")] + ([(first, " ")] if first > line and text[first - 1] == " " else [])
        for start, joint in starts:
            tail = text[start:]
            room = limit - utf8_len(tail) - 1
            if room > 0:
                return truncate_utf8(text[:start].rstrip(), room) + joint + tail
    return truncate_utf8(text, limit)


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


def _title(n: Notification, items: Sequence[ItemContext], words: Words, text: Callable[[str], str] = str) -> str:
    """`[CRITICAL] headline`, `[RESOLVED] headline`, `12 notifications: 3 critical, 9 warning`; `text`
    is applied to what came from labels (severities, the headline), not to the product's brackets."""
    if n.kind is MessageKind.COALESCED:
        total = len(n.items)
        counts = text(words.counts(_severity_counts(items)))
        return words.tr.ngettext("%(num)s notification: %(counts)s", "%(num)s notifications: %(counts)s", total) % {
            "num": total,
            "counts": counts,
        }
    label = words.severity_label("", resolved=True) if n.kind is MessageKind.RESOLVED else text(items[0].severity_label)
    return f"[{label}] {text(items[0].headline or items[0].incident)}"


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
        return len(first.members if first.kind == IncidentKind.CLUSTER else first.alerts)

    def view(self, k: int | None) -> dict[str, Any]:
        items = self.items
        more = self.items_more
        if k is not None and self.coalesced:
            items, more = items[:k], more + len(items) - k
        elif k is not None:
            items = (items[0].shown(k), *items[1:])
        return {**self.top, "incident": items[0] if items else self.items[0], "items": items, "items_more": more}


def _same_items(a: Notification, b: Notification) -> bool:
    """Whether two notifications' items are told the same: the same snapshots, time, severity and locale
    (the links, mentions and recipients are no part of the items)."""
    return a.items is b.items and (a.created_at, a.severity, a.locale) == (b.created_at, b.severity, b.locale)


class Templates:
    """The Renderer of `alertrouter.channels.base`: built-in templates, overridden file by file by a user dir."""

    def __init__(
        self,
        user_dir: Path | None = None,
        *,
        builtin_dir: Path | None = None,
        timezone: str = DEFAULT_TIMEZONE,
        language: str = DEFAULT_LANGUAGE,
    ) -> None:
        """`timezone` and `language`: of notifications that carry no `locale` of their own (the delivery
        loop gives each the receiver's; samples and tests may not)."""
        self.default = Locale(language, timezone)
        self._clock(self.default)  # an unknown zone or language fails here, not at the first message
        words_for(language)
        self.builtin_dir = builtin_dir or data_dir("templates")
        self.user_dir = user_dir
        dirs = [d for d in (user_dir, self.builtin_dir) if d is not None]
        self._loader = ChoiceLoader([FileSystemLoader(d) for d in dirs])
        self._envs: dict[tuple[str, str], ImmutableSandboxedEnvironment] = {}
        self._last: tuple[Notification, tuple[ItemContext, ...], Words] | None = None

    @staticmethod
    def _clock(locale: Locale) -> LocalClock:
        try:
            return LocalClock(ZoneInfo(locale.timezone))
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown timezone {locale.timezone!r}") from exc

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

    def template(self, channel: str, fmt: str, kind: str, *, language: str | None = None) -> Template:
        if not (_NAME.match(channel) and _NAME.match(fmt) and _NAME.match(kind)):
            raise ValueError(f"bad template name {channel!r}/{kind!r}.{fmt!r}")
        style = style_for(channel, fmt)
        language = language or self.default.language
        env = self._envs.get((style, language))
        if env is None:
            env = self._envs[style, language] = environment(self._loader, style, words_for(language).tr)
        return env.get_template(f"{channel}/{kind}.{fmt}.j2")

    def locale(self, notification: Notification) -> Locale:
        return notification.locale or self.default

    def render(self, channel: str, fmt: str, notification: Notification, *, limit_bytes: int | None = None) -> str:
        language = self.locale(notification).language
        template = self.template(channel, fmt, str(notification.kind), language=language)
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
        if best is not None:
            return best
        top = prepared.top
        anchors = (top["runbook_link"], top["ack_link"], top["silence_link"], top["link"])
        return _cut_keeping(fill(0), limit_bytes, anchors)

    def title(self, notification: Notification, *, limit_bytes: int | None = None) -> str:
        """DingTalk's title and the email subject: one line of plain text (see `plain_title`), the alert
        name kept whole within `limit_bytes` where it can be (`fitted_headline`: the node is shortened)."""
        limit = TITLE_LIMIT if limit_bytes is None else limit_bytes
        items, words = self._items(notification)
        if notification.kind is not MessageKind.COALESCED and notification.items:

            def with_headline(text: str) -> str:
                return _title(
                    notification, (replace(items[0], headline=clean(text, HEADLINE_CAP)),), words, plain_title
                )

            fitted = fitted_headline(words, notification.first, lambda text: utf8_len(with_headline(text)) <= limit)
            items = (replace(items[0], headline=clean(fitted, HEADLINE_CAP)), *items[1:])
        return truncate_utf8(_title(notification, items, words, plain_title), limit)

    def _items(self, n: Notification) -> tuple[tuple[ItemContext, ...], Words]:
        """The items' context and the words they are told in, made once per notification: a channel asks
        for its title and then renders its text, maybe several times to fit a size (and without the action
        links on a DingTalk card: the same items). Kept for the last notification only, by identity of its
        items, which are never changed once made."""
        last = self._last
        if last is not None and _same_items(last[0], n):
            return last[1], last[2]
        words = n.words if n.locale is not None else words_for(self.default.language)
        now = n.created_at or datetime.now(UTC)
        raws = n.items[:MAX_LISTED] or (_NOTHING,)
        clock = self._clock(self.locale(n))
        items = tuple(build_item(r, fallback_severity=n.severity, clock=clock, now=now, words=words) for r in raws)
        self._last = (n, items, words)
        return items, words

    def _prepare(self, channel: str, fmt: str, n: Notification) -> _Prepared:
        items, words = self._items(n)
        locale = self.locale(n)
        style = style_for(channel, fmt)
        counts = _severity_counts(items)
        resolved = n.kind is MessageKind.RESOLVED or all(i.resolved for i in items)
        emoji, color, html_color = severity_style(n.severity, resolved)
        created = n.created_at or datetime.now(UTC)
        top = {
            "kind": str(n.kind),
            "language": locale.language,
            "receiver": clean(n.receiver, KEY_CAP),
            "severity": clean(n.severity, KEY_CAP),
            "severity_label": words.severity_label(clean(n.severity, KEY_CAP), resolved=resolved),
            "emoji": emoji,
            "color": color,
            "html_color": html_color,
            "link": _product_link(n.link, style),
            "ack_link": _product_link(n.ack_link, style),
            "silence_link": _product_link(n.silence_link, style),
            "runbook_link": _product_link(n.runbook_link, style),
            "silence_for": words.span(n.silence_for) if n.silence_for else "",
            "title": truncate_utf8(_title(n, items, words), HEADLINE_CAP),
            "mention": _mention(channel, fmt, n.mentions),
            "items_total": len(n.items),
            "counts": counts,
            "counts_text": words.counts(counts),
            "created": self._clock(locale).full(created),
        }
        return _Prepared(top, items, max(0, len(n.items) - len(items)), n.kind is MessageKind.COALESCED)

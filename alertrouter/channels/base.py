"""What every channel shares: the error it raises, the protocol it follows, and the plain fields of the
notification it is given (`alertrouter.message.notification`, re-exported here for the channels).

A channel's whole job is one `send(notification)`: render with the templates, fit the vendor's size
limit, sign, post, and read the vendor's answer. It returns only when the vendor accepted the message
(`errcode == 0`, `Code == "OK"`, an SMTP 250) and raises `ChannelError` otherwise; retries, rate
limits, coalescing and the record of attempts belong to the delivery loop, not to channels.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from alertrouter.channels.headline import message_headline
from alertrouter.gpu.xid import from_labels, short_line
from alertrouter.labels import alert_title
from alertrouter.message.facts import StormFacts
from alertrouter.message.i18n import Locale
from alertrouter.message.notification import Mentions, MessageKind, Notification
from alertrouter.message.rma import rma_line
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.message.words import Words

__all__ = [
    "Channel",
    "ChannelError",
    "Mentions",
    "MessageKind",
    "Notification",
    "Renderer",
    "neutralise_links",
    "notification_fields",
    "runbook_link",
    "truncate_utf8",
    "utf8_len",
]


class ChannelError(Exception):
    """A send that did not succeed.

    `permanent`: retrying cannot help until a person fixes something (bad token, sign mismatch, body
    the vendor refuses); the delivery becomes a dead letter and the channel is marked unhealthy.
    `rate_limited`: the vendor refused because of its rate limit (DingTalk 130101, WeCom 45009); the
    robot is treated as blocked and its backlog coalesced when it reopens.
    `reached`: recipients the vendor accepted before the failure (a voice channel calls one number at a
    time); they are counted against their daily cap and a retry leaves them out.
    The message must never contain a token, key, signature or password.
    """

    def __init__(
        self,
        message: str,
        *,
        permanent: bool = False,
        rate_limited: bool = False,
        retry_after: float | None = None,
        code: str | None = None,
        reached: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent
        self.rate_limited = rate_limited
        self.retry_after = retry_after
        self.code = code
        self.reached = tuple(reached)


class Renderer(Protocol):
    """Renders a notification with the template `templates/<channel>/<kind>.<fmt>.j2`.

    `limit_bytes`: the result is at most this many UTF-8 bytes; when the full message would be longer,
    fewer alerts/items are shown with a "+N more" line and the link, rather than failing.
    """

    def render(self, channel: str, fmt: str, notification: Notification, *, limit_bytes: int | None = None) -> str: ...

    def title(self, notification: Notification, *, limit_bytes: int | None = None) -> str:
        """A one-line title: DingTalk's markdown title, the email subject."""
        ...


class Channel(Protocol):
    name: str
    type: str

    async def send(self, notification: Notification) -> None:
        """Deliver, or raise `ChannelError`. Never log or raise a secret."""
        ...

    async def aclose(self) -> None: ...


# The host part of what a client would make a link of: after a scheme's `://`, after `www.`, or a dotted
# name ending in letters that a path, query or fragment follows, maybe after a port (`evil.com/x`,
# `evil.com:8080/x`). Each alternative starts only where a name starts and backtracks only within it, so
# a long value costs one pass.
_LINK_HOSTS = re.compile(
    r"(?<=://)[^\s/?#\\]++|www\.[^\s/?#\\]*+|(?<![\w.-])[\w.-]*\.[^\W\d_]{2,}+(?=[/?#]|:\d+[/?#])",
    re.IGNORECASE,
)


def neutralise_links(text: str, *, ascii_only: bool = False) -> str:
    """`text` with nothing a client would make a link of, still readable: `http://evil.example/x`
    becomes `http∶//evil․example/x` (a ratio sign and one-dot leaders, which no linkifier takes for
    `:` and `.`), `www.evil.example` and `evil.example/x` lose their dots the same way, and a markdown
    link `[x](y)` becomes `[x] (y)`. `ascii_only` (SMS, where one non-GSM character doubles the cost)
    writes `http[:]//evil[.]example/x`, the usual defanged form, instead.

    A dotted name without a scheme, `www.` or a path (`gpu-node-07.example.com`, `10.0.0.7:9100`) is
    left alone: it is how nodes and instances are named, and people copy it into a shell.
    """
    colon, dot = ("[:]", "[.]") if ascii_only else ("\u2236", "\u2024")
    text = _LINK_HOSTS.sub(lambda m: m.group().replace(".", dot), text)
    return text.replace("://", colon + "//").replace("](", "] (")


def runbook_link(items: Sequence[MessageSnapshot], hosts: Sequence[str]) -> str | None:
    """The runbook of a message about one incident: the first `runbook_url` annotation of its alerts
    (firing ones first) that is http(s) on one of `hosts`. Annotations come from whoever fires alerts,
    so only the configured hosts' URLs become links; the renderer percent-encodes what it shows."""
    if len(items) != 1 or not hosts:
        return None
    allowed = {h.lower() for h in hosts}
    for alert in sorted(items[0].alerts, key=lambda a: not a.firing):
        url = (alert.annotations or {}).get("runbook_url", "").strip()
        parts = urlsplit(url)
        if parts.scheme.lower() in ("http", "https") and (parts.hostname or "") in allowed and not parts.username:
            return url
    return None


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def truncate_utf8(text: str, limit: int, ellipsis: str = "…") -> str:
    """`text` cut to at most `limit` UTF-8 bytes, on a character boundary, ending in `ellipsis` if cut."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    room = limit - utf8_len(ellipsis)
    if room <= 0:
        return data[:limit].decode("utf-8", errors="ignore")
    return data[:room].decode("utf-8", errors="ignore") + ellipsis


def _severity(words: Words, severity: str) -> str:
    """`严重` / `已恢复` in zh-CN (the words the other channels show); in English, and for a severity the
    product does not know, the value as written."""
    word = words.severity_name(severity)
    return severity if word == severity.lower() else word


def notification_fields(n: Notification) -> dict[str, str]:
    """The plain values of a notification that short formats (SMS and voice variables) are built from,
    worded in the receiver's language."""
    first = n.first
    locale, words = n.locale or Locale(), n.words
    labels, facts = first.labels, first.summary
    if isinstance(facts, StormFacts):  # a storm counts its GPUs
        gpus = str(facts.units) if facts.units else ""
    elif facts.units:
        gpus = f"{len(facts.units)}/{facts.units_total}" if facts.units_total else str(len(facts.units))
    else:
        gpus = ""
    started = first.started_at or first.opened_at
    since = started.astimezone(ZoneInfo(locale.timezone)).strftime("%H:%M") if started else ""
    notes = (words.annotations(a.annotations or {}) for a in first.alerts)
    annotations_summary = next((n["summary"] for n in notes if n.get("summary")), "")
    tally = facts.tally
    count = next((n for n in (tally.firing, tally.alerts) if n is not None), len(first.alerts))
    current = [a for a in first.alerts if a.firing != first.resolved] or list(first.alerts)
    faults = sorted((info for a in current if (info := from_labels(a.labels)) is not None), key=lambda i: i.code)
    pods = sorted(
        {
            (a.labels.get("exported_namespace", ""), a.labels["exported_pod"])
            for a in current
            if a.labels.get("exported_pod")
        }
    )
    return {
        # A resolved message's severity reads "resolved", as its title does: an SMS template of severity, node
        # and alert (the shipped one) would otherwise say the same when a node comes back as when it went down.
        "severity": _severity(words, "resolved" if all(item.resolved for item in n.items) else n.severity),
        "status": words.status[first.status],
        "headline": message_headline(words, first),
        "alertname": labels.get("alertname") or (alert_title(first.alerts[0].labels) if first.alerts else ""),
        "node": labels.get("node", ""),
        "region": labels.get("region", ""),
        "count": str(count),
        "gpus": gpus,
        "since": since,
        "summary": annotations_summary,
        "link": n.link or "",
        "receiver": n.receiver,
        "incidents": str(len(n.items)),
        "xid": short_line(words.tr, faults[0]) if faults else "",
        "workload": "/".join(filter(None, pods[0])) if pods else "",
        "rma": rma_line(words.tr, first.rma[0]) if first.rma else "",
    }

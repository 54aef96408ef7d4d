"""Hypothesis strategies for notifications whose labels and annotations hold anything, built the way the
engine and the delivery loop build them (`message_snapshot`'s shape, `enrich`, `coalesced_row`,
`notification_of`); and the oracles that say whether a rendered text carries a link, a mention or markup
that came from such a value."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from types import SimpleNamespace
from typing import Any

from hypothesis import strategies as st

from alertrouter.auth.signing import Signer
from alertrouter.channels.base import Notification
from alertrouter.delivery.expand import ActionLinks, coalesced_row, enrich, notification_of
from alertrouter.delivery.plan import message_kind
from alertrouter.message.i18n import LANGUAGES, Locale
from alertrouter.message.snapshot import MessageSnapshot

BASE_URL = "https://alertrouter.invalid"  # a host no strategy below ever produces
NOW = datetime(2026, 11, 21, 10, 5, tzinfo=UTC)
# Shaped like the real ones (base64url payload "." signature, `_` and `-` included).
ACK = f"{BASE_URL}/a/eyJhIjoiYWNrIiwiZXhwIjoxNzk1MzQyMzUwLCJpIjo3NywibiI6Im4tMSJ9.Zm9v_YmFy-YmF6"
SILENCE = f"{BASE_URL}/a/eyJhIjoic2lsZW5jZSIsImV4cCI6MTc5NTM0MjM1MCwiaSI6NzcsIm4iOiJuLTIifQ.cXV4_cXV1eA-"
ACTIONS = ActionLinks(Signer("hostile-values-test-key-0123456789", "link"), timedelta(hours=24), timedelta(hours=1))

# Values that broke, or could break, a renderer: numbers that are not, invisible and bidi characters,
# line breaks, huge values, markup of every vendor, links, mentions.
NASTY = [
    "",
    " ",
    "²",
    "-1",
    "99999999999999999999",
    "1e309",
    "NaN",
    "0x1F",
    "\x00",
    "\x1b[31m",
    "\r\nFAKE: line",
    "\u0085\u2028\u2029",
    "\u202eevil\u202c",
    "\u2066x\u2069",
    "\ufeff\u200b\u200d",
    "\ud800",
    "华北 节点",
    "节点" * 300,
    "y" * 3000,
    "…",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    '<font color="warning">pwn</font>',
    "</font>",
    '<a href="http://evil.example">x</a>',
    "[x](http://evil.example/p)",
    "![i](https://evil.example/i.png)",
    "[x]: http://evil.example",
    "<http://evil.example>",
    "http://evil.example",
    "HTTPS://EVIL.EXAMPLE/A?b=c#d",
    "http://user:pw@evil.example:8080/p",
    "a://b://c.example/x",
    "http://例子.中国/路径",
    "www.evil.example",
    "WWW.EVIL.EXAMPLE",
    "evil.com/path",
    "evil.example:8443/x",
    "evil.example?next=1",
    "//evil.example/x",
    "www&#46;evil&#46;example",
    "http&#58;//evil.example",
    "@13800000000",
    "@all",
    "<@all>",
    "<@zhangwei>",
    '<at user_id="all">x</at>',
    "**bold**",
    "_it_",
    "__u__",
    "~~struck~~",
    "`code`",
    "```",
    "| a | b |",
    "|---|---|",
    "# heading",
    "> quote",
    "- item",
    "1. item",
    "***",
    "\\",
    "&lt;img&gt;",
    "{{ 7*7 }}",
    "{% raw %}",
]
LINKY = "htps:/w.evilcom[]()<>@_~|*`&#;! 1\\…"
KNOWN_LABELS = [
    "alertname",
    "node",
    "hostname",
    "instance",
    "region",
    "rack",
    "cluster",
    "gpu",
    "GPU",
    "gpu_index",
    "device",
    "severity",
]
ANNOTATIONS = ["summary", "description", "runbook_url", "dashboard"]

atoms = st.one_of(
    st.sampled_from(NASTY),
    st.text(max_size=12),
    st.text(alphabet=LINKY, max_size=24),
    st.characters(categories=["Cc", "Cf", "Cs", "Zl", "Zp", "Zs", "Mn"]),
)
values = st.lists(atoms, max_size=4).map("".join)
names = st.one_of(st.sampled_from(KNOWN_LABELS), values)
label_maps = st.dictionaries(names, values, max_size=8)
counts = st.integers(min_value=-1, max_value=2**70)
times = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23), timezones=st.just(UTC))
recent = st.datetimes(min_value=datetime(2026, 11, 1), max_value=datetime(2026, 11, 22), timezones=st.just(UTC))


@st.composite
def snapshots(draw: st.DrawFn, index: int = 0) -> tuple[dict[str, Any], dict[str, tuple[dict[str, str], datetime]]]:
    """An outbox snapshot as `message_snapshot` writes it, and the annotations and start times of its
    alerts as the delivery loop loads them (`enrich`'s `details`)."""
    cluster = draw(st.booleans())
    labels = draw(label_maps)
    alerts: list[dict[str, Any]] = []
    details: dict[str, tuple[dict[str, str], datetime]] = {}
    for i in range(draw(st.integers(0, 6 if cluster else 12))):
        fingerprint = f"fp{index}-{i}"
        alerts.append({"fingerprint": fingerprint, "labels": labels | draw(label_maps), "firing": draw(st.booleans())})
        notes = draw(st.dictionaries(st.one_of(st.sampled_from(ANNOTATIONS), values), values, max_size=5))
        details[fingerprint] = (notes, draw(times))
    headline = draw(values)
    if cluster:
        members = draw(st.lists(values, max_size=20))
        summary: dict[str, Any] = {"headline": headline, "nodes": draw(counts), "units": draw(counts)}
        summary |= {"members": members, "alerts": draw(counts)}
        if draw(st.booleans()):  # the facts a storm is worded from in the receiver's language (newer rows)
            summary |= {"alertname": draw(values), "unit_name": draw(values)}
            summary["scope"] = draw(
                st.lists(st.tuples(st.sampled_from(["region", "rack", "zone"]), values), max_size=3)
            )
            facts = st.fixed_dictionaries({"where": values, "units": counts, "units_total": counts})
            summary["member_facts"] = draw(st.lists(facts, max_size=20))
    else:
        summary = {"headline": headline, "units": draw(st.lists(values, max_size=20)), "units_total": draw(counts)}
        summary |= {"unit_name": draw(values), "alerts": draw(counts), "firing": draw(counts)}
        summary |= {"eligible": draw(counts), "muted": draw(counts), "silenced": draw(counts)}
        if draw(st.booleans()):  # the facts a node incident is worded from (newer rows)
            summary |= {"where": draw(values), "alertname": draw(values)}
    opened = draw(recent)
    snapshot = {
        "incident": draw(values),
        "kind": "cluster" if cluster else "node",
        "reason": draw(st.one_of(st.sampled_from(["first", "grew", "repeat", "resolved"]), values)),
        "status": draw(st.sampled_from(["firing", "resolved"])),
        "severity": draw(st.one_of(st.sampled_from(["critical", "warning", "info"]), values)),
        "headline": headline,
        "labels": labels,
        "summary": summary,
        "alerts": alerts,
        "opened_at": opened.isoformat(),
        "at": draw(st.one_of(st.just(NOW), times)).isoformat(),
    }
    return snapshot, details


@st.composite
def notifications(draw: st.DrawFn) -> Notification:
    """What a channel is given for one delivery: one incident (with acknowledge/silence links when it is
    firing), or several coalesced into one message."""
    drawn = [draw(snapshots(i)) for i in range(draw(st.sampled_from([1, 1, 1, 2, 5])))]
    rows: list[Any] = []
    for i, (snapshot, details) in enumerate(drawn):
        item = enrich(MessageSnapshot.from_json(snapshot), details)  # as the delivery loop reads the outbox row
        severity = item.severity
        message = {"items": [item.to_json()], "mentions": {}, "recipients": ["+8613800000000"]}
        rows.append(
            SimpleNamespace(
                id=i + 1,
                incident_id=77 + i,
                kind=message_kind(item).value,
                receiver="oncall",
                channel="chat",
                severity=severity,
                severity_rank=i,
                message=message,
                created_at=NOW,
            )
        )
    row: Any = rows[0] if len(rows) == 1 else SimpleNamespace(**coalesced_row(rows, NOW) | {"id": 99})
    n = notification_of(row, ["+8613800000000"], base_url=BASE_URL, now=NOW, actions=ACTIONS)
    if n.ack_link and n.silence_link:  # which messages get them is the product's decision; the nonces in
        n = replace(n, ack_link=ACK, silence_link=SILENCE)  # them are random, so fixed ones make runs repeatable
    zone = draw(st.sampled_from(["UTC", "Asia/Shanghai", "America/Los_Angeles"]))
    return replace(n, locale=Locale(draw(st.sampled_from(LANGUAGES)), zone))


# --- oracles ----------------------------------------------------------------------------------------

# What a client would make a link of: a scheme's `://`, `www.`, or a dotted name ending in letters
# followed by a path, query or fragment (`evil.com/x`). Deliberately not the renderer's own pattern.
LINKISH = re.compile(r"://|www\.|[^\W_]\.[^\W\d_]{2,}[/?#]", re.IGNORECASE)
# Product links are replaced by " " before this is looked for; a size cut may end a product link's `](`.
MARKDOWN_LINK = re.compile(r"\]\((?![ …]|$)")
HIDDEN = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ud800-\udfff]")
WECOM_TAGS = ['<font color="info">', '<font color="comment">', '<font color="warning">', "</font>"]


def product_links(n: Notification) -> list[str]:
    return [link for link in (n.link, n.ack_link, n.silence_link) if link]


def without(text: str, pieces: list[str]) -> str:
    """`text` with each of `pieces` replaced by a space, also where a size cut (which ends in `…`) left
    only the start of one."""
    for piece in pieces:
        text = text.replace(piece, " ")
    for cut in reversed([m.start() for m in re.finditer("…", text)]):
        starts = [
            i
            for piece in pieces
            for i in range(max(0, cut - len(piece)), cut)
            if text[i] == piece[0] and piece.startswith(text[i:cut])
        ]
        if starts:  # the longest start of a piece that ends at the cut
            text = text[: min(starts)] + " " + text[cut + 1 :]
    return text


def found_links(text: str, n: Notification) -> list[str]:
    """Links and markdown links in `text` that the product did not put there."""
    rest = without(text, product_links(n))
    return [m.group() for m in LINKISH.finditer(rest)] + [m.group() for m in MARKDOWN_LINK.finditer(rest)]


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.hrefs.extend(value or "" for name, value in attrs if name in ("href", "src"))


def html_tags(text: str) -> tuple[set[str], list[str]]:
    """The element names in `text` and the values of its `href` and `src` attributes."""
    parser = _Tags()
    parser.feed(text)
    parser.close()
    return parser.tags, parser.hrefs

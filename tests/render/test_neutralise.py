"""Issue 18's small holes, one test each: what a label or annotation value becomes in the DingTalk title,
in markdown (bare URLs, `_`, `~~`, `|`, entities), in chat text, in SMS text and in email; and that the
links the product itself writes are untouched by any of it."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from html.parser import HTMLParser
from typing import Any

import pytest

from alertrouter.channels.base import MessageKind, Notification
from alertrouter.channels.sms import gsm7_compatible, sms_text
from alertrouter.render.escape import escape_chat_text, escape_markdown
from alertrouter.render.templates import Templates

LINK = "https://alerts.example.org/incidents/77"
NodeFactory = Callable[..., dict[str, Any]]
NoteFactory = Callable[..., Notification]
CHAT_MD = ["dingtalk", "wecom"]

# Bare URLs as a label or annotation may carry them, each as it must not survive (a client would link it).
BARE_URLS = [
    "http://evil.example/login",
    "https://evil.example",
    "HTTPS://EVIL.EXAMPLE/A",
    "ftp://evil.example/f",
    "www.evil.example",
    "WWW.Evil.Example/x",
    "evil.example/login",
    "evil.example:8443/x",
    "evil.example?next=1",
    "//evil.example/x",
    "http://例子.中国/路径",
]


def firing(make_node: NodeFactory, make_notification: NoteFactory, **node: Any) -> Notification:
    return make_notification(MessageKind.FIRING, [make_node(**node)], link=LINK)


def without_product_links(text: str) -> str:
    return text.replace(LINK, "")


# --- the DingTalk title (also the email subject) -----------------------------------------------------


@pytest.mark.parametrize(
    ("value", "gone", "kept"),
    [
        ("<img src=x onerror=alert(1)>", ["<img", ">"], "img src=x onerror=alert(1)"),
        ("[x](http://evil.example/p)", ["[x]", "](", "://", "evil.example"], "evil"),
        ("@13800000000 please", ["@13800000000"], "13800000000 please"),
        ('<@all> <at user_id="all">x</at>', ["<@all>", "<at", "@"], "all"),
        ("see www.evil.example", ["www.", "evil.example"], "see www"),
    ],
)
def test_title_neutralises_label_text(
    templates: Templates,
    make_node: NodeFactory,
    make_notification: NoteFactory,
    value: str,
    gone: list[str],
    kept: str,
) -> None:
    title = templates.title(firing(make_node, make_notification, headline=f"gpu-node-07 {value}"))
    assert title.startswith("[CRITICAL] gpu-node-07 ")  # the product's own brackets stay
    for bad in gone:
        assert bad not in title.removeprefix("[CRITICAL]"), bad
    assert kept in title.replace("＜", "<").replace("＞", ">").replace("＠", "@"), "still readable"


def test_title_neutralises_a_severity_taken_from_a_label(
    templates: Templates, make_node: NodeFactory, make_notification: NoteFactory
) -> None:
    title = templates.title(firing(make_node, make_notification, severity="[x](http://evil.example)"))
    assert "](" not in title
    assert "://" not in title
    assert title.startswith("[")


def test_coalesced_title_neutralises_severities(
    templates: Templates, make_node: NodeFactory, make_notification: NoteFactory
) -> None:
    items = [make_node(severity="<@all>"), make_node(severity="www.evil.example")]
    title = templates.title(make_notification(MessageKind.COALESCED, items))
    assert title.startswith("2 notifications: 1 ")
    assert "<@" not in title
    assert "www." not in title


# --- bare URLs in chat markdown -------------------------------------------------------------------


@pytest.mark.parametrize("url", BARE_URLS)
@pytest.mark.parametrize("channel", CHAT_MD)
def test_bare_url_in_a_label_is_not_a_link_in_markdown(
    templates: Templates, make_node: NodeFactory, make_notification: NoteFactory, channel: str, url: str
) -> None:
    n = firing(make_node, make_notification, summaries=[f"see {url} now"], labels={"region": url}, units=("0",))
    out = without_product_links(templates.render(channel, "md", n))
    assert url not in out
    assert "://" not in out
    assert "www." not in out.lower()
    assert not re.search(r"[^\W_]\.[^\W\d_]{2,}[/?#]", out), out
    assert "evil" in out.lower() or "例子" in out, "the value is still shown"


@pytest.mark.parametrize("url", BARE_URLS)
@pytest.mark.parametrize(("channel", "fmt"), [("wecom", "txt"), ("feishu", "txt"), ("email", "txt"), ("email", "html")])
def test_bare_url_in_a_label_is_not_a_link_in_other_formats(
    templates: Templates, make_node: NodeFactory, make_notification: NoteFactory, channel: str, fmt: str, url: str
) -> None:
    """Chat clients and mail readers turn URLs in plain text into links by themselves."""
    n = firing(make_node, make_notification, summaries=[f"see {url} now"], headline=url, units=("0",))
    out = without_product_links(templates.render(channel, fmt, n))
    assert url not in out
    assert "://" not in out
    assert "www." not in out.lower()


def test_entity_encoded_url_is_not_decoded_into_a_link_in_markdown(
    templates: Templates, make_node: NodeFactory, make_notification: NoteFactory
) -> None:
    """A markdown renderer decodes `&#46;` to `.`, after escaping ran: `&` must be escaped too."""
    value = "www&#46;evil&#46;example http&#58;//evil&#46;example"
    for channel in CHAT_MD:
        out = templates.render(channel, "md", firing(make_node, make_notification, summaries=[value], units=("0",)))
        assert not re.search(r"(?<!\\)&#", out), out


# --- markdown emphasis, strikethrough, tables ---------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "escaped"),
    [
        ("__bold__ and _it_", r"\_\_bold\_\_ and \_it\_"),
        ("~~struck~~", r"\~\~struck\~\~"),
        ("| a | b |", r"\| a \| b \|"),
        ("|---|---|", r"\|---\|---\|"),
    ],
)
@pytest.mark.parametrize("channel", CHAT_MD)
def test_emphasis_strikethrough_and_tables_are_escaped(
    templates: Templates,
    make_node: NodeFactory,
    make_notification: NoteFactory,
    channel: str,
    value: str,
    escaped: str,
) -> None:
    out = templates.render(channel, "md", firing(make_node, make_notification, summaries=[value], units=("0",)))
    assert escaped in out


def test_escape_markdown_escapes_underscore_tilde_pipe_and_ampersand() -> None:
    assert escape_markdown("a_b~c|d&e") == r"a\_b\~c\|d\&e"


def test_escapers_neutralise_bare_urls() -> None:
    for escape in (escape_markdown, escape_chat_text):
        out = escape("go http://evil.example/x or www.evil.example or evil.example/y")
        assert "://" not in out
        assert "www." not in out
        assert "evil.example/" not in out


# --- SMS text -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["[x](http://evil.example/p)", "http://evil.example/p", "www.evil.example", "evil.example/p"]
)
def test_sms_text_carries_no_link_from_a_label(
    templates: Templates, make_node: NodeFactory, make_notification: NoteFactory, value: str
) -> None:
    n = firing(make_node, make_notification, headline=f"gpu-node-07 {value}", summaries=[value], units=("0",))
    out = sms_text(templates, n)
    rest = out.replace(LINK, "")
    assert LINK in out  # the product's own link stays, whole
    assert "](" not in rest
    assert "://" not in rest
    assert "www." not in rest
    assert "evil.example" not in rest
    assert "evil" in rest
    assert gsm7_compatible(out), "neutralising must not switch the SMS to UCS-2"


# --- the product's own links ----------------------------------------------------------------------


@pytest.mark.parametrize(("channel", "fmt"), [("dingtalk", "md"), ("wecom", "md"), ("wecom", "txt"), ("email", "html")])
def test_product_links_with_underscore_and_tilde_stay_whole(
    templates: Templates, make_node: NodeFactory, make_notification: NoteFactory, channel: str, fmt: str
) -> None:
    """Action tokens are base64url (`_`, `-`); the escaping of label text must not touch them."""
    ack = "https://alerts.example.org/a/eyJh_YmFy-x.c2ln_~v"
    n = make_notification(MessageKind.FIRING, [make_node()], link="https://www.alerts.example.org/i/a_b")
    n = Notification(
        n.kind, n.receiver, n.severity, n.items, n.link, ack_link=ack, silence_link=ack, silence_for=timedelta(hours=1)
    )
    out = templates.render(channel, fmt, n)
    assert ack in out
    assert "https://www.alerts.example.org/i/a_b" in out


def test_email_html_links_only_to_the_product(
    templates: Templates, make_node: NodeFactory, make_notification: NoteFactory
) -> None:
    hrefs: list[str] = []

    class Links(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            hrefs.extend(v or "" for k, v in attrs if k == "href")

    value = '<a href="http://evil.example">x</a> http://evil.example www.evil.example'
    Links().feed(templates.render("email", "html", firing(make_node, make_notification, headline=value)))
    assert hrefs == [LINK]

"""Rendering is total (issue 18): for every message template the templates tree holds (its channel x format
x kind, from `Templates.names()`), any notification built the way the engine builds them, whatever its
labels and annotations hold, renders without raising, within the byte limit it is given, and carries no
link, mention or markup that came from a label or annotation. The same for titles and the escapers.

Hypothesis draws the values (see `support.hostile`); runs are derandomized, so CI sees the same examples
every time, and bounded (`max_examples`)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alertrouter.channels import dingtalk, feishu, sms, wecom
from alertrouter.channels.base import MessageKind, Notification, utf8_len
from alertrouter.render.escape import escape_chat_text, escape_markdown
from alertrouter.render.templates import TITLE_LIMIT, Templates
from support.hostile import HIDDEN, LINKISH, WECOM_TAGS, found_links, html_tags, notifications, product_links, without
from support.hostile import values as label_values

TEMPLATES_DIR = Path(__file__).resolve().parents[2] / "templates"
ZONES = ("UTC", "Asia/Shanghai", "America/Los_Angeles")
TEMPLATES = {zone: Templates(builtin_dir=TEMPLATES_DIR, timezone=zone) for zone in ZONES}
KINDS = {kind.value for kind in MessageKind}


def message_templates() -> dict[tuple[str, str], list[str]]:
    """(channel, format) -> the message kinds it has a template for; folders of other templates (the
    digest, the console) have no template named after a message kind."""
    found: dict[tuple[str, str], list[str]] = {}
    for name in TEMPLATES["UTC"].names():
        channel, _, rest = name.partition("/")
        kind, _, fmt = rest.partition(".")
        if kind in KINDS:
            found.setdefault((channel, fmt), []).append(kind)
    return found


TREE = message_templates()
PAIRS = sorted(TREE)
# What each channel renders to when it sends; any other (channel, format) a template is added for later
# is still rendered with the drawn limits.
VENDOR_LIMITS = {
    ("dingtalk", "md"): dingtalk.MAX_BODY_BYTES,
    ("wecom", "md"): wecom.MARKDOWN_MAX_BYTES,
    ("wecom", "txt"): wecom.TEXT_MAX_BYTES,
    ("feishu", "txt"): feishu.TEXT_LIMIT_BYTES,
    ("sms", "txt"): sms.TEXT_LIMIT_BYTES,
}


def html_elements(channel: str) -> set[str]:
    """The elements a channel's HTML templates write: those in their own sources, nothing a value brought."""
    sources = (path.read_text() for path in (TEMPLATES_DIR / channel).glob("*.html.j2"))
    return {tag.lower() for source in sources for tag in re.findall(r"<(\w+)", source)}


HTML_TAGS = {channel: html_elements(channel) for channel, fmt in PAIRS if fmt == "html"}
BOUNDED = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


def test_the_tree_has_message_templates() -> None:
    """The properties below are only as good as this list: every chat, SMS and email format is in it."""
    assert {("dingtalk", "md"), ("wecom", "md"), ("wecom", "txt"), ("feishu", "txt"), ("sms", "txt")} <= set(TREE)
    assert {("email", "html"), ("email", "txt")} <= set(TREE)
    assert all(sorted(kinds) == sorted(KINDS) for kinds in TREE.values())


def assert_inert(channel: str, fmt: str, out: str, n: Notification, *, cut: bool) -> None:
    """Nothing in `out` that a value brought: no hidden characters, link, mention or tag."""
    assert not HIDDEN.search(out), "control, bidi or zero-width character"
    assert not found_links(out, n), found_links(out, n)
    if fmt == "html":
        tags, hrefs = html_tags(out)
        assert "<img" not in out.lower()
        if not cut:  # a size cut may end inside a tag; email is never cut
            assert tags <= HTML_TAGS[channel], tags - HTML_TAGS[channel]
            assert set(hrefs) <= set(product_links(n)), hrefs
    elif fmt == "md" or channel not in ("sms", "email"):  # chat: markdown, or text a robot scans for mentions
        rest = without(out, product_links(n) + WECOM_TAGS)
        assert not re.search(r"[<@]", rest), rest
        if fmt != "md":
            assert ">" not in rest


@pytest.mark.parametrize(("channel", "fmt"), PAIRS)
@BOUNDED
@given(n=notifications(), limit=st.integers(min_value=0, max_value=25_000), zone=st.sampled_from(ZONES))
def test_every_template_renders_anything_within_its_limit_and_injects_nothing(
    channel: str, fmt: str, n: Notification, limit: int, zone: str
) -> None:
    templates = TEMPLATES[zone]
    for kind in TREE[(channel, fmt)]:  # each kind's template, also given another kind's notification
        shown = replace(n, kind=MessageKind(kind))
        full = templates.render(channel, fmt, shown)
        assert_inert(channel, fmt, full, shown, cut=False)
        for bound in {limit, VENDOR_LIMITS.get((channel, fmt), limit)}:
            out = templates.render(channel, fmt, shown, limit_bytes=bound)
            assert utf8_len(out) <= bound
            assert_inert(channel, fmt, out, shown, cut=out != full)


@BOUNDED
@given(n=notifications(), limit=st.one_of(st.none(), st.integers(min_value=0, max_value=300)))
def test_titles_are_one_plain_line_without_links_or_mentions(n: Notification, limit: int | None) -> None:
    """The DingTalk title (chat list, notification preview) and the email subject."""
    for zone in ZONES:
        title = TEMPLATES[zone].title(n, limit_bytes=limit)
        assert utf8_len(title) <= (TITLE_LIMIT if limit is None else limit)
        assert not HIDDEN.search(title)
        assert "\n" not in title
        assert not LINKISH.search(title), title
        rest = re.sub(r"^\[[^\[\]]*\]?", "", title)  # the product's own `[CRITICAL]`
        assert not re.search(r"[<>@\[\]]", rest), title


@BOUNDED
@given(text=label_values)
def test_escape_markdown_leaves_no_syntax(text: str) -> None:
    out = escape_markdown(text)
    assert not HIDDEN.search(out)
    assert "\n" not in out
    assert not LINKISH.search(out), out
    assert not re.search(r"[<>@\[\]]", out), out
    for m in re.finditer(r"(\\*)([`*_~|&])", out):  # emphasis, code, strikethrough, tables, entities
        assert len(m.group(1)) % 2 == 1, out
    assert not re.search(r"^\s*(?:[#>+=-]|\d+[.)])(?:\s|$)", out), "a value must not start a block"


@BOUNDED
@given(text=label_values)
def test_escape_chat_text_leaves_no_mention_or_link(text: str) -> None:
    out = escape_chat_text(text)
    assert not HIDDEN.search(out)
    assert not LINKISH.search(out), out
    assert not re.search(r"[<>@]", out), out
    assert "](" not in out

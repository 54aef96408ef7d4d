"""What a label-derived value becomes in each output format, so that it can add no link, markup or mention.

Label and annotation values are data: they reach templates only as context values, are cleaned and
capped in Python first (`alertrouter.render.context`), and every `{{ }}` output is escaped for where
it is shown (`alertrouter.render.environment.style_for` picks which): HTML escaping for `.html.j2`, a
markdown escaper for `.md.j2`, mention syntax neutralised in chat robots' `.txt.j2`; and in every format
a URL in a value is made one no client links (`neutralise_links`). So a label cannot add a link, a
heading, a table, a `<font>` tag or a mention.
"""

from __future__ import annotations

import re

from alertrouter.channels.base import neutralise_links
from alertrouter.render.context import CONTROL_CHARS

__all__ = ["escape_chat_text", "escape_markdown", "escape_sms_text", "escape_text", "plain_title"]

_SWAP = str.maketrans({"<": "＜", ">": "＞", "@": "＠", "[": "［", "]": "］"})
_CHAT_SWAP = str.maketrans({"<": "＜", ">": "＞", "@": "＠"})
_MD_INLINE = re.compile(r"([\\`*_~|&])")
_MD_BLOCK = re.compile(r"^(\s*)([#+=-])(?=[\s#=-]|$)")
_MD_LIST = re.compile(r"^(\s*\d+)([.)])(?=\s|$)")


def escape_markdown(text: str) -> str:
    """Neutralises markdown in `text` whatever the renderer (DingTalk and WeCom markdown).

    What a label could use to mislead or ping is replaced by look-alikes, because DingTalk and WeCom do
    not document backslash escapes: `<` `>` (HTML, `<font>`, `<@all>`, autolinks), `@` (`@mobile`),
    `[` `]` (links, images), and URLs (`neutralise_links`: `http∶//evil․example`, `www․x`, `x․com/y`,
    which renderers and clients would otherwise link by themselves). What can only change the look is
    backslash-escaped as CommonMark says: `*` `_` (emphasis), `` ` `` (code), `~` (strikethrough `~~`),
    `|` (tables), `&` (an entity such as `&#46;` is decoded after escaping ran, and would give back a
    `.` or `:`), and line-start headings, quotes and lists.
    """
    text = neutralise_links(CONTROL_CHARS.sub(" ", text).translate(_SWAP))
    text = _MD_INLINE.sub(r"\\\1", text)
    return _MD_LIST.sub(r"\1\\\2", _MD_BLOCK.sub(r"\1\\\2", text))


def escape_chat_text(text: str) -> str:
    """Plain text for chat robots (WeCom and Feishu text, which their clients scan for links and Feishu for
    `[x](y)`): no `<at ...>` (Feishu), `<@id>` or `@mobile` mention syntax, no URL or markdown link."""
    return neutralise_links(CONTROL_CHARS.sub(" ", text).translate(_CHAT_SWAP))


def escape_text(text: str) -> str:
    """Plain text nobody scans for mentions (the email's text part): shown as written, `<` and `@`
    included, but with no URL a mail reader would link (`neutralise_links`)."""
    return neutralise_links(CONTROL_CHARS.sub(" ", text))


def escape_sms_text(text: str) -> str:
    """SMS text: no URL a phone would make tappable, in the ASCII defanged form (`http[:]//x[.]y`), as a
    look-alike character would switch the whole message to UCS-2 and double its cost."""
    return neutralise_links(CONTROL_CHARS.sub(" ", text), ascii_only=True)


def plain_title(text: str) -> str:
    """Label-derived text of a title: DingTalk's `title` (the chat list and the notification preview)
    and the email `Subject`. Neither renders markdown, so backslash escapes would show; both are read by
    a person who may take `@13800000000` for a ping or `<img ...>` for markup, and tap what a client
    linked. So: one line without control characters, the look-alikes of `escape_markdown` for
    `<` `>` `@` `[` `]`, and URLs neutralised."""
    return neutralise_links(CONTROL_CHARS.sub(" ", text).translate(_SWAP))

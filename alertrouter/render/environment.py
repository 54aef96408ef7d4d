"""The sandboxed Jinja2 environments templates render in: one per escaping style and language, `StrictUndefined`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from gettext import NullTranslations
from typing import Any

from jinja2 import BaseLoader, StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from markupsafe import Markup

from alertrouter.render.escape import escape_chat_text, escape_markdown, escape_sms_text, escape_text

__all__ = ["environment", "style_for"]

_TEXT_CHANNELS = {"sms": "sms", "email": "text"}  # plain text without mention syntax to neutralise


def _finalizer(escape: Callable[[str], str]) -> Callable[[Any], Any]:
    """Applied to every `{{ }}` value: escaped text is returned as Markup, so autoescape keeps it."""

    def finalize(value: Any) -> Any:
        if hasattr(value, "__html__"):  # macro output, caller(), |safe: already escaped
            return value
        return Markup(escape(str(value)))  # noqa: S704 - escaped on this line

    return finalize


def _html_finalize(value: Any) -> Any:
    """HTML: markupsafe escapes what this returns; mail readers link URLs in text, so those are neutralised."""
    return value if hasattr(value, "__html__") else escape_text(str(value))


_ESCAPES: dict[str, Callable[[str], str]] = {
    "markdown": escape_markdown,
    "chat-text": escape_chat_text,
    "text": escape_text,
    "sms": escape_sms_text,
}


def _gettext_callables(tr: NullTranslations, escape: Callable[[Any], Any]) -> dict[str, Callable[..., Markup]]:
    """`_`, `gettext` and `ngettext` of templates: the catalogue's text is trusted like template source,
    and each `%(name)s` value is escaped for the output format the way `{{ }}` values are (`escape`),
    so a label value passed to a translated sentence is neutralised as it would be outside one. (Jinja2's
    own newstyle gettext would HTML-escape it, which is right for HTML only.)"""

    def fill(text: str, values: Mapping[str, Any]) -> Markup:
        if not values:
            return Markup(text)  # noqa: S704 - catalogue text, no values
        return Markup(text) % {k: Markup(escape(v)) for k, v in values.items()}  # noqa: S704 - values escaped

    def gettext(message: str, **values: Any) -> Markup:
        return fill(tr.gettext(message), values)

    def ngettext(singular: str, plural: str, num: int, **values: Any) -> Markup:
        return fill(tr.ngettext(singular, plural, num), {"num": num, **values})

    return {"_": gettext, "gettext": gettext, "ngettext": ngettext}


def environment(loader: BaseLoader, style: str, tr: NullTranslations) -> ImmutableSandboxedEnvironment:
    """Every environment autoescapes (so macros return Markup and are not escaped twice); markdown and
    text escape through `finalize`, HTML through markupsafe. The i18n extension is loaded so that
    Babel's extractor reads the templates as the renderer does; the gettext callables are ours."""
    escape = _ESCAPES[style] if style != "html" else None
    finalize = _html_finalize if escape is None else _finalizer(escape)
    env = ImmutableSandboxedEnvironment(
        loader=loader,
        undefined=StrictUndefined,
        autoescape=True,
        finalize=finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.i18n"],
    )
    if escape is not None:
        env.filters["e"] = env.filters["escape"] = _finalizer(escape)
        env.globals.update(_gettext_callables(tr, _finalizer(escape)))
    else:
        env.globals.update(_gettext_callables(tr, lambda v: Markup.escape(_html_finalize(v))))
    return env


def style_for(channel: str, fmt: str) -> str:
    """Which escaping a template gets: html, markdown, chat-text (mentions neutralised), text or sms."""
    return {"html": "html", "md": "markdown"}.get(fmt) or _TEXT_CHANNELS.get(channel, "chat-text")

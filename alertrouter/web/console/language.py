"""Which language a console page is written in, per person: the switch on every page (a cookie set by
`/language/{language}`, see `login`) wins over the browser's `Accept-Language`, which wins over the rules'
`global.language`."""

from __future__ import annotations

from alertrouter.i18n import LANGUAGES

__all__ = ["LANGUAGE_COOKIE", "REMEMBER", "choose_language", "from_accept_language"]

LANGUAGE_COOKIE = "alertrouter_lang"
REMEMBER = 365 * 24 * 3600  # seconds the switch's choice is kept
_MAX_RANGES = 32  # an Accept-Language header is a handful of ranges; more is not read


def _quality(params: list[str]) -> float:
    for param in params:
        name, _, value = param.strip().partition("=")
        if name.strip().lower() == "q":
            try:
                q = float(value)
            except ValueError:
                return 0.0
            return q if 0.0 <= q <= 1.0 else 0.0
    return 1.0


def _match(tag: str) -> str | None:
    """The console language a language range asks for: `zh`, `zh-CN`, `zh-Hans`, `zh-Hans-CN` read as
    Chinese (Simplified, the only Chinese the console has), `en-*` as English; `*` matches nothing (it
    lets the rules decide)."""
    tag = tag.strip().lower()
    if tag in ("zh-tw", "zh-hk", "zh-mo") or tag.startswith("zh-hant"):
        return None  # Traditional Chinese readers are better served by the rules' choice than a guess
    if tag == "zh" or tag.startswith("zh-"):
        return "zh-CN"
    if tag == "en" or tag.startswith("en-"):
        return "en"
    return None


def from_accept_language(header: str) -> str | None:
    """The console language the browser prefers most (RFC 9110 quality values; ties keep the header's
    order), or None when it names none the console has."""
    ranges: list[tuple[float, int, str]] = []
    for position, item in enumerate(header.split(",")[:_MAX_RANGES]):
        tag, *params = item.split(";")
        language = _match(tag)
        q = _quality(params)
        if language is not None and q > 0:
            ranges.append((-q, position, language))
    return min(ranges)[2] if ranges else None


def choose_language(cookie: str | None, accept_language: str, default: str) -> str:
    """switch (cookie) > Accept-Language > the rules' `global.language`."""
    if cookie is not None and cookie in LANGUAGES:
        return cookie
    return from_accept_language(accept_language) or default

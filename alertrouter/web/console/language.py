"""Which language a console page is written in, per person: the switch on every page (a cookie set by
`/language/{language}`, see `login`) wins over the rules' `global.language`.

The browser's `Accept-Language` is not read: a team that writes `language: zh-CN` in its rules wants its
console in Chinese on every machine, and most machines' browsers ask for English whatever their person
reads. Whoever wants the other language says so once with the switch."""

from __future__ import annotations

from alertrouter.message.i18n import LANGUAGES

__all__ = ["LANGUAGE_COOKIE", "REMEMBER", "choose_language"]

LANGUAGE_COOKIE = "alertrouter_lang"
REMEMBER = 365 * 24 * 3600  # seconds the switch's choice is kept


def choose_language(cookie: str | None, default: str) -> str:
    """switch (cookie) > the rules' `global.language`; a cookie naming no language the console has is
    ignored."""
    if cookie is not None and cookie in LANGUAGES:
        return cookie
    return default

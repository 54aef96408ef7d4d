"""A delivery's error as a console page shows it, in the page's language.

The delivery loop stores its errors as English text (`deliveries.last_error`, the attempts' `error`, the
channels' `last_error`): the product's own sentences (`daily cap reached, not sent to 2 number(s)`)
wrapped around what a vendor or the network answered (`errcode 310000: keywords not in content`). The
product's sentences are recognised here and said in the reader's language; what a vendor wrote is shown
as it wrote it, labelled as such (`原文：...` in zh-CN), since only its own words identify it to the vendor
and in the vendor's documentation. English pages show the stored text unchanged.
"""

from __future__ import annotations

import re
from datetime import timedelta
from gettext import NullTranslations

from alertrouter.message.ages import span_text
from alertrouter.web.console.views import N_

__all__ = ["error_text"]

# The product's fixed sentences, exactly as `alertrouter.delivery` writes them.
_FIXED = {
    "the channel has no credentials in this deployment": N_("the channel has no credentials in this deployment"),
    "the channel has no credentials": N_("the channel has no credentials in this deployment"),
    "the channel is no longer configured": N_("the channel is no longer configured"),
    "worker stopped during the send": N_("worker stopped during the send"),
}
# The product's sentences around another error (`rest`, worded again by `error_text`); a `count` is a number.
_WRAPPED: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"daily cap reached, not sent to (?P<count>\d+) number\(s\)\Z"),
        N_("daily cap reached, not sent to %(count)s number(s)"),
    ),
    (
        re.compile(r"split, its messages are sent alone: (?P<rest>.*)\Z", re.S),
        N_("split, its messages are sent alone: %(rest)s"),
    ),
    (
        re.compile(r"dead letter after (?P<count>\d+) unexpected failures: (?P<rest>.*)\Z", re.S),
        N_("dead letter after %(count)s unexpected failures: %(rest)s"),
    ),
    (  # `after`: RetryConfig.give_up_after as Python prints a timedelta (`1 day, 0:00:00`, `6:00:00`)
        re.compile(r"gave up after (?P<after>(?:\d+ days?, )?\d+:\d\d:\d\d): (?P<rest>.*)\Z", re.S),
        N_("gave up after %(after)s: %(rest)s"),
    ),
    (
        re.compile(r"a combined message failed, sent alone now: (?P<rest>.*)\Z", re.S),
        N_("a combined message failed, sent alone now: %(rest)s"),
    ),
    (
        re.compile(r"unexpected failure (?P<count>\d+) of (?P<of>\d+): (?P<rest>.*)\Z", re.S),
        N_("unexpected failure %(count)s of %(of)s: %(rest)s"),
    ),
]
_DEPTH = 3  # wrappers nest at most this deep (a split of a dead letter ...); deeper is shown as written


def error_text(tr: NullTranslations, language: str, text: object) -> str:
    """`text` (a stored error, or None) in `language` (`tr` its translations): the product's words
    translated, anything else labelled as written by whoever answered. In English, the source language,
    the stored text as it is."""
    raw = "" if text is None else str(text)
    if not raw or language == "en":
        return raw
    return _worded(tr, raw, _DEPTH)


def _worded(tr: NullTranslations, raw: str, depth: int) -> str:
    if raw in _FIXED:
        return tr.gettext(_FIXED[raw])
    if depth > 0:
        for pattern, message in _WRAPPED:
            found = pattern.match(raw)
            if found is not None:
                values = found.groupdict()
                if "after" in values:
                    values["after"] = span_text(tr, _timedelta(values["after"]))
                if "rest" in values:
                    values["rest"] = _worded(tr, values["rest"], depth - 1)
                return tr.gettext(message) % values
    return tr.pgettext("delivery error", "as written: %(error)s") % {"error": raw}


def _timedelta(text: str) -> timedelta:
    """`1 day, 0:00:00` / `2 days, 6:00:00` / `6:00:00` (Python's `str(timedelta)`) back to a timedelta."""
    days, _, clock = text.rpartition(", ")
    hours, minutes, seconds = (int(part) for part in clock.split(":"))
    return timedelta(days=int(days.split(" ")[0]) if days else 0, hours=hours, minutes=minutes, seconds=seconds)

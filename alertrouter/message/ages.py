"""How long something lasted, in words, in the language of the translations given. Two spellings, on purpose:

- `age_text` (a message's age, the console's durations, a silence's `span_text`): the two largest units
  that matter, nothing padded: `45s`, `12m`, `3h 5m`, `3h`, `2d 4h`; a negative length (clocks apart)
  reads `0s`.
- `table_duration` (the digest's tables of means and medians): minutes always shown and zero-padded,
  and hours counted up to 47 before days, so a column reads alike from row to row (`3h 00m`, `30h 05m`,
  `2d 4h`); no value reads as an em dash.

Both read the same catalogue entries (`%(h)sh %(m)sm`, ...), so a language words them alike.
"""

from __future__ import annotations

from datetime import timedelta
from gettext import NullTranslations

__all__ = ["age_text", "span_text", "table_duration"]


def age_text(tr: NullTranslations, delta: timedelta) -> str:
    """`45s`, `12m`, `3h 5m`, `2d 4h` (`12 分钟`, `3 小时 5 分钟`, ...)."""
    s = max(0, int(delta.total_seconds()))
    if s < 60:
        return tr.gettext("%(s)ss") % {"s": s}
    if s < 3600:
        return tr.gettext("%(m)sm") % {"m": s // 60}
    if s < 86400:
        if s % 3600 >= 60:
            return tr.gettext("%(h)sh %(m)sm") % {"h": s // 3600, "m": s % 3600 // 60}
        return tr.gettext("%(h)sh") % {"h": s // 3600}
    return tr.gettext("%(d)sd %(h)sh") % {"d": s // 86400, "h": s % 86400 // 3600}


def span_text(tr: NullTranslations, delta: timedelta) -> str:
    """A length of time said in words, as `age_text` but whole days alone: a silence's `1h`, `1d`
    (`1 小时`, `1 天`), never the config's `1h30m` spelling."""
    s = max(0, int(delta.total_seconds()))
    if s >= 86400 and s % 86400 == 0:
        return tr.gettext("%(d)sd") % {"d": s // 86400}
    return age_text(tr, delta)


def table_duration(tr: NullTranslations, value: timedelta | None) -> str:
    """`45s`, `12m`, `3h 05m`, `47h 59m`, `2d 4h` (`45 秒`, `3 小时 05 分钟`, ...); an em dash for no value."""
    if value is None:
        return "—"
    seconds = int(value.total_seconds())
    if seconds < 60:
        return tr.gettext("%(s)ss") % {"s": seconds}
    minutes, hours = seconds // 60, seconds // 3600
    if hours == 0:
        return tr.gettext("%(m)sm") % {"m": minutes}
    if hours < 48:
        return tr.gettext("%(h)sh %(m)sm") % {"h": hours, "m": f"{minutes % 60:02d}"}
    return tr.gettext("%(d)sd %(h)sh") % {"d": hours // 24, "h": hours % 24}

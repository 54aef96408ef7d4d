"""Prometheus-style durations (`30s`, `10m`, `1h30m`, `7d`, `2w`) as used in rules and settings."""

from __future__ import annotations

import re
from datetime import timedelta

__all__ = ["format_duration", "parse_duration"]

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}
_RANK = {unit: i for i, unit in enumerate(_UNITS)}  # larger units rank higher
_PART = re.compile(r"(\d+)(ms|s|m|h|d|w|y)")


def parse_duration(text: str) -> timedelta:
    """Parse a duration the way Prometheus and Alertmanager write them.

    Units must appear from largest to smallest, each at most once (`1h30m`, not `30m1h`),
    which is what Prometheus accepts; a bare `0` is zero.
    """
    text = text.strip()
    if text == "0":
        return timedelta(0)
    if not text:
        raise ValueError("empty duration")
    pos = 0
    seconds = 0.0
    last_rank = len(_UNITS)
    while pos < len(text):
        m = _PART.match(text, pos)
        if m is None:
            raise ValueError(f"invalid duration {text!r}: expected e.g. 30s, 10m, 1h30m, 7d")
        rank = _RANK[m.group(2)]
        if rank >= last_rank:
            raise ValueError(f"invalid duration {text!r}: units must go from largest to smallest")
        last_rank = rank
        seconds += int(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return timedelta(seconds=seconds)


def format_duration(value: timedelta) -> str:
    """The shortest Prometheus-style spelling of a duration (`1h30m`, `0s`)."""
    total_ms = round(value.total_seconds() * 1000)
    if total_ms == 0:
        return "0s"
    parts: list[str] = []
    for unit in ("w", "d", "h", "m", "s"):
        size = round(_UNITS[unit] * 1000)
        count, total_ms = divmod(total_ms, size)
        if count:
            parts.append(f"{count}{unit}")
    if total_ms:
        parts.append(f"{total_ms}ms")
    return "".join(parts)

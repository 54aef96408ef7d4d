"""What the digest's charts share without matplotlib: a drawn chart, its width, colours and fonts.

`charts` (the light entry point) and `drawing` (matplotlib, imported only when a chart is drawn) both
read these, so neither imports the other for them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CHART_WIDTH", "CJK_FAMILY", "SEVERITY_COLORS", "Chart", "chart_fonts"]

CHART_WIDTH = 600
SEVERITY_COLORS = {"critical": "#c62828", "warning": "#ef6c00", "info": "#1565c0"}
CJK_FAMILY = "Noto Sans CJK SC"  # Debian's fonts-noto-cjk; Simplified Chinese glyph forms
_LATIN_FAMILY = "DejaVu Sans"  # matplotlib's own


def chart_fonts(language: str) -> list[str]:
    """Font families of a chart's text, first choice first; the second draws what the first lacks."""
    return [CJK_FAMILY, _LATIN_FAMILY] if language == "zh-CN" else [_LATIN_FAMILY, CJK_FAMILY]


@dataclass(frozen=True, slots=True)
class Chart:
    cid: str  # the HTML shows it as <img src="cid:{cid}">
    title: str
    alt: str
    png: bytes
    width: int
    height: int

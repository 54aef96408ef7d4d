"""The digest's charts as PNG bytes (matplotlib's Agg backend: headless, no fonts fetched, no network).

matplotlib (with NumPy and Pillow, a large part of a process's memory) is imported only when a chart is drawn
(`alertrouter.digest.drawing`), not when `serve` starts: most processes never draw one.

Only the object-oriented API is used (`Figure` + `FigureCanvasAgg`), never pyplot, so no global figure
state exists and charts can be drawn in a worker thread. Images are drawn at twice their display size
for high-density screens; the HTML shows them at `CHART_WIDTH` pixels.

Every word in a chart is in the digest's language (`tr`). Chinese needs a CJK font: Noto Sans CJK SC
from Debian's `fonts-noto-cjk`, found by matplotlib's font manager by family name. Each text element
is given the font explicitly (no global `rcParams`), with a fallback family for glyphs the first
lacks, so an English chart still draws a CJK label value and a Chinese one Latin data.
"""

from __future__ import annotations

from collections.abc import Sequence

from alertrouter.digest.chart_types import CHART_WIDTH, CJK_FAMILY, SEVERITY_COLORS, Chart, chart_fonts
from alertrouter.digest.types import Count, DayCount, Noise
from alertrouter.message.i18n import translations

# The shared types are re-exported: callers draw and show charts through this module alone.
__all__ = ["CHART_WIDTH", "CJK_FAMILY", "SEVERITY_COLORS", "Chart", "chart_fonts", "draw_charts", "font_file"]


def font_file(family: str) -> str:
    """The file matplotlib draws `family` from; ValueError when it is not installed."""
    from matplotlib.font_manager import FontProperties, findfont

    return str(findfont(FontProperties(family=family), fallback_to_default=False))


def draw_charts(
    days: Sequence[DayCount],
    severities: Sequence[str],
    nodes: Sequence[Count],
    noise: Noise,
    *,
    language: str = "en",
) -> list[Chart]:
    """Every chart of one digest, in the order the email shows them, worded in `language`."""
    from alertrouter.digest.drawing import noise_chart, per_day_chart, top_nodes_chart

    tr = translations(language)
    return [
        per_day_chart(days, severities, tr, language),
        noise_chart(noise, tr, language),
        top_nodes_chart(nodes, tr, language),
    ]

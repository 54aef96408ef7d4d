"""The digest's charts drawn with matplotlib: imported only when a digest is drawn (see `charts`)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from gettext import NullTranslations

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.ticker import MaxNLocator

from alertrouter.digest.chart_types import CHART_WIDTH, SEVERITY_COLORS, Chart, chart_fonts
from alertrouter.digest.types import Count, DayCount, Noise
from alertrouter.digest.words import day_label, mechanism_name, severity_label

__all__ = ["noise_chart", "per_day_chart", "top_nodes_chart"]

_OTHER = ("#616161", "#8e24aa", "#00838f", "#6d4c41", "#9e9d24")
_DPI = 200
_INK, _GRID = "#37474f", "#e0e0e0"


def _figure(height_px: int) -> Figure:
    fig = Figure(figsize=(CHART_WIDTH / 100, height_px / 100), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _style(ax: Axes, fonts: list[str]) -> None:
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    for side in ("left", "bottom"):
        ax.spines[side].set_color(_GRID)
    ax.tick_params(colors=_INK, labelsize=8, length=0, labelfontfamily=fonts)
    ax.set_axisbelow(True)


def _png(fig: Figure) -> bytes:
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=_DPI, metadata={"Software": None}, facecolor="white")
    return out.getvalue()


def _color(severity: str, others: list[str]) -> str:
    if severity in SEVERITY_COLORS:
        return SEVERITY_COLORS[severity]
    if severity not in others:
        others.append(severity)
    return _OTHER[others.index(severity) % len(_OTHER)]


def _nothing(ax: Axes, tr: NullTranslations, fonts: list[str]) -> None:
    text = tr.gettext("no alerts fired this week")
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", color=_INK, fontsize=9, fontfamily=fonts)


def per_day_chart(
    days: Sequence[DayCount], severities: Sequence[str], tr: NullTranslations, language: str = "en"
) -> Chart:
    fonts = chart_fonts(language)
    fig = _figure(240)
    ax = fig.add_axes((0.08, 0.16, 0.9, 0.72))
    _style(ax, fonts)
    ax.grid(axis="y", color=_GRID, linewidth=0.6)
    labels = [day_label(d.day, language, short=True) for d in days]
    bottom = [0] * len(days)
    others: list[str] = []
    top: BarContainer | None = None
    for severity in severities:
        values = [d.by_severity.get(severity, 0) for d in days]
        if not any(values):
            continue
        name = severity_label(tr, severity)
        top = ax.bar(labels, values, bottom=bottom, color=_color(severity, others), width=0.6, label=name)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    if top is not None:
        ax.bar_label(
            top, labels=[f"{b:,}" if b else "" for b in bottom], padding=2, fontsize=7, color=_INK, fontfamily=fonts
        )
        ax.legend(
            loc="upper left",
            bbox_to_anchor=(0, 1.16),
            ncol=6,
            frameon=False,
            prop=FontProperties(family=fonts, size=8),
            labelcolor=_INK,
        )
    else:
        _nothing(ax, tr, fonts)
        ax.set_ylim(0, 1)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    total = sum(bottom)
    alt = tr.gettext("Alerts per day: %(days)s") % {
        "days": tr.gettext(", ").join(f"{lab} {b}" for lab, b in zip(labels, bottom, strict=True))
    }
    title = tr.gettext("Alerts fired per day (%(total)s in the week)") % {"total": f"{total:,}"}
    return Chart("alerts-per-day", title, alt, _png(fig), CHART_WIDTH, 240)


def top_nodes_chart(nodes: Sequence[Count], tr: NullTranslations, language: str = "en") -> Chart:
    fonts = chart_fonts(language)
    shown = list(nodes)[:10]
    height = 70 + 22 * max(1, len(shown))
    fig = _figure(height)
    ax = fig.add_axes((0.26, 30 / height, 0.68, 1 - 42 / height))
    _style(ax, fonts)
    ax.grid(axis="x", color=_GRID, linewidth=0.6)
    names = [n.name if len(n.name) <= 28 else n.name[:27] + "…" for n in reversed(shown)]
    values = [n.count for n in reversed(shown)]
    if shown:
        bars = ax.barh(names, values, color="#546e7a", height=0.65)
        ax.bar_label(bars, fmt="{:,.0f}", padding=3, fontsize=7, color=_INK, fontfamily=fonts)
    else:
        _nothing(ax, tr, fonts)
        ax.set_yticks([])
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    alt = tr.gettext("Top nodes by alerts fired: %(nodes)s") % {
        "nodes": tr.gettext(", ").join(f"{n.name} {n.count}" for n in shown)
    }
    return Chart("top-nodes", tr.gettext("Noisiest nodes (alerts fired)"), alt, _png(fig), CHART_WIDTH, height)


def noise_chart(noise: Noise, tr: NullTranslations, language: str = "en") -> Chart:
    fonts = chart_fonts(language)
    steps = [
        (tr.gettext("alert changes received"), noise.alert_changes),
        *(
            (tr.gettext("%(mechanism)s (alerts)") % {"mechanism": mechanism_name(tr, m.name)}, m.alerts)
            for m in noise.mechanisms
        ),
        (tr.gettext("messages intended"), noise.messages_intended),
    ]
    if noise.messages_sent or noise.messages_unsent:  # no delivery at all: nothing to show (e.g. `deliver` off)
        steps.append((tr.gettext("messages sent"), noise.messages_sent))
    height = 70 + 22 * len(steps)
    fig = _figure(height)
    ax = fig.add_axes((0.3, 30 / height, 0.64, 1 - 42 / height))
    _style(ax, fonts)
    ax.grid(axis="x", color=_GRID, linewidth=0.6)
    colors = ["#455a64", *(["#90a4ae"] * len(noise.mechanisms)), "#2e7d32", "#2e7d32"][: len(steps)]
    bars = ax.barh([s for s, _ in reversed(steps)], [v for _, v in reversed(steps)], color=list(reversed(colors)))
    ax.bar_label(bars, fmt="{:,.0f}", padding=3, fontsize=7, color=_INK, fontfamily=fonts)
    alt = tr.gettext("Noise reduction: %(steps)s") % {"steps": tr.gettext(", ").join(f"{s} {v}" for s, v in steps)}
    return Chart("noise", tr.gettext("Noise reduction"), alt, _png(fig), CHART_WIDTH, height)

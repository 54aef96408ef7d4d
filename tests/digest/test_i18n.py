"""The digest in both languages: the subject, the HTML, the text part and the charts of a week with every
section filled (and of an empty week, for the empty states) render in zh-CN without a visible English word
of the product, and in en without Chinese; dates and times are local to the digest's zone; the charts'
Chinese is drawn with a Noto CJK font from Debian's fonts-noto-cjk, with no glyph missing."""

from __future__ import annotations

import re
import warnings
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest

from alertrouter.digest.charts import CJK_FAMILY, chart_fonts, draw_charts, font_file
from alertrouter.digest.period import week_bounds
from alertrouter.digest.types import (
    AckStats,
    Count,
    DayCount,
    DigestStats,
    FlappingAlert,
    GpuEventFact,
    Mechanism,
    NodeFaults,
    Noise,
    ReceiverIncident,
    ReceiverSection,
    ResolveStats,
    RmaCandidate,
    Totals,
)
from alertrouter.digest.view import RenderedDigest, render_digest
from alertrouter.render.samples import sample_notifications
from alertrouter.render.templates import Templates
from alertrouter.ruleset.schedule import zone

REPO = Path(__file__).resolve().parents[2]
WEEK, TZ = "2026-W47", "Asia/Shanghai"
_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
_WORD = re.compile(r"[A-Za-z]{2,}")
# Not words of the product: acronyms and names read the same in Chinese, the product's name, the zone's
# abbreviation in a time, the ISO week.
_KEPT = {"GPU", "XID", "RMA", "UUID", "ECC", "alertrouter", "CST"}
# The first message about an incident, with the facts its headline is worded from (where, alertname, units).
SNAPSHOT = sample_notifications()["firing"].items[0]


UUID = "GPU-7b1f2c3d-0042-0003"


def _event(day: int, code: int, node: str = "gpu-node-0042") -> GpuEventFact:
    return GpuEventFact(datetime(2026, 11, day, 2, 0, tzinfo=UTC), code, "GPUXidError", node, "3")


def _stats(*, empty: bool = False) -> DigestStats:
    tz = zone(TZ)
    start, end = week_bounds(WEEK, tz)
    days = [date(2026, 11, 16) + timedelta(days=i) for i in range(7)]
    if empty:
        noise = Noise(0, 0, 0, 0, 0, {}, [])
        totals = Totals(0, 0, 0, 0, 0, 0, 0, [], [], [], [])
        return DigestStats(
            WEEK, TZ, start, end, totals, noise, [], [], [], [], [], [DayCount(d, {}) for d in days], [], None
        )
    noise = Noise(
        alert_changes=4210,
        payloads=380,
        payload_alerts=9000,
        messages_intended=57,
        messages_sent=51,
        messages_unsent={"dead": 2, "unconfigured": 3, "coalesced": 1},
        mechanisms=[
            Mechanism("inhibited", 320, [Count("node-down-mutes-gpu", 320)]),
            Mechanism("rolled_up", 1000, [Count("gpu-storm", 1000)]),
            Mechanism("throttled", 40, [Count("repeat interval", 40)]),
            Mechanism("silenced", 8, [Count("silence 3f2a", 8)]),
            Mechanism("muted_by_interval", 5, [Count("time interval business-hours", 5)]),
        ],
    )
    totals = Totals(
        fired=1342,
        distinct_alerts=1201,
        new_alerts=1100,
        recurring_alerts=101,
        open_at_end=3,
        incidents_opened=88,
        incidents_open_at_end=2,
        by_severity=[Count("critical", 400), Count("warning", 930), Count("info", 12)],
        by_alertname=[Count("GPUHighTemp", 900), Count("GPUXidError", 42)],
        by_node=[Count("gpu-node-0042", 31)],
        by_region=[Count("north", 700), Count("south", 640), Count("(none)", 2)],
    )
    return DigestStats(
        period=WEEK,
        timezone=TZ,
        start=start,
        end=end,
        totals=totals,
        noise=noise,
        noisiest_alerts=[Count("GPUHighTemp", 900, "812"), Count("GPUXidError", 42, "9")],
        noisiest_nodes=[
            Count("gpu-node-0042", 31, "GPUXidError, GPUHighTemp"),
            Count("gpu-node-0123", 17, "GPUHighTemp"),
        ],
        flapping=[FlappingAlert("GPUHighTemp", "gpu-node-0123", "gpu 5", 5)],
        resolve=[
            ResolveStats("all", 1300, timedelta(minutes=42), timedelta(minutes=25)),
            ResolveStats("critical", 390, timedelta(hours=2, minutes=5), timedelta(minutes=50)),
            ResolveStats("warning", 900, timedelta(seconds=40), timedelta(days=2, hours=3)),
        ],
        ack=[AckStats("all", 88, 40, timedelta(minutes=12), timedelta(minutes=9)), AckStats("info", 2, 0, None, None)],
        per_day=[DayCount(d, {"critical": 10 + i, "warning": 100 + i}) for i, d in enumerate(days)],
        severities=["critical", "warning", "info"],
        receiver=ReceiverSection(
            "weekly-digest",
            14,
            [Count("first", 10), Count("resolved", 3), Count("repeat", 1)],
            [
                ReceiverIncident(SNAPSHOT.headline, "critical", datetime(2026, 11, 18, 2, 0, tzinfo=UTC), 2, SNAPSHOT),
                ReceiverIncident("gpu-node-0777: NodeDown", "info", datetime(2026, 11, 19, 2, 0, tzinfo=UTC), 1),
            ],
            4,
        ),
        gpu_faults=[
            NodeFaults("gpu-node-0042", 3, ["3", "5"], [13, 48], timedelta(hours=56)),
            NodeFaults("(none)", 1, [], [79], timedelta(hours=168)),  # an alert without a node label
        ],
        rma=[
            RmaCandidate(
                UUID,
                "1650923004521",
                "NVIDIA H100 80GB HBM3",
                "gpu-node-0042",
                "3",
                "dbe-repeated",
                timedelta(days=30),
                (_event(9, 48, "gpu-node-0017"), _event(20, 48)),  # moved to node 0042 between the two
                xids=(48,),
            )
        ],
    )


def _render(stats: DigestStats, language: str) -> RenderedDigest:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns of a glyph missing from the font (a box drawn)
        charts = draw_charts(stats.per_day, stats.severities, stats.noisiest_nodes, stats.noise, language=language)
    now = datetime(2026, 11, 23, 1, 0, tzinfo=UTC)
    return render_digest(Templates(), stats, charts, now=now, inline=False, language=language)


class _Visible(HTMLParser):
    """What a reader sees of an HTML email: its text, and the alt and title of images."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._style = tag in ("style", "script")
        self.parts += [v for k, v in attrs if k in ("alt", "title") and v]

    def handle_data(self, data: str) -> None:
        if not self._style:
            self.parts.append(data)


def _visible(html: str) -> str:
    parser = _Visible()
    parser.feed(html)
    return "\n".join(parser.parts)


def _data(stats: DigestStats) -> list[str]:
    """The stats' label values and names (data), longest first."""
    values = {stats.period, stats.timezone, *(c.name for c in stats.noisiest_alerts + stats.noisiest_nodes)}
    values |= {c.extra for c in stats.noisiest_nodes}
    values |= {c.name for c in stats.totals.by_alertname + stats.totals.by_region + stats.totals.by_node}
    for m in stats.noise.mechanisms:
        values |= {r.name.removeprefix("silence ").removeprefix("time interval ") for r in m.rules}
    values |= {f.alertname for f in stats.flapping} | {f.node for f in stats.flapping}
    values |= {n.node for n in stats.gpu_faults} | {r.uuid for r in stats.rma}
    values |= {v for r in stats.rma for v in (r.rule, r.model, r.serial) if v} | {
        str(e.node) for r in stats.rma for e in r.evidence
    }
    if stats.receiver is not None:
        values |= {stats.receiver.receiver} | {i.headline for i in stats.receiver.incidents}
        for i in stats.receiver.incidents:  # the worded headline's data: node, alert name, label values
            stored = i.snapshot.to_json()["summary"] if i.snapshot else {}  # as the outbox row holds it
            values |= set(i.snapshot.labels.values()) | {str(stored.get("where", ""))} if i.snapshot else set()
    return sorted((v for v in values if v and v != "(none)"), key=len, reverse=True)


def _leaks(text: str, stats: DigestStats) -> list[str]:
    for value in _data(stats):
        text = text.replace(value, " ")
    return [w for w in _WORD.findall(text) if w not in _KEPT]


def _outputs(rendered: RenderedDigest) -> dict[str, str]:
    charts = "\n".join(f"{c.title}\n{c.alt}" for c in rendered.charts)
    return {"subject": rendered.subject, "html": _visible(rendered.html), "text": rendered.text, "charts": charts}


@pytest.mark.parametrize("empty", [False, True], ids=["week", "empty week"])
def test_the_chinese_digest_has_no_english_word_of_the_product(empty: bool) -> None:
    stats = _stats(empty=empty)
    for part, text in _outputs(_render(stats, "zh-CN")).items():
        assert _leaks(text, stats) == [], f"{part}:\n{text}"
        assert _CJK.search(text), part


@pytest.mark.parametrize("empty", [False, True], ids=["week", "empty week"])
def test_the_english_digest_has_no_chinese(empty: bool) -> None:
    stats = _stats(empty=empty)
    for part, text in _outputs(_render(stats, "en")).items():
        for value in _data(stats):
            text = text.replace(value, " ")
        assert not _CJK.search(text), f"{part}:\n{text}"
        assert _WORD.search(text), part


def test_the_chinese_digest_reads_as_the_catalogue_says() -> None:
    rendered = _render(_stats(), "zh-CN")
    # msgstr of "Weekly alert digest %(period)s: %(alerts)s alerts, %(messages)s messages" and " (%(receiver)s)"
    assert rendered.subject == "告警周报 2026-W47：告警 1,342 次，消息 57 条（weekly-digest）"
    lines = rendered.text.splitlines()
    assert lines[0] == "告警周报 2026-W47"
    # Monday 16 to Sunday 22 November, local: the week's bounds are Shanghai's midnights (16:00 UTC)
    assert lines[1] == "2026年11月16日 周一 – 2026年11月22日 周日 (Asia/Shanghai, 168 小时)，接收方 weekly-digest"
    assert "  11月18日 周三      114  严重 12，警告 102" in lines
    assert {"总览", "降噪", "每日告警"} <= set(lines)
    assert "  gpu-node-0042：3 次故障，GPU 3, 5，XID 13, 48，平均故障间隔 56.0 小时" in lines  # 168 h / 3
    assert "  （无）：1 次故障，GPU —，XID 79，平均故障间隔 168.0 小时" in lines  # msgstr of "(none)"
    assert {"  抑制：320 条告警", "  合并为风暴：1,000 条告警"} <= set(lines)
    assert {"    静默 3f2a: 8", "    时间段 business-hours: 5", "    重复间隔: 40"} <= set(lines)
    assert "        5  gpu-node-0123 上的 GPUHighTemp GPU 5" in lines
    assert "      900  GPUHighTemp (812 个节点)" in lines
    # the incident's headline worded from its first message's facts; 02:00 UTC on Wednesday is 10:00 in Shanghai
    assert "  [严重] gpu-node-07：6/8 块 GPU GPUHighTemp （11月18日 周三 10:00 起，2 条消息）" in lines
    assert "  [提示] gpu-node-0777: NodeDown （11月19日 周四 10:00 起，1 条消息）" in lines  # no facts: as stored
    assert any(line.startswith("  严重") and "平均 2 小时 05 分钟，中位数 50 分钟" in line for line in lines)
    assert any(line.startswith("  警告") and "平均 40 秒，中位数 2 天 3 小时" in line for line in lines)
    assert "发往 weekly-digest：14 条消息 (首次通知 10 条，恢复通知 3 条，重复提醒 1 条)" in lines
    assert "由 alertrouter 生成于 2026-11-23 09:00 CST。" in lines  # 01:00 UTC
    html = _visible(rendered.html)
    unsent = "未发送： 发送失败 2 条，渠道未配置 3 条，已合并 1 条"  # msgstr of "Not sent:", "dead", ...
    assert unsent in html.replace("\n", "")


def _columns(text: str) -> int:
    return sum(2 if _CJK.match(c) else 1 for c in text)


@pytest.mark.parametrize("language", ["zh-CN", "en"])
def test_text_columns_line_up_with_labels_in_either_language(language: str) -> None:
    lines = _render(_stats(), language).text.splitlines()
    first = lines.index("总览" if language == "zh-CN" else "TOTALS") + 1
    for line in lines[first : first + 4]:  # label, padded, then the number: a CJK character is two columns wide
        number = re.search(r"\s(\d[\d,]*)", line)
        assert number is not None, line
        assert _columns(line[: number.start(1)]) == 32, line


def test_the_english_digest_is_unchanged_by_the_translation() -> None:
    rendered = _render(_stats(), "en")
    assert rendered.subject == "Weekly alert digest 2026-W47: 1,342 alerts, 57 messages (weekly-digest)"
    lines = rendered.text.splitlines()
    assert lines[1] == "Mon 16 Nov 2026 – Sun 22 Nov 2026 (Asia/Shanghai, 168 hours), receiver weekly-digest"
    assert "  Wed 18 Nov      114  critical 12, warning 102" in lines
    assert "  alerts fired (episodes)       1,342" in lines
    assert "  gpu-node-0042: 3 faults, GPU 3, 5, XID 13, 48, MTBF 56.0 h" in lines
    assert "  (none): 1 fault, GPU —, XID 79, MTBF 168.0 h"  # one fault, said in the singular in lines
    assert "  [critical] gpu-node-07: GPUHighTemp on 6/8 GPUs (from Wed 18 Nov 10:00, 2 messages)" in lines
    assert "        5  GPUHighTemp on gpu-node-0123 GPU 5" in lines


def test_chinese_charts_are_drawn_with_a_noto_cjk_font() -> None:
    assert chart_fonts("zh-CN")[0] == CJK_FAMILY
    path = Path(font_file(CJK_FAMILY))
    assert path.name.startswith("NotoSansCJK"), path
    assert path.suffix in (".ttc", ".otf"), path
    assert path.is_relative_to("/usr/share/fonts"), path  # Debian's fonts-noto-cjk, not a downloaded copy


def test_the_chinese_charts_differ_from_the_english_ones() -> None:
    stats = _stats()
    zh = draw_charts(stats.per_day, stats.severities, stats.noisiest_nodes, stats.noise, language="zh-CN")
    en = draw_charts(stats.per_day, stats.severities, stats.noisiest_nodes, stats.noise, language="en")
    assert [c.title for c in zh] == ["每日触发的告警（本周共 812 次）", "降噪", "告警最多的节点（触发次数）"]
    assert en[0].title == "Alerts fired per day (812 in the week)"
    assert all(a.png != b.png for a, b in zip(zh, en, strict=True))


@pytest.mark.parametrize(
    ("language", "line"),
    [
        ("en", "  and 2 more candidates (alertrouter gpus --rma lists them all)"),
        ("zh-CN", "  另有 2 个候选（alertrouter gpus --rma 可列出全部）"),
    ],
)
def test_rma_candidates_beyond_the_first_25_are_counted(language: str, line: str) -> None:
    stats = _stats()
    rendered = _render(replace(stats, rma=stats.rma * 27), language)
    assert rendered.text.count(f"  {UUID} (") + rendered.text.count(f"  {UUID}（") == 25
    assert line in rendered.text.splitlines()
    assert line.strip() in _visible(rendered.html)

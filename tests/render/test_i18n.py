"""Messages in both languages: the zh_CN catalogue covers every string the code and templates mark, every
message kind of every channel renders in zh-CN without English words of the product (and in English
without Chinese), and headlines are worded from the stored facts in the receiver's language."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po

from alertrouter.channels.base import MessageKind, Notification
from alertrouter.cli.main import main
from alertrouter.message import phrases
from alertrouter.message.i18n import Locale, catalogue_path, translations
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.pipeline.aggregate import IncidentSummary, storm_headline
from alertrouter.render.samples import render_sample, sample_notifications
from alertrouter.render.templates import Templates

from .conftest import TEMPLATES_DIR, cluster_item, node_item, notification

ROOT = Path(__file__).resolve().parents[2]
ZH = Locale("zh-CN", "Asia/Shanghai")
EN = Locale("en", "Asia/Shanghai")
# Every word the product writes in English in a message, as templates and `alertrouter.message.i18n` had them.
ENGLISH_UI = (
    "Node", "Nodes", "Where", "Since", "since", "Lasted", "lasted", "Alerts", "firing", "resolved", "more",
    "alerts", "nodes", "notification", "notifications", "Acknowledge", "Silence", "Open", "incident", "Incident",
    "Notifications", "Storm", "rolled", "Update", "update", "ago", "worst", "CRITICAL", "WARNING", "INFO",
    "RESOLVED", "ALERT", "GPUs", "Details", "new", "joined", "still", "region", "rack", "on", "in",
    "critical", "warning", "info",
)  # fmt: skip
_ENGLISH_WORD = re.compile(r"\b(" + "|".join(ENGLISH_UI) + r")\b")
_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


def _extracted() -> Iterator[tuple[str | tuple[str, ...], str | None]]:
    """(msgid, context) of every string marked for translation, read as `babel.cfg` says."""
    method_map = [("alertrouter/**.py", "python"), ("templates/**.j2", "jinja2.ext:babel_extract")]
    options = {"templates/**.j2": {"extensions": "jinja2.ext.i18n", "trim_blocks": "true", "lstrip_blocks": "true"}}
    keep = lambda path: not Path(path).name.startswith(".") and Path(path).name != "__pycache__"  # noqa: E731
    for _file, _line, message, _comments, context in extract_from_dir(
        str(ROOT), method_map, options, directory_filter=keep
    ):
        yield message, context


def _catalogue() -> Catalog:
    path = catalogue_path("zh-CN")
    assert path is not None
    with path.open("rb") as f:
        return read_po(f, locale="zh_CN")


def test_babel_cfg_names_what_the_test_extracts() -> None:
    text = (ROOT / "babel.cfg").read_text(encoding="utf-8")
    assert "[python: alertrouter/**.py]" in text
    assert "[jinja2: templates/**.j2]" in text


def test_every_marked_string_has_a_chinese_translation() -> None:
    catalog = _catalogue()
    extracted = list(_extracted())
    assert len(extracted) > 50  # the extractor found the templates and the Python wording
    missing = []
    for msgid, context in extracted:
        key = msgid[0] if isinstance(msgid, tuple) else msgid
        entry = catalog.get(key, context=context)
        strings = entry.string if entry is not None else None
        values = strings if isinstance(strings, tuple) else (strings,)
        if entry is None or entry.fuzzy or not all(values):
            missing.append((context, key))
    assert missing == []


def test_the_catalogue_has_no_stale_entries_and_its_placeholders_match() -> None:
    catalog = _catalogue()
    marked = {(m[0] if isinstance(m, tuple) else m, c) for m, c in _extracted()}
    stale = [
        (m.context, m.id)
        for m in catalog
        if m.id and (m.id[0] if isinstance(m.id, tuple) else m.id, m.context) not in marked
    ]
    assert stale == []
    problems = [(m.id, [str(e) for e in errors]) for m, errors in catalog.check() if errors]
    assert problems == []
    for message in catalog:
        if not message.id:
            continue
        ids = message.id if isinstance(message.id, (tuple, list)) else (message.id,)
        strings = message.string if isinstance(message.string, (tuple, list)) else (message.string,)
        wanted = set(re.findall(r"%\((\w+)\)s", ids[-1]))
        for s in strings:
            assert s is not None
            assert set(re.findall(r"%\((\w+)\)s", s)) == wanted, message.id


def test_an_unknown_language_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown language"):
        translations("fr")
    with pytest.raises(ValueError, match="unknown language"):
        Templates(builtin_dir=TEMPLATES_DIR, language="fr")


def _data_of(n: Notification) -> list[str]:
    """What in a notification is data (label values, annotations, alert names, links, mentions), longest
    first: removed from a rendering before looking for the product's words."""
    values: set[str] = {n.link or "", n.ack_link or "", n.silence_link or "", n.receiver}
    values |= set(n.mentions.mobiles) | set(n.mentions.user_ids)
    for item in n.items:
        values |= set(item.labels.values()) | {item.incident}
        for alert in item.alerts:
            values |= set(alert.labels.values()) | set((alert.annotations or {}).values())
    return sorted((v for v in values if v), key=len, reverse=True)


def _rendered(locale: Locale) -> Iterator[tuple[str, str, Notification]]:
    templates = Templates(builtin_dir=TEMPLATES_DIR)
    samples = sample_notifications()
    for name in templates.names():
        channel, _, rest = name.partition("/")
        kind, _, fmt = rest.partition(".")
        if kind not in samples:
            continue  # the digest: not a message kind
        n = replace(samples[kind], locale=locale)
        yield name, templates.render(channel, fmt, n), n
        if channel in ("dingtalk", "email") and fmt != "txt":
            yield f"{name} title", templates.title(n), n


def _without_data(text: str, n: Notification) -> str:
    for value in _data_of(n):
        text = text.replace(value, " ")
    text = re.sub(r"<[^>]*>", " ", text)  # markup (`<font color="warning">`, HTML) is not read as words
    return re.sub(r"https://\S+", " ", text)


def test_every_message_renders_in_chinese_without_english_words_of_the_product() -> None:
    seen = set()
    for name, out, n in _rendered(ZH):
        seen.add(name.split(" ")[0].split("/")[0])
        leaked = _ENGLISH_WORD.findall(_without_data(out, n))
        assert leaked == [], f"{name}: {leaked}\n{out}"
        assert _CJK.search(out), name
    assert seen == {"dingtalk", "wecom", "feishu", "sms", "email"}


def test_every_message_renders_in_english_without_chinese() -> None:
    for name, out, n in _rendered(EN):
        assert not _CJK.search(_without_data(out, n)), f"{name}\n{out}"
        assert _ENGLISH_WORD.search(_without_data(out, n)), name  # what the Chinese test looks for is there


def test_the_chinese_firing_message_reads_as_an_on_call_engineer_wants_it() -> None:
    n = replace(sample_notifications()["firing"], locale=ZH)
    out = Templates(builtin_dir=TEMPLATES_DIR).render("dingtalk", "md", n)
    lines = out.splitlines()
    assert lines[0] == "### 🔴 严重 | gpu-node-07：6/8 块 GPU GPUHighTemp"
    assert "- **节点：** gpu-node-07 (north 区 r12 机架)" in lines
    assert "- **开始于：** 18:00 CST（12 分钟前）" in lines  # 10:00 UTC is 18:00 in Shanghai
    assert "- GPU 0: GPU 0 at 88°C" in lines  # annotations are data, as written
    assert any(line.startswith("[确认](https://") and "| [静默 1 小时](https://" in line for line in lines)
    assert "[查看事件](https://alertrouter.example.com/incidents/1042)" in lines


def test_a_chinese_sms_tells_severity_headline_place_and_local_time() -> None:
    n = replace(sample_notifications()["firing"], locale=ZH)
    out = Templates(builtin_dir=TEMPLATES_DIR).render("sms", "txt", n)
    assert out.startswith(
        "[严重] gpu-node-07：6/8 块 GPU GPUHighTemp，north 区 r12 机架，18:00 CST 开始。GPU 0 at 88°C"
    )


def test_the_receivers_time_zone_is_used_for_every_time() -> None:
    n = sample_notifications()["resolved"]
    templates = Templates(builtin_dir=TEMPLATES_DIR)
    berlin = templates.render("email", "txt", replace(n, locale=Locale("en", "Europe/Berlin")))
    assert "Lasted: 25m (since 10:47 CET)" in berlin  # 09:47 UTC
    shanghai = templates.render("email", "txt", replace(n, locale=ZH))
    assert "持续：25 分钟（17:47 CST 开始）" in shanghai


# -- headlines ---------------------------------------------------------------------------------------


def _summary(units: tuple[str, ...], group: dict[str, str], total: int | None = 8) -> IncidentSummary:
    return IncidentSummary(
        key="k",
        rule="gpu-by-node",
        group_labels=group,
        common_labels={"alertname": "GPUHighTemp", "region": "north", "rack": "r12"},
        severity="critical",
        firing=frozenset(),
        units=units,
        units_total=total,
        extra={"unit_name": "GPUs"},
    )


@pytest.mark.parametrize(
    ("units", "group", "total"),
    [
        (("0", "1", "2", "3", "5", "7"), {"node": "gpu-node-07", "alertname": "GPUHighTemp"}, 8),
        (("3",), {"node": "gpu-node-07", "alertname": "GPUHighTemp"}, None),
        ((), {"node": "gpu-node-07", "alertname": "NodeDown"}, None),
        (("1",), {"alertname": "GPUHighTemp"}, 8),
        ((), {"alertname": "GPUHighTemp", "cluster": "c1", "rack": "r12"}, None),
    ],
)
def test_the_english_wording_is_the_stored_headline(
    units: tuple[str, ...], group: dict[str, str], total: int | None
) -> None:
    s = _summary(units, group, total)
    worded = phrases.node_headline(translations("en"), s.where, s.what, len(s.units), s.units_total, "GPUs")
    assert worded == s.headline


def test_the_english_storm_wording_is_the_stored_headline() -> None:
    members = [_summary(tuple(str(g) for g in range(8)), {"node": f"n{i}"}) for i in range(40)]
    stored = storm_headline("GPUXidError", members, ["region", "rack"])
    worded = phrases.storm_headline(
        translations("en"), "GPUXidError", 40, [("region", "north"), ("rack", "r12")], 320, "GPUs"
    )
    assert worded == stored == "GPUXidError on 40 nodes in region north, rack r12: 320 GPUs"
    down = [_summary((), {"node": f"n{i}"}) for i in range(8)]
    assert phrases.storm_headline(translations("en"), "NodeDown", 8, [], 0, "GPUs") == storm_headline(
        "NodeDown", down, []
    )


def test_chinese_headlines_are_worded_from_data() -> None:
    zh = translations("zh-CN")
    assert phrases.node_headline(zh, "gpu-node-07", "GPUHighTemp", 6, 8) == "gpu-node-07：6/8 块 GPU GPUHighTemp"
    assert phrases.node_headline(zh, "gpu-node-07", "NodeDown", 0, None) == "gpu-node-07：NodeDown"
    storm = phrases.storm_headline(zh, "GPUXidError", 40, [("region", "north"), ("rack", "r12")], 320, "GPUs")
    assert storm == "north 区 r12 机架 40 个节点 GPUXidError，共 320 块 GPU"
    assert phrases.unit_count(zh, "4", "NICs") == "4 个 NICs"  # a configured unit name is data


def test_a_snapshot_stored_before_the_facts_renders_with_its_stored_headline() -> None:
    old = node_item()  # as rows already in the outbox are: no `where`, no `alertname` in the summary
    snap = MessageSnapshot.from_json(old)
    assert phrases.headline(translations("zh-CN"), snap) == "gpu-node-07: GPUHighTemp on 6/8 GPUs"
    n = replace(notification(MessageKind.FIRING, [old]), locale=ZH)
    out = Templates(builtin_dir=TEMPLATES_DIR).render("wecom", "md", n)
    assert "gpu-node-07: GPUHighTemp on 6/8 GPUs" in out
    assert "> 节点： **gpu-node-07**" in out
    storm = MessageSnapshot.from_json(cluster_item(members=["gpu-node-01: GPUHighTemp on 6/8 GPUs"]))
    assert phrases.headline(translations("zh-CN"), storm) == "GPUHighTemp on many nodes"


def test_a_new_snapshot_is_worded_in_the_receivers_language() -> None:
    item = node_item()
    item["summary"] |= {"where": "gpu-node-07", "alertname": "GPUHighTemp"}
    n = notification(MessageKind.FIRING, [item])
    templates = Templates(builtin_dir=TEMPLATES_DIR)
    assert templates.title(replace(n, locale=ZH)) == "[严重] gpu-node-07：6/8 块 GPU GPUHighTemp"
    assert templates.title(n) == "[CRITICAL] gpu-node-07: GPUHighTemp on 6/8 GPUs"


def test_storm_members_are_worded_from_their_facts() -> None:
    n = replace(sample_notifications()["cluster"], locale=ZH)
    out = Templates(builtin_dir=TEMPLATES_DIR).render("feishu", "txt", n)
    assert out.startswith("[严重] north 区 37 个节点 GPUHighTemp，共 211 块 GPU\n告警风暴：37 个节点已合并为一个事件")
    assert "- gpu-node-00：6/8 块 GPU GPUHighTemp" in out.splitlines()


# -- the CLI -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("language", "expected"), [("en", "[CRITICAL] 12 notifications"), ("zh-CN", "[严重] 12 条通知")]
)
def test_render_sample_in_both_languages(language: str, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["render", "sms/coalesced.txt", "--sample", "--language", language, "--timezone", "Asia/Shanghai"])
    assert code == 0
    assert capsys.readouterr().out.startswith(expected)


def test_render_sample_takes_a_locale() -> None:
    templates = Templates(builtin_dir=TEMPLATES_DIR)
    out = render_sample(templates, "wecom/resolved.txt", locale=ZH)
    assert out.startswith("[已恢复] gpu-node-07：6/8 块 GPU GPUHighTemp")

"""The shipped Prometheus rules give every alert its summary and description in English and in Chinese
(`summary_zh_CN`, `description_zh_CN`), and each message shows its receiver's: a zh-CN receiver reads no
English sentence of the shipped rules, an English one reads them as before, and an alert without a
variant shows its plain annotation to both."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from alertrouter.channels.base import MessageKind
from alertrouter.channels.sms import sms_params, sms_text
from alertrouter.delivery.expand import enrich
from alertrouter.message.i18n import Locale, localized_annotations
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.render.templates import Templates

from .conftest import node_item, notification

RULES = Path(__file__).resolve().parents[2] / "rules" / "prometheus"
ZH = Locale("zh-CN", "Asia/Shanghai")
# As promtool renders the shipped GPUFallenOffBus for GPU 1 of gpu-node-07 (rules/prometheus/tests.yml).
NOTES = {
    "summary": "GPU 1 on gpu-node-07 has fallen off the bus (XID 79)",
    "description": "GPU 1 (GPU-bbb, 00000000:0F:00.0) on gpu-node-07 (10.0.0.7:9400) reported XID 79, GPU has"
    " fallen off the bus. Drain the node and power-cycle it; if it repeats, check the riser, PSU and PCIe slot.",
    "summary_zh_CN": "gpu-node-07 上的 GPU 1 已从总线掉线（XID 79）",
    "description_zh_CN": "gpu-node-07（10.0.0.7:9400）上的 GPU 1（GPU-bbb，00000000:0F:00.0）报告 XID 79，GPU 已从总线"
    "掉线。请排空节点并断电重启；若反复出现，检查转接卡、电源和 PCIe 插槽。",
}
# Names a Chinese annotation keeps as they are: products, programs, metrics, units, the Kubernetes state.
_NAMES = {
    "GPU", "XID", "NVIDIA", "C",  # °C
    "NVLink", "NVSwitch", "Fabric", "Manager", "PCIe", "HAMi", "vGPU", "Pod", "CUDA",
    "Prometheus", "Alertmanager", "alertrouter", "webhook", "job", "node-exporter", "dcgm-exporter", "kubelet",
    "DCGM", "CRC", "Kubernetes", "NotReady", "OOM", "killer", "GB/s", "MiB/s", "nvidia-smi", "POWER", "max_alerts",
    "q", "d", "r", "nvlink", "e", "dcgmi", "diag",  # nvidia-smi -q -d POWER, -r, nvlink -e; dcgmi diag -r 2
    "flit",  # NVLink CRC flit errors: the counter's name
    "RMA", "ROW_REMAPPER",  # a vendor's return process, as Chinese teams name it; nvidia-smi -q -d ROW_REMAPPER
    "truncatedAlerts", "alertrouter_db_errors_total", "alertrouter_notifications_total", "readyz", "UUID",
    "AlertrouterHeartbeatMissing", "rules/heartbeats.yml", "docs.nvidia.com/deploy/xid-errors",
}  # fmt: skip
_TEMPLATE = re.compile(r"\{\{.*?\}\}")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_./\-]*[A-Za-z0-9]|[A-Za-z]")


def _alerting_rules() -> list[dict[str, Any]]:
    found = []
    for path in sorted(RULES.glob("*.rules.yml")):
        for group in yaml.safe_load(path.read_text(encoding="utf-8"))["groups"]:
            found += [rule for rule in group["rules"] if "alert" in rule]
    return found


def test_every_shipped_alert_says_its_summary_and_description_in_chinese() -> None:
    rules = _alerting_rules()
    assert len(rules) >= 28
    for rule in rules:
        notes = rule["annotations"]
        for name in ("summary", "description"):
            chinese = notes.get(f"{name}_zh_CN", "")
            assert re.search(r"[\u4e00-\u9fff]", chinese), (rule["alert"], name)
            words = [w for w in _WORD.findall(_TEMPLATE.sub(" ", chinese)) if w not in _NAMES]
            assert words == [], (rule["alert"], name, words)
            # the same values as the English one: a template the English has is kept
            assert set(re.findall(r"\$labels\.\w+|\$value", notes[name])) == set(
                re.findall(r"\$labels\.\w+|\$value", chinese)
            ), (rule["alert"], name)


@pytest.mark.parametrize(
    ("channel", "fmt"), [("dingtalk", "md"), ("wecom", "md"), ("email", "html"), ("feishu", "txt")]
)
def test_a_chinese_receiver_reads_the_chinese_annotations(templates: Templates, channel: str, fmt: str) -> None:
    item = node_item(alertname="GPUFallenOffBus", units=("1",), labels={"xid": "79"}, annotations=NOTES)
    n = notification(MessageKind.FIRING, [item])
    chinese = templates.render(channel, fmt, dataclasses.replace(n, locale=ZH))
    assert NOTES["summary_zh_CN"] in chinese
    assert "fallen off the bus (XID 79)" not in chinese
    assert "Drain the node" not in chinese
    english = templates.render(channel, fmt, n)
    assert NOTES["summary"] in english
    assert "总线" not in english.split("XID 79")[0]


def test_the_sms_text_and_its_summary_variable_are_chinese_for_a_chinese_receiver(templates: Templates) -> None:
    item = node_item(alertname="GPUFallenOffBus", units=("1",), labels={"xid": "79"}, annotations=NOTES)
    n = dataclasses.replace(notification(MessageKind.FIRING, [item]), locale=ZH)
    assert sms_params(n, {"s": "summary"}, 60) == {"s": NOTES["summary_zh_CN"]}
    assert "fallen off the bus (XID 79)" not in sms_text(templates, n)
    english = dataclasses.replace(n, locale=Locale("en", "UTC"))
    assert sms_params(english, {"s": "summary"}, 60) == {"s": NOTES["summary"]}


def test_an_alert_without_a_variant_shows_its_plain_annotation() -> None:
    plain = {"summary": "GPU 1 hot", "summary_zh_CN": "", "runbook_url": "https://wiki/x"}
    assert localized_annotations(plain, "zh-CN") == plain  # an empty variant is no variant
    assert localized_annotations(NOTES, "en")["summary"] == NOTES["summary"]
    assert localized_annotations(NOTES, "zh-CN")["description"] == NOTES["description_zh_CN"]


def test_a_stored_message_keeps_the_variants() -> None:
    """The delivery loop stores the annotations a message shows: the Chinese ones among them."""
    item = node_item(units=("1",))
    snapshot = MessageSnapshot.from_json(item)
    started = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
    enriched = enrich(snapshot, {"fp0": ({**NOTES, "internal": "x"}, started)})
    assert enriched.alerts[0].annotations == NOTES

"""SMS template variables from label values (issue 18): no link or markdown link a label brought, in a form
that stays GSM-7; the product's own link whole; and storm (cluster) incidents, whose summary counts units
rather than listing them, have variables at all."""

from __future__ import annotations

import dataclasses

import pytest

from alertrouter.channels.sms import gsm7_compatible, sms_params
from alertrouter.message.i18n import Locale
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.ruleset.channels import SMS_FIELDS
from support.channels import ITEM, notification

LINK = "http://alertrouter.example/incidents/12"
EVIL = "[x](http://evil.example/p) www.evil.example evil.example/login"


def with_values(**changes: object) -> dict[str, str]:
    item = {**ITEM, **changes}
    params = {f"v_{f}": f for f in SMS_FIELDS}
    return sms_params(
        dataclasses.replace(notification(), items=(MessageSnapshot.from_json(item),), link=LINK), params, 200
    )


@pytest.mark.parametrize(
    "changes",
    [
        {"headline": EVIL},
        {"labels": {"alertname": EVIL, "node": EVIL, "region": EVIL}},
        {"alerts": [{"fingerprint": "f", "labels": {}, "annotations": {"summary": EVIL}}]},
    ],  # `status` is no text of the sender's: MessageSnapshot reads it as firing or resolved
)
def test_variables_carry_no_link_from_labels(changes: dict[str, object]) -> None:
    got = with_values(**changes)
    assert got["v_link"] == LINK
    for name, value in got.items():
        if name == "v_link":
            continue
        assert "](" not in value, name
        assert "://" not in value, name
        assert "www." not in value, name
        assert "evil.example" not in value, name
        assert gsm7_compatible(value), name
    assert any("evil[.]example" in v for v in got.values()), "still readable, in the usual defanged form"


def test_storm_incident_has_variables() -> None:
    """A cluster snapshot's `summary.units` is a count (211), not a list of indexes."""
    head = "GPUHighTemp on 37 nodes"
    got = with_values(kind="cluster", headline=head, summary={"headline": head, "nodes": 37, "units": 211})
    assert got["v_gpus"] == "211"
    assert got["v_headline"] == "GPUHighTemp on 37 nodes"


def test_chinese_variables_are_worded_in_the_receivers_language_and_cut_in_characters() -> None:
    item = {**ITEM, "summary": {**ITEM["summary"], "where": "gpu-node-07", "alertname": "GPUHighTemp"}}
    n = dataclasses.replace(
        notification(), items=(MessageSnapshot.from_json(item),), link=LINK, locale=Locale("zh-CN", "Asia/Shanghai")
    )
    params = sms_params(n, {"h": "headline", "s": "since", "g": "gpus"}, 20)
    assert params["s"] == "18:00"  # opened 10:00 UTC: the receiver's local time, as its templates say
    assert params["g"] == "2/8"
    # "gpu-node-07：2/8 块 GPU GPUHighTemp" is 30 characters (42 bytes): fitted to 20 characters, not bytes,
    # the alert name whole (the node shortened, the count dropped; test_long_node.py)
    assert params["h"] == "gpu-no..：GPUHighTemp"
    assert len(params["h"]) == 20
    english = sms_params(dataclasses.replace(n, locale=None), {"h": "headline", "s": "since"}, 40)
    assert english == {"h": "gpu-node-07: GPUHighTemp on 2/8 GPUs", "s": "10:00"}


def test_xid_and_workload_variables_from_dcgm_exporter_labels() -> None:
    """The lowest XID of the firing alerts with NVIDIA's first action, and the workload on the GPU."""
    gpu = {"alertname": "GPUXidError", "gpu": "3", "Hostname": "gpu-node-07", "UUID": "GPU-5e0d6f0a"}
    alerts = [
        {"fingerprint": "a", "labels": {**gpu, "xid": "94", "err_code": "94"}, "firing": True},
        {
            "fingerprint": "b",
            "labels": {**gpu, "gpu": "5", "err_code": "79", "exported_namespace": "ml", "exported_pod": "train-0"},
            "firing": True,
        },
        {"fingerprint": "c", "labels": {**gpu, "gpu": "6", "xid": "13"}, "firing": False},  # resolved already
    ]
    item = {**ITEM, "alerts": alerts}
    n = dataclasses.replace(notification(), items=(MessageSnapshot.from_json(item),), link=LINK)
    assert sms_params(n, {"x": "xid", "w": "workload"}, 40) == {"x": "XID 79: reboot the node", "w": "ml/train-0"}
    zh = dataclasses.replace(n, locale=Locale("zh-CN", "Asia/Shanghai"))
    assert sms_params(zh, {"x": "xid"}, 40) == {"x": "XID 79：重启节点"}
    plain = dataclasses.replace(notification(), items=(MessageSnapshot.from_json(ITEM),), link=LINK)
    assert sms_params(plain, {"x": "xid", "w": "workload"}, 40) == {"x": "-", "w": "-"}


@pytest.mark.parametrize(
    ("severity", "resolved", "zh", "en"),
    [
        ("critical", False, "严重", "critical"),  # msgstr of "critical", as DingTalk and WeCom say it (严重)
        ("warning", False, "警告", "warning"),
        ("info", False, "提示", "info"),
        ("critical", True, "已恢复", "resolved"),  # a resolved message: msgstr of "resolved"
        ("P1", False, "P1", "P1"),  # a severity the product does not know is data: as written
    ],
)
def test_the_severity_variable_is_the_word_of_the_receivers_language(
    severity: str, resolved: bool, zh: str, en: str
) -> None:
    item = MessageSnapshot.from_json({**ITEM, "status": "resolved" if resolved else "firing"})
    n = dataclasses.replace(notification(), severity=severity, items=(item,))
    assert sms_params(n, {"s": "severity"}, 20) == {"s": en}
    chinese = dataclasses.replace(n, locale=Locale("zh-CN", "Asia/Shanghai"))
    assert sms_params(chinese, {"s": "severity"}, 20) == {"s": zh}
    assert sms_params(chinese, {"s": "severity"}, 2) == {"s": zh[:2]}  # param_max_length: cut in characters


@pytest.mark.parametrize(("status", "zh"), [("firing", "触发中"), ("resolved", "已恢复")])
def test_the_status_variable_is_the_word_of_the_receivers_language(status: str, zh: str) -> None:
    n = dataclasses.replace(notification(), items=(MessageSnapshot.from_json({**ITEM, "status": status}),))
    assert sms_params(n, {"s": "status"}, 20) == {"s": status}
    chinese = dataclasses.replace(n, locale=Locale("zh-CN", "Asia/Shanghai"))
    assert sms_params(chinese, {"s": "status"}, 20) == {"s": zh}


def test_the_rma_variable_names_the_first_candidate_gpu() -> None:
    """`rma`: what the message says of its first GPU the rma: rules make a candidate, fitted like the rest."""
    note = {"uuid": "GPU-5e0d6f0a", "slot": "3", "rule": "dbe-repeated", "count": 2, "xids": [48]}
    note |= {"first": "2026-11-10T08:00:00Z", "last": "2026-11-21T09:00:00Z"}
    item = {**ITEM, "rma": [note]}
    n = dataclasses.replace(notification(), items=(MessageSnapshot.from_json(item),), link=LINK)
    assert sms_params(n, {"r": "rma"}, 70) == {"r": "RMA candidate: GPU 3 (GPU-5e0d6f0a): Xid 48 twice in 11 days"}
    zh = dataclasses.replace(n, locale=Locale("zh-CN", "Asia/Shanghai"))
    assert sms_params(zh, {"r": "rma"}, 70) == {"r": "RMA 候选：GPU 3（GPU-5e0d6f0a）：11 天内 Xid 48 共 2 次"}
    plain = dataclasses.replace(notification(), items=(MessageSnapshot.from_json(ITEM),), link=LINK)
    assert sms_params(plain, {"r": "rma"}, 70) == {"r": "-"}

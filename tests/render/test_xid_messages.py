"""Every message about a GPU alert with an XID says what the XID means and what NVIDIA says to do first,
and names the workload that was on the GPU; in the receiver's language, within each channel's size.

The alerts carry the labels a Kubernetes fleet sends: dcgm-exporter 4.x series of DCGM_FI_DEV_XID_ERRORS
(`err_code`, `err_msg`, `exported_*` from the pod mapping, the operator's `pod`/`namespace` of the exporter
itself) plus what the shipped rules add (`severity`, `xid`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from alertrouter.channels.base import MessageKind, Notification, utf8_len
from alertrouter.channels.sms import TEXT_LIMIT_BYTES, sms_text
from alertrouter.message.i18n import Locale
from alertrouter.render.templates import Templates

from .conftest import AT, OPENED, notification

FALLEN = "XID 79 on GPU 1, 3: GPU has fallen off the bus — action: reboot the node"
DBE = (
    "XID 48 on GPU 5: Double Bit ECC Error — action: reset the GPU to remap its memory; RMA if the remap fails"
    " (XID 64) or it repeats"
)
FORMATS = [
    ("dingtalk", "md"),
    ("wecom", "md"),
    ("wecom", "txt"),
    ("feishu", "txt"),
    ("email", "txt"),
    ("email", "html"),
    ("sms", "txt"),
]


def dcgm_xid(gpu: int, code: int, *, alertname: str = "GPUXidError", pod: str = "") -> dict[str, str]:
    labels = {
        "alertname": alertname,
        "DCGM_FI_DRIVER_VERSION": "550.90.07",
        "Hostname": "gpu-node-07",
        "UUID": f"GPU-3f1c7a52-9b0e-4d7e-8a61-0c5e{gpu:08x}",
        "container": "nvidia-dcgm-exporter",
        "device": f"nvidia{gpu}",
        "endpoint": "gpu-metrics",
        "err_code": str(code),
        "err_msg": {79: "GPU has fallen off the bus", 48: "Double Bit ECC Error"}.get(code, "Unknown Error"),
        "gpu": str(gpu),
        "instance": "10.233.64.17:9400",
        "job": "nvidia-dcgm-exporter",
        "modelName": "NVIDIA H100 80GB HBM3",
        "namespace": "gpu-operator",
        "pci_bus_id": f"00000000:{0x18 + gpu:02X}:00.0",
        "pod": "nvidia-dcgm-exporter-7xk2p",
        "service": "nvidia-dcgm-exporter",
        "severity": "critical",
        "xid": str(code),
        "node": "gpu-node-07",
    }
    if pod:
        labels |= {"exported_container": "trainer", "exported_namespace": "ml-team", "exported_pod": pod}
    return labels


def xid_item(alerts: Sequence[dict[str, str]], *, status: str = "firing") -> dict[str, Any]:
    firing = status == "firing"
    units = [a["gpu"] for a in alerts]
    total = max(8, len(units))
    headline = f"gpu-node-07: GPUXidError on {len(units)}/{total} GPUs"
    return {
        "incident": "gpu-by-node/GPUXidError/gpu-node-07",
        "kind": "node",
        "reason": "first" if firing else "resolved",
        "status": status,
        "severity": "critical",
        "headline": headline,
        "labels": {"alertname": "GPUXidError", "node": "gpu-node-07", "severity": "critical"},
        "summary": {
            "headline": headline,
            "units": units,
            "units_total": total,
            "unit_name": "GPUs",
            "alerts": len(alerts),
            "firing": len(alerts) if firing else 0,
        },
        "alerts": [
            {
                "fingerprint": f"fp{i}",
                "labels": labels,
                "firing": firing,
                "annotations": {"summary": f"GPU {labels['gpu']} on gpu-node-07: {labels['alertname']}"},
                "starts_at": OPENED,
            }
            for i, labels in enumerate(alerts)
        ],
        "opened_at": OPENED,
        "at": AT,
    }


NODE = xid_item(
    [
        dcgm_xid(1, 79, alertname="GPUFallenOffBus", pod="llama-70b-pretrain-0"),
        dcgm_xid(3, 79, alertname="GPUFallenOffBus", pod="llama-70b-pretrain-1"),
        dcgm_xid(5, 48, pod="llama-70b-pretrain-2"),
    ]
)


def zh(n: Notification) -> Notification:
    return Notification(
        kind=n.kind,
        receiver=n.receiver,
        severity=n.severity,
        items=n.items,
        link=n.link,
        locale=Locale("zh-CN", "Asia/Shanghai"),
    )


@pytest.fixture
def templates() -> Templates:
    from .conftest import TEMPLATES_DIR

    return Templates(builtin_dir=TEMPLATES_DIR)


@pytest.mark.parametrize(("channel", "fmt"), FORMATS)
def test_every_format_says_what_the_xid_means_and_what_to_do(templates: Templates, channel: str, fmt: str) -> None:
    text = templates.render(channel, fmt, notification(MessageKind.FIRING, [NODE]))
    if channel == "sms":  # one line: the first XID only, made GSM-7 by the SMS channel
        assert "XID 48 on GPU 5: Double Bit ECC Error" in text
        return
    plain = text.replace("\\", "").replace("&#39;", "'")  # markdown and HTML escapes
    assert FALLEN in plain
    assert DBE in plain
    assert "ml-team/llama-70b-pretrain-0, ml-team/llama-70b-pretrain-1, ml-team/llama-70b-pretrain-2" in plain
    assert plain.count("XID 79 on GPU") == 1  # one line per distinct XID, not one per GPU


def test_the_chinese_message_is_worded_from_the_catalogue_and_the_table(templates: Templates) -> None:
    text = templates.render("dingtalk", "md", zh(notification(MessageKind.FIRING, [NODE])))
    assert "XID 79（GPU 1, 3）：GPU 已从总线掉线 — 处理：重启节点" in text
    dbe = "XID 48（GPU 5）：双比特 ECC 错误 — 处理：重置 GPU 以重映射显存；"
    dbe += "若重映射失败（XID 64）或反复出现则申请 RMA 返修"
    assert dbe in text
    assert "工作负载：" in text
    assert "action" not in text
    assert "Workload" not in text


def test_err_code_alone_is_enough(templates: Templates) -> None:
    labels = dcgm_xid(2, 95)
    del labels["xid"]  # a rule of one's own on DCGM_FI_DEV_XID_ERRORS, no label templating
    text = templates.render("wecom", "txt", notification(MessageKind.FIRING, [xid_item([labels])]))
    assert "XID 95 on GPU 2: Uncontained ECC error — action: reset the GPU" in text
    assert "Workload" not in text  # no exported_pod: no workload line (the exporter's own pod is not one)


def test_an_unknown_xid_sends_to_nvidias_docs(templates: Templates) -> None:
    text = templates.render("feishu", "txt", notification(MessageKind.FIRING, [xid_item([dcgm_xid(0, 999)])]))
    assert "XID 999 on GPU 0: unknown XID: see NVIDIA docs" in text


@pytest.mark.parametrize("value", ["79.0", "garbage", "", "-3"])
def test_a_malformed_xid_label_never_breaks_a_message(templates: Templates, value: str) -> None:
    labels = dcgm_xid(4, 79) | {"xid": value, "err_code": value}
    text = templates.render("dingtalk", "md", notification(MessageKind.FIRING, [xid_item([labels])]))
    assert ("GPU has fallen off the bus" in text) == (value == "79.0")


def test_a_gpu_alert_without_xid_shows_no_xid_line(templates: Templates) -> None:
    labels = dcgm_xid(6, 79, alertname="GPUHighTemp")
    for name in ("xid", "err_code", "err_msg"):
        del labels[name]
    text = templates.render("dingtalk", "md", notification(MessageKind.FIRING, [xid_item([labels])]))
    assert "XID" not in text.replace("GPUXidError", "")


def test_a_resolved_message_lists_the_xids_that_resolved(templates: Templates) -> None:
    item = xid_item([dcgm_xid(1, 79, alertname="GPUFallenOffBus")], status="resolved")
    text = templates.render("email", "txt", notification(MessageKind.RESOLVED, [item]))
    assert "XID 79 on GPU 1: GPU has fallen off the bus — action: reboot the node" in text


def many_xids() -> dict[str, Any]:
    codes = [13, 31, 43, 45, 48, 63, 64, 74, 79, 92, 94, 95, 119, 120]
    return xid_item([dcgm_xid(g, code, pod=f"job-{g}") for g, code in enumerate(codes)])


def test_many_xids_on_one_node_are_listed_compactly(templates: Templates) -> None:
    text = templates.render("wecom", "txt", notification(MessageKind.FIRING, [many_xids()]))
    assert sum(line.startswith("XID ") for line in text.splitlines()) == 8  # MAX_XIDS lines
    assert "+6 more XIDs" in text
    assert "default/job" not in text
    assert "ml-team/job-0, ml-team/job-1, ml-team/job-10 +11" in text


@pytest.mark.parametrize(("channel", "fmt", "limit"), [("dingtalk", "md", 700), ("wecom", "md", 900)])
def test_a_message_cut_to_its_limit_keeps_the_first_xid(
    templates: Templates, channel: str, fmt: str, limit: int
) -> None:
    n = notification(MessageKind.FIRING, [many_xids()])
    text = templates.render(channel, fmt, n, limit_bytes=limit)
    assert utf8_len(text) <= limit
    assert "XID 13 on GPU 0: Graphics Engine Exception" in text


def test_the_sms_text_stays_within_three_segments_and_says_the_action(templates: Templates) -> None:
    text = sms_text(templates, notification(MessageKind.FIRING, [NODE]))
    assert utf8_len(text) <= TEXT_LIMIT_BYTES
    assert "action: reset the GPU to remap its memory" in text
    assert "—" not in text  # made GSM-7


RMA_NOTE = {"uuid": "GPU-3f1c7a52-9b0e-4d7e-8a61-0c5e00000005", "slot": "5", "rule": "dbe-repeated", "count": 2}
RMA_NOTE |= {"first": "2026-11-10T08:00:00+00:00", "last": "2026-11-21T09:30:00+00:00", "xids": [48]}


@pytest.mark.parametrize(("channel", "fmt"), FORMATS)
def test_every_format_says_a_gpu_is_an_rma_candidate_in_both_languages(
    templates: Templates, channel: str, fmt: str
) -> None:
    n = notification(MessageKind.FIRING, [NODE | {"rma": [RMA_NOTE]}])
    english = templates.render(channel, fmt, n).replace("\\", "")
    chinese = templates.render(channel, fmt, zh(n)).replace("\\", "")
    assert "RMA candidate: GPU 5 (GPU-3f1c7a52…): Xid 48 twice in 11 days" in english
    assert "RMA 候选：GPU 5（GPU-3f1c7a52…）：11 天内 Xid 48 共 2 次" in chinese
    assert "RMA candidate" not in templates.render(channel, fmt, notification(MessageKind.FIRING, [NODE]))

"""A node incident's GPU triage in its message, every channel and both languages: the root GPU, its Xid,
what it means and what to do, the consequences folded into it, and the verdict with its reason."""

from __future__ import annotations

from typing import Any

import pytest

from alertrouter.channels.base import MessageKind, Notification
from alertrouter.message.gpu_triage import FollowOnFacts, GpuTriageFacts, ReasonFacts
from alertrouter.message.i18n import Locale
from alertrouter.render.templates import Templates

from .conftest import TEMPLATES_DIR, notification
from .test_xid_messages import FORMATS, dcgm_xid, xid_item

FOLDED = GpuTriageFacts(79, "3", "GPU has fallen off the bus", "RESTART_BM", "reboot_node", (FollowOnFacts(45, 7, 7),))
ROOT_EN = "GPU 3: Xid 79 (GPU has fallen off the bus) — reboot the node; 7 other GPUs reported Xid 45 as a consequence"
ROOT_ZH = "GPU 3：Xid 79（GPU 已从总线掉线）— 重启节点；另有 7 块 GPU 随之报告 Xid 45（连带故障）"
APPLICATION = GpuTriageFacts(
    13,
    "0",
    "Graphics Engine Exception",
    "RESTART_APP",
    "restart_app",
    (),
    "APPLICATION",
    ReasonFacts("across_gpus", 13, 8, 2, 86400, 8, "ml/train"),
)
HARDWARE = GpuTriageFacts(
    48, "2", "", "WORKFLOW_XID_48", "memory_dbe", (), "HARDWARE", ReasonFacts("repeated_fatal", 48, 5, 5, 86400, 1)
)


def item(facts: GpuTriageFacts, gpu: int, code: int, alertname: str = "GPUXidError") -> dict[str, Any]:
    out = xid_item([dcgm_xid(gpu, code, alertname=alertname)])
    out["summary"] = out["summary"] | {"triage": facts.to_json()}
    return out


def render(channel: str, fmt: str, it: dict[str, Any], language: str) -> str:
    n = notification(MessageKind.FIRING, [it])
    if language != "en":
        n = Notification(n.kind, n.receiver, n.severity, n.items, n.link, locale=Locale(language, "Asia/Shanghai"))
    text = Templates(builtin_dir=TEMPLATES_DIR).render(channel, fmt, n)
    return text.replace("\\", "").replace("&#39;", "'").replace("&amp;", "&")


@pytest.mark.parametrize(("channel", "fmt"), FORMATS)
@pytest.mark.parametrize(("language", "words"), [("en", ROOT_EN), ("zh-CN", ROOT_ZH)])
def test_every_channel_says_the_root_and_its_follow_ons(channel: str, fmt: str, language: str, words: str) -> None:
    text = render(channel, fmt, item(FOLDED, 3, 79, "GPUFallenOffBus"), language)
    if channel == "sms":  # GSM-7 made later by the channel; the start of the line is enough
        assert words.split(";")[0].split("；")[0] in text
        return
    assert words in text


@pytest.mark.parametrize(
    ("facts", "gpu", "code", "language", "words"),
    [
        (APPLICATION, 0, 13, "en", "Xid 13 on 8 GPUs of workload ml/train: the application"),
        (APPLICATION, 0, 13, "zh-CN", "工作负载 ml/train 的 8 块 GPU 报告 Xid 13：应用程序问题"),
        (HARDWARE, 2, 48, "en", "the same Xid 48 5 times in 24 h on this GPU: hardware"),
        (HARDWARE, 2, 48, "zh-CN", "同一 GPU 在 24 小时内 5 次报告 Xid 48：硬件故障"),
    ],
)
def test_the_verdict_says_why(facts: GpuTriageFacts, gpu: int, code: int, language: str, words: str) -> None:
    for channel, fmt in (("dingtalk", "md"), ("email", "html"), ("wecom", "md")):
        assert words in render(channel, fmt, item(facts, gpu, code), language)


def test_a_message_without_triage_says_no_triage_line() -> None:
    text = render("dingtalk", "md", xid_item([dcgm_xid(3, 79, alertname="GPUFallenOffBus")]), "en")
    assert "as a consequence" not in text
    assert "GPU 3: Xid 79" not in text

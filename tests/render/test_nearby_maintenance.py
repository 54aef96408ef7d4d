"""A node incident's neighbours in maintenance (`message.facts.Nearby`) in every channel's message, in
both languages; none once it resolved, and a stored summary without them reads as before."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from alertrouter.channels.base import MessageKind, Notification
from alertrouter.message.facts import Nearby, NodeFacts
from alertrouter.message.i18n import Locale
from alertrouter.render.templates import Templates

from .conftest import TEMPLATES_DIR, notification
from .test_xid_messages import FORMATS, dcgm_xid, xid_item

NEARBY = (Nearby("gpu-node-07", "RMA 4711", datetime(2026, 12, 9, 6, 0, tzinfo=UTC)), Nearby("gpu-node-09", "cordoned"))
SAYS = {
    "en": "In maintenance in its rack: gpu-node-07 (RMA 4711, until 12-09 14:00 CST); gpu-node-09 (cordoned)",
    "zh-CN": "同机架维护中：gpu-node-07 (RMA 4711, 至 12-09 14:00 CST); gpu-node-09 (cordoned)",
}


def item(status: str = "firing") -> dict[str, Any]:
    out = xid_item([dcgm_xid(3, 79, alertname="GPUFallenOffBus")], status=status)
    out["summary"] = out["summary"] | {"nearby_maintenance": [n.to_json() for n in NEARBY]}
    return out


def render(channel: str, fmt: str, it: dict[str, Any], language: str, kind: MessageKind = MessageKind.FIRING) -> str:
    n = notification(kind, [it])
    n = Notification(n.kind, n.receiver, n.severity, n.items, n.link, locale=Locale(language, "Asia/Shanghai"))
    text = Templates(builtin_dir=TEMPLATES_DIR).render(channel, fmt, n)
    return text.replace("\\", "").replace("&#39;", "'").replace("&amp;", "&")


def test_the_facts_keep_them() -> None:
    facts = NodeFacts.from_json(item()["summary"])
    assert facts.nearby == NEARBY
    assert NodeFacts.from_json(facts.to_json()) == facts
    assert "nearby_maintenance" not in NodeFacts(headline="h").to_json()


@pytest.mark.parametrize(("channel", "fmt"), [f for f in FORMATS if f[0] != "sms"])
@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_every_channel_names_them(channel: str, fmt: str, language: str) -> None:
    assert SAYS[language] in render(channel, fmt, item(), language)


@pytest.mark.parametrize(("channel", "fmt"), [f for f in FORMATS if f[0] != "sms"])
def test_not_once_resolved(channel: str, fmt: str) -> None:
    assert "gpu-node-09" not in render(channel, fmt, item("resolved"), "en", MessageKind.RESOLVED)

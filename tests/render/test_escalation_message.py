"""An escalation step's message says so, in both languages, on every channel: 'not acknowledged for
20m, step 2 of 3' (the step's note the engine writes into the snapshot's summary)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from alertrouter.channels.base import Mentions, MessageKind, Notification
from alertrouter.message.i18n import Locale
from alertrouter.render.templates import Templates

from .conftest import node_item, notification

NOTE = {
    "policy": "critical-unacked",
    "step": 2,
    "steps": 3,
    "after": "20m",
    "after_seconds": 1200,
    "receivers": ["lead"],
}


def escalated(locale: Locale) -> Notification:
    item = node_item(alertname="NodeDown", units=())
    item["reason"] = "escalated"
    item["summary"] = {**item["summary"], "escalation": NOTE}
    n = notification(MessageKind.UPDATE, [item])
    return replace(n, locale=locale, mentions=Mentions(mobiles=("13800000002",)))


@pytest.mark.parametrize(
    ("channel", "fmt", "language", "expected"),
    [
        ("dingtalk", "md", "en", "escalated: not acknowledged for 20m, step 2 of 3"),
        ("dingtalk", "md", "zh-CN", "已升级：20 分钟内无人确认，第 2/3 级"),
        ("wecom", "md", "zh-CN", "已升级：20 分钟内无人确认，第 2/3 级"),
        ("sms", "txt", "en", "escalated: not acknowledged for 20m, step 2 of 3"),
        ("sms", "txt", "zh-CN", "第 2/3 级"),
        ("email", "txt", "en", "step 2 of 3"),
    ],
)
def test_the_step_is_worded(templates: Templates, channel: str, fmt: str, language: str, expected: str) -> None:
    out = templates.render(channel, fmt, escalated(Locale(language, "Asia/Shanghai")))
    assert expected in out, out


def test_the_on_call_person_is_pinged_in_dingtalk(templates: Templates) -> None:
    out = templates.render("dingtalk", "md", escalated(Locale("en", "UTC")))
    assert "@13800000002" in out

""" "Since" and "lasted" in a message: from the alerts' own times the snapshot carries, or, for a row
stored before it carried them, from when alertrouter opened the incident and decided to tell."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from alertrouter.channels.base import MessageKind, Notification
from alertrouter.message.i18n import Locale
from alertrouter.render.templates import Templates

SHANGHAI = Locale("en", "Asia/Shanghai")


def _render(templates: Templates, n: Notification, locale: Locale = SHANGHAI) -> str:
    return templates.render("dingtalk", "md", replace(n, locale=locale))


def test_an_old_row_is_told_from_its_opening_and_its_decision(
    templates: Templates, make_node: Callable[..., dict[str, Any]], make_notification: Callable[..., Notification]
) -> None:
    old = make_node(status="resolved")  # opened_at 10:00, at 10:05 UTC, no started_at or ended_at
    assert "started_at" not in old
    assert "ended_at" not in old
    out = _render(templates, make_notification(MessageKind.RESOLVED, [old]))
    assert "- **Lasted:** 5m (since 18:00 CST)" in out


def test_the_alerts_own_times_are_told(
    templates: Templates, make_node: Callable[..., dict[str, Any]], make_notification: Callable[..., Notification]
) -> None:
    firing = {**make_node(), "started_at": "2026-11-21T09:49:00+00:00"}
    out = _render(templates, make_notification(MessageKind.FIRING, [firing]))
    assert "- **Since:** 17:49 CST (16m ago)" in out  # at 10:05 UTC
    resolved = {
        **make_node(status="resolved"),
        "started_at": "2026-11-21T09:49:00+00:00",
        "ended_at": "2026-11-21T10:01:00+00:00",
    }
    n = make_notification(MessageKind.RESOLVED, [resolved])
    assert "- **Lasted:** 12m (since 17:49 CST)" in _render(templates, n)
    assert "- **持续：** 12 分钟（17:49 CST 开始）" in _render(templates, n, Locale("zh-CN", "Asia/Shanghai"))
    sms = templates.render("sms", "txt", replace(n, locale=SHANGHAI))
    assert sms.startswith("[RESOLVED] gpu-node-07: GPUHighTemp on 6/8 GPUs")
    assert ", lasted 12m" in sms

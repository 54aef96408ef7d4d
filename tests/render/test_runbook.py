"""What to do: a message about one firing incident links its alerts' runbook (`runbook_url`), when that is on
a host the rules trust (`global.runbook_hosts`): annotations come from whoever fires alerts."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from alertrouter.channels.base import MessageKind, runbook_link
from alertrouter.message.i18n import Locale
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.render.templates import Templates

from .conftest import TEMPLATES_DIR, node_item, notification

WIKI = "https://wiki.example.com/runbooks/gpu-high-temp#cooling"


def snapshot(*urls: str, firing: bool = True) -> MessageSnapshot:
    item: dict[str, Any] = node_item(units=[str(i) for i in range(len(urls))] or ["0"])
    for alert, url in zip(item["alerts"], urls, strict=False):
        alert["annotations"]["runbook_url"] = url
        alert["firing"] = firing
    return MessageSnapshot.from_json(item)


@pytest.mark.parametrize(
    ("urls", "hosts", "expected"),
    [
        ((WIKI,), ["wiki.example.com"], WIKI),
        ((WIKI,), ["WIKI.example.com"], WIKI),
        ((WIKI,), [], None),  # nothing trusted: no runbook link
        (("https://evil.example/runbook",), ["wiki.example.com"], None),
        (("https://wiki.example.com.evil.example/x",), ["wiki.example.com"], None),
        (("https://wiki.example.com@evil.example/x",), ["wiki.example.com"], None),
        (("https://user@wiki.example.com/x",), ["wiki.example.com"], None),
        (("javascript:alert(1)//wiki.example.com",), ["wiki.example.com"], None),
        (("https://evil.example/x", WIKI), ["wiki.example.com"], WIKI),  # the first trusted one
    ],
)
def test_only_a_trusted_hosts_runbook_is_a_link(urls: tuple[str, ...], hosts: list[str], expected: str | None) -> None:
    assert runbook_link([snapshot(*urls)], hosts) == expected


def test_a_coalesced_message_has_no_runbook() -> None:
    assert runbook_link([snapshot(WIKI), snapshot(WIKI)], ["wiki.example.com"]) is None


@pytest.mark.parametrize(
    ("channel", "fmt", "language", "line"),
    [
        ("dingtalk", "md", "zh-CN", f"[处理手册]({WIKI})"),
        ("wecom", "md", "en", f"[Runbook]({WIKI})"),
        ("feishu", "txt", "zh-CN", f"处理手册: {WIKI}"),
        ("email", "txt", "en", f"Runbook: {WIKI}"),
    ],
)
def test_the_runbook_is_shown_before_the_actions(channel: str, fmt: str, language: str, line: str) -> None:
    n = replace(
        notification(MessageKind.FIRING, [node_item()]), runbook_link=WIKI, locale=Locale(language, "Asia/Shanghai")
    )
    lines = Templates(builtin_dir=TEMPLATES_DIR).render(channel, fmt, n).splitlines()
    assert line in lines


def test_the_email_has_a_runbook_button() -> None:
    n = replace(notification(MessageKind.FIRING, [node_item()]), runbook_link=WIKI)
    out = Templates(builtin_dir=TEMPLATES_DIR).render("email", "html", n)
    assert f'<a href="{WIKI}"' in out
    assert ">Runbook</a>" in out


def test_a_message_cut_to_its_limit_keeps_the_runbook() -> None:
    item = node_item(units=[str(i) for i in range(400)], total=400, summaries=["温度过高 " * 30] * 400)
    n = replace(notification(MessageKind.FIRING, [item]), runbook_link=WIKI, locale=Locale("zh-CN", "Asia/Shanghai"))
    out = Templates(builtin_dir=TEMPLATES_DIR).render("wecom", "md", n, limit_bytes=4096)
    assert len(out.encode()) <= 4096
    assert f"[处理手册]({WIKI})" in out
    assert "另有" in out  # "+N more alerts", in Chinese

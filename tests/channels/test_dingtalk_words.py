"""A DingTalk send asks for its words once: the receiver's language is looked up once per notification, and
the items are worded once, not again for the title, for each size tried, and for the card's buttons."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest

from alertrouter.channels.dingtalk import DingTalkChannel
from alertrouter.message import i18n, words
from alertrouter.message.i18n import Locale
from alertrouter.render import context, templates
from alertrouter.render.samples import sample_notifications
from alertrouter.render.templates import Templates
from alertrouter.ruleset.channels import DingTalkChannelConfig
from support.fakes.dingtalk import FakeDingTalk

TOKEN = "dt-token-words"


@pytest.fixture
def robot() -> Iterator[FakeDingTalk]:
    fake = FakeDingTalk({TOKEN: None})
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


def counting(calls: Counter[str], name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        return fn(*args, **kwargs)

    return counted


@pytest.mark.parametrize("kind", ["firing", "cluster", "coalesced"])
async def test_a_dingtalk_send_asks_for_its_words_once(
    robot: FakeDingTalk, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: Counter[str] = Counter()
    # Every module's name for the lookups, those imported since too: a lookup added anywhere is counted.
    lookups = {"words_for": words.words_for, "translations": i18n.translations}
    for module in [m for name, m in sys.modules.items() if name.startswith("alertrouter.")]:
        for name, lookup in lookups.items():
            for attribute, value in list(vars(module).items()):
                if value is lookup:
                    monkeypatch.setattr(module, attribute, counting(calls, name, lookup))
    monkeypatch.setattr(templates, "build_item", counting(calls, "build_item", context.build_item))
    config = DingTalkChannelConfig.model_validate(
        {"name": "gpu-oncall", "type": "dingtalk", "url": f"{robot.url}/robot/send", "access_token": TOKEN}
        | {"msgtype": "actionCard"}
    )
    zh = Locale("zh-CN", "Asia/Shanghai")
    async with httpx.AsyncClient(trust_env=False) as client:
        channel = DingTalkChannel(config, client=client, renderer=Templates())
        await channel.send(replace(sample_notifications()[kind], locale=zh))  # the renderer's set-up, once
        notification = replace(sample_notifications()[kind], locale=zh)  # a new delivery: nothing of it kept
        calls.clear()
        await channel.send(notification)
    sent = robot.messages(TOKEN)[-1]
    assert "严重" in (sent.get("actionCard") or sent["markdown"])["title"]  # worded in the receiver's language
    assert calls == Counter(words_for=1, build_item=len(notification.items))

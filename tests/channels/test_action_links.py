"""Acknowledge/silence links through the real templates and each chat channel's fake vendor: where the
links go (DingTalk buttons or markdown links, WeCom markdown links or URL lines, Feishu and email), that
they survive size fitting, and that what arrives still verifies."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import httpx
import pytest

from alertrouter.auth.links import ACTION_PATH, LINK_PURPOSE, Action, action_link, read_action
from alertrouter.auth.signing import Signer
from alertrouter.channels.base import Mentions, MessageKind, Notification
from alertrouter.channels.dingtalk import ACK_TITLE, BUTTON_TITLE, MAX_BODY_BYTES, DingTalkChannel
from alertrouter.channels.email import EmailChannel
from alertrouter.channels.feishu import FeishuChannel
from alertrouter.channels.wecom import MARKDOWN_MAX_BYTES, TEXT_MAX_BYTES, WeComChannel
from alertrouter.message.i18n import Locale
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.render.templates import Templates
from alertrouter.ruleset.channels import (
    DingTalkChannelConfig,
    EmailChannelConfig,
    FeishuChannelConfig,
    WeComChannelConfig,
)
from support.channels import ITEM, notification
from support.fakes.dingtalk import FakeDingTalk
from support.fakes.feishu import HOOK_PATH, FakeFeishu
from support.fakes.smtp import FakeSmtp
from support.fakes.wecom import FakeWeCom

TEMPLATES = Templates(builtin_dir=Path(__file__).resolve().parents[2] / "templates")
SIGNER = Signer("channel-links-test-key-77", LINK_PURPOSE)
NOW = datetime(2026, 11, 21, 10, 0, 30, tzinfo=UTC)
BASE = "https://alertrouter.example.org"
INCIDENT = 12
DT_TOKEN, DT_KEYWORD_TOKEN, KEYWORD = "dt-links-token", "dt-links-keyword-token", "GPU告警"
WECOM_KEY = "wecom-links-key-5c1e"
HOOK = "feishu-links-hook-9a"
MOBILE = "13800000000"


def linked(**changes: Any) -> Notification:
    """The sample firing notification with fresh acknowledge/silence links, pinging nobody."""
    ack = action_link(SIGNER, BASE, Action.ACK, INCIDENT, now=NOW, ttl=timedelta(hours=24))
    silence = action_link(SIGNER, BASE, Action.SILENCE, INCIDENT, now=NOW, ttl=timedelta(hours=24))
    base = notification(
        link=f"{BASE}/incidents/{INCIDENT}", ack_link=ack, silence_link=silence, silence_for=timedelta(hours=1)
    )
    return dataclasses.replace(base, **changes)


def huge(**changes: Any) -> Notification:
    """`linked()` about a node with 2,000 alerts, each with a long CJK summary: far over every limit."""
    alerts = [
        {"labels": {"alertname": "GPUHighTemp", "gpu": str(i)}, "annotations": {"summary": f"温度过高 {i} " * 20}}
        for i in range(2000)
    ]
    item = {**ITEM, "alerts": alerts, "summary": {**ITEM["summary"], "alerts": 2000, "firing": 2000}}
    return linked(items=(MessageSnapshot.from_json(item),), **changes)


def assert_verifies(url: str, action: Action) -> None:
    assert url.startswith(f"{BASE}{ACTION_PATH}")
    token = read_action(SIGNER, url.removeprefix(f"{BASE}{ACTION_PATH}"), now=NOW)
    assert (token.action, token.incident_id) == (action, INCIDENT)


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(trust_env=False) as c:
        yield c


# -- DingTalk -------------------------------------------------------------------------------------


@pytest.fixture
def dingtalk() -> Iterator[FakeDingTalk]:
    fake = FakeDingTalk({DT_TOKEN: None, DT_KEYWORD_TOKEN: None}, keywords={DT_KEYWORD_TOKEN: KEYWORD})
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


def dingtalk_channel(robot: FakeDingTalk, client: httpx.AsyncClient, **extra: Any) -> DingTalkChannel:
    data = {"name": "core", "type": "dingtalk", "url": f"{robot.url}/robot/send", "access_token": DT_TOKEN}
    return DingTalkChannel(DingTalkChannelConfig.model_validate(data | extra), client=client, renderer=TEMPLATES)


async def test_dingtalk_action_card_has_acknowledge_silence_and_details_buttons(
    dingtalk: FakeDingTalk, client: httpx.AsyncClient
) -> None:
    n = linked()
    await dingtalk_channel(dingtalk, client, msgtype="actionCard").send(n)

    (body,) = dingtalk.messages(DT_TOKEN)  # the fake checked each button's title and http(s) URL
    assert body["msgtype"] == "actionCard"
    card = body["actionCard"]
    assert [b["title"] for b in card["btns"]] == [ACK_TITLE, "Silence 1h", BUTTON_TITLE]
    ack, silence, details = (b["actionURL"] for b in card["btns"])
    assert_verifies(ack, Action.ACK)
    assert_verifies(silence, Action.SILENCE)
    assert details == n.link
    assert card["btnOrientation"] in ("0", "1")
    assert n.first.headline in card["text"]
    assert ACTION_PATH not in card["text"]  # the buttons carry them; the text does not repeat them


async def test_the_silence_button_says_its_duration_in_the_readers_language(
    dingtalk: FakeDingTalk, client: httpx.AsyncClient
) -> None:
    """`静默 1 小时`, not the config's `1h`: the unit is a word of the product like the verb."""
    chinese = Locale("zh-CN", "Asia/Shanghai")
    await dingtalk_channel(dingtalk, client, msgtype="actionCard").send(linked(locale=chinese))
    await dingtalk_channel(dingtalk, client).send(linked(locale=chinese, silence_for=timedelta(days=1)))
    card, markdown = dingtalk.messages(DT_TOKEN)
    assert [b["title"] for b in card["actionCard"]["btns"]][1] == "静默 1 小时"
    assert "[静默 1 天](" in markdown["markdown"]["text"]
    shown = re.sub(r"\]\([^)]*\)", "]", card["actionCard"]["text"] + markdown["markdown"]["text"])
    assert "1h" not in shown  # the links' targets left out: their signed tokens are random text


async def test_dingtalk_that_must_ping_stays_markdown_with_the_links_in_the_text(
    dingtalk: FakeDingTalk, client: httpx.AsyncClient
) -> None:
    n = linked(mentions=Mentions(mobiles=(MOBILE,)))
    await dingtalk_channel(dingtalk, client, msgtype="actionCard").send(n)

    (body,) = dingtalk.messages(DT_TOKEN)
    assert body["msgtype"] == "markdown"
    text = body["markdown"]["text"]
    assert f"[Acknowledge]({n.ack_link})" in text
    assert f"[Silence 1h]({n.silence_link})" in text
    (ping,) = dingtalk.pings
    assert ping.mobiles == (MOBILE,)


async def test_dingtalk_markdown_robot_gets_markdown_links(dingtalk: FakeDingTalk, client: httpx.AsyncClient) -> None:
    n = linked()
    await dingtalk_channel(dingtalk, client).send(n)

    (body,) = dingtalk.messages(DT_TOKEN)
    assert body["msgtype"] == "markdown"
    assert f"]({n.ack_link})" in body["markdown"]["text"]
    assert f"]({n.silence_link})" in body["markdown"]["text"]


@pytest.mark.parametrize("msgtype", ["markdown", "actionCard"])
async def test_dingtalk_keyword_robot_still_accepts_messages_with_links(
    dingtalk: FakeDingTalk, client: httpx.AsyncClient, msgtype: str
) -> None:
    channel = dingtalk_channel(dingtalk, client, access_token=DT_KEYWORD_TOKEN, keyword=KEYWORD, msgtype=msgtype)

    await channel.send(linked())

    (body,) = dingtalk.messages(DT_KEYWORD_TOKEN)
    assert body["msgtype"] == msgtype
    assert KEYWORD in body[msgtype]["text"]


@pytest.mark.parametrize(
    ("msgtype", "mentions"), [("actionCard", Mentions()), ("markdown", Mentions(user_ids=("u1",)))]
)
async def test_dingtalk_huge_incident_is_cut_but_keeps_its_links(
    dingtalk: FakeDingTalk, client: httpx.AsyncClient, msgtype: str, mentions: Mentions
) -> None:
    n = huge(mentions=mentions)
    await dingtalk_channel(dingtalk, client, msgtype=msgtype).send(n)

    (request,) = dingtalk.accepted
    assert len(request.body) <= MAX_BODY_BYTES
    body = request.json()
    text = body[msgtype]["text"]
    assert "more alerts" in text
    if msgtype == "actionCard":
        assert [b["actionURL"] for b in body["actionCard"]["btns"]] == [n.ack_link, n.silence_link, n.link]
    else:
        assert f"]({n.ack_link})" in text
        assert f"]({n.silence_link})" in text


async def test_dingtalk_resolved_message_has_only_the_details_button(
    dingtalk: FakeDingTalk, client: httpx.AsyncClient
) -> None:
    n = notification(kind=MessageKind.RESOLVED)
    await dingtalk_channel(dingtalk, client, msgtype="actionCard").send(n)

    (body,) = dingtalk.messages(DT_TOKEN)
    assert body["actionCard"]["btns"] == [{"title": BUTTON_TITLE, "actionURL": n.link}]


# -- WeCom ----------------------------------------------------------------------------------------


@pytest.fixture
def wecom() -> Iterator[FakeWeCom]:
    fake = FakeWeCom({WECOM_KEY})
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


def wecom_channel(robot: FakeWeCom, client: httpx.AsyncClient, **extra: Any) -> WeComChannel:
    data = {"name": "core", "type": "wecom", "url": f"{robot.url}/cgi-bin/webhook/send", "key": WECOM_KEY}
    return WeComChannel(WeComChannelConfig.model_validate(data | extra), client=client, renderer=TEMPLATES)


async def test_wecom_markdown_carries_the_links(wecom: FakeWeCom, client: httpx.AsyncClient) -> None:
    n = linked(mentions=Mentions(user_ids=("zhangwei",)))
    await wecom_channel(wecom, client).send(n)

    (body,) = wecom.messages(WECOM_KEY)
    content = body["markdown"]["content"]
    assert f"[Acknowledge]({n.ack_link})" in content
    assert f"[Silence 1h]({n.silence_link})" in content
    assert "<@zhangwei>" in content


@pytest.mark.parametrize(
    ("mentions", "msgtype", "limit"),
    [(Mentions(), "markdown", MARKDOWN_MAX_BYTES), (Mentions(mobiles=(MOBILE,)), "text", TEXT_MAX_BYTES)],
)
async def test_wecom_huge_incident_fits_and_keeps_its_links(
    wecom: FakeWeCom, client: httpx.AsyncClient, mentions: Mentions, msgtype: str, limit: int
) -> None:
    n = huge(mentions=mentions)
    await wecom_channel(wecom, client).send(n)

    (body,) = wecom.messages(WECOM_KEY)
    assert body["msgtype"] == msgtype
    content = body[msgtype]["content"]
    assert len(content.encode()) <= limit
    assert "more alerts" in content
    assert n.ack_link
    assert n.silence_link
    if msgtype == "markdown":
        assert f"]({n.ack_link})" in content
        assert f"]({n.silence_link})" in content
    else:  # plain URL lines
        lines = content.splitlines()
        assert f"Acknowledge: {n.ack_link}" in lines
        assert f"Silence 1h: {n.silence_link}" in lines


# -- Feishu and email -----------------------------------------------------------------------------


async def test_feishu_text_has_the_links_on_their_own_lines(client: httpx.AsyncClient) -> None:
    bot = FakeFeishu({HOOK: None})
    bot.start()
    try:
        data = {"name": "core", "type": "feishu", "url": f"{bot.url}{HOOK_PATH}", "hook": HOOK}
        channel = FeishuChannel(FeishuChannelConfig.model_validate(data), client=client, renderer=TEMPLATES)
        n = linked()
        await channel.send(n)
        (body,) = bot.messages(HOOK)
    finally:
        bot.stop()
    lines = body["content"]["text"].splitlines()
    assert f"Acknowledge: {n.ack_link}" in lines
    assert f"Silence 1h: {n.silence_link}" in lines


async def test_email_html_has_escaped_values_and_link_buttons() -> None:
    hostile = '<script>alert("x")</script> & <b>bold</b>'
    n = linked(items=(MessageSnapshot.from_json({**ITEM, "headline": hostile}),), recipients=("oncall@example.com",))
    with FakeSmtp() as sink:
        config = EmailChannelConfig.model_validate(
            {"name": "mail", "type": "email", "host": sink.host, "port": sink.port, "security": "none"}
            | {"from": "alertrouter@example.com", "timeout": "5s"}
        )
        await EmailChannel(config, renderer=TEMPLATES).send(n)
    (message,) = sink.messages
    html_part = message.get_body(preferencelist=("html",))
    text_part = message.get_body(preferencelist=("plain",))
    assert isinstance(html_part, EmailMessage)
    assert isinstance(text_part, EmailMessage)
    html = html_part.get_content()
    assert "<script>" not in html
    assert "<b>bold</b>" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in html
    assert f'<a href="{n.ack_link}"' in html
    assert f'<a href="{n.silence_link}"' in html
    assert ">Acknowledge</a>" in html
    text = text_part.get_content().splitlines()
    assert f"Acknowledge: {n.ack_link}" in text
    assert f"Silence 1h: {n.silence_link}" in text

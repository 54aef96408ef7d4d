"""Every text field of every vendor body (issue 18), as the real channels build and post it with the real
templates, for notifications whose labels and annotations hold anything (`support.hostile`): within the
vendor's limits, and no field carries a link, a mention or markup that came from a label. Bodies are
caught by `httpx.MockTransport`; the email is built, not sent, and its headers are read back."""

from __future__ import annotations

import asyncio
import email
import json
import re
from collections.abc import Callable
from email.policy import default as email_policy
from pathlib import Path
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings

from alertrouter.channels import dingtalk, feishu, sms, voice, wecom
from alertrouter.channels.base import Channel, Notification, utf8_len
from alertrouter.channels.email import SUBJECT_LIMIT_BYTES, EmailChannel
from alertrouter.render.templates import Templates
from alertrouter.ruleset.channels import (
    SMS_FIELDS,
    VOICE_FIELDS,
    DingTalkChannelConfig,
    EmailChannelConfig,
    FeishuChannelConfig,
    SmsChannelConfig,
    WeComChannelConfig,
)
from support.hostile import HIDDEN, LINKISH, WECOM_TAGS, found_links, html_tags, notifications, product_links, without

TEMPLATES = Templates(builtin_dir=Path(__file__).resolve().parents[2] / "templates", timezone="Asia/Shanghai")
URL = "http://vendor.invalid/send"
TOKEN = "total-bodies-robot-token-5f0c1e"  # channels mask their secrets in every log record from now on
BOUNDED = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
Build = Callable[[httpx.AsyncClient], Channel]


def chat(kind: str, **fields: Any) -> dict[str, Any]:
    return {"name": f"{kind}-robot", "type": kind, "url": URL, **fields}


BUILDERS: dict[str, Build] = {
    "dingtalk-markdown": lambda c: dingtalk.DingTalkChannel(
        DingTalkChannelConfig.model_validate(chat("dingtalk", access_token=TOKEN)), client=c, renderer=TEMPLATES
    ),
    "dingtalk-actionCard": lambda c: dingtalk.DingTalkChannel(
        DingTalkChannelConfig.model_validate(chat("dingtalk", access_token=TOKEN, msgtype="actionCard")),
        client=c,
        renderer=TEMPLATES,
    ),
    "wecom-markdown": lambda c: wecom.WeComChannel(
        WeComChannelConfig.model_validate(chat("wecom", key=TOKEN)), client=c, renderer=TEMPLATES
    ),
    "wecom-text": lambda c: wecom.WeComChannel(
        WeComChannelConfig.model_validate(chat("wecom", key=TOKEN, msgtype="text")), client=c, renderer=TEMPLATES
    ),
    "feishu": lambda c: feishu.FeishuChannel(
        FeishuChannelConfig.model_validate(chat("feishu", hook=TOKEN)), client=c, renderer=TEMPLATES
    ),
    "sms-generic": lambda c: sms.SmsChannel(
        SmsChannelConfig.model_validate(
            {"name": "sms", "type": "sms", "provider": "generic", "generic": {"url": URL}}
            | {"params": {f"v_{f}": f for f in SMS_FIELDS}, "param_max_length": 500}
        ),
        client=c,
        renderer=TEMPLATES,
    ),
}


def posted(build: Build, n: Notification) -> tuple[dict[str, Any], int]:
    """The JSON body the channel posted for `n`, and its size in bytes."""
    bodies: list[bytes] = []

    def vendor(request: httpx.Request) -> httpx.Response:
        bodies.append(request.content)
        return httpx.Response(200, json={"errcode": 0, "code": 0})

    async def send() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(vendor)) as client:
            await build(client).send(n)

    asyncio.run(send())
    (body,) = bodies
    parsed: dict[str, Any] = json.loads(body)
    return parsed, len(body)


def assert_plain_title(title: str) -> None:
    """DingTalk's title, the email subject: one line, nothing a value brought that reads as markup."""
    assert not HIDDEN.search(title)
    assert "\n" not in title
    assert "\r" not in title
    assert not LINKISH.search(title), title
    assert not re.search(r"[<>@\[\]]", re.sub(r"^\[[^\[\]]*\]?", "", title)), title


def assert_chat(text: str, n: Notification, *, markdown: bool) -> None:
    assert not HIDDEN.search(text)
    assert not found_links(text, n), found_links(text, n)
    rest = without(text, product_links(n) + WECOM_TAGS)
    assert not re.search(r"[<@]" if markdown else r"[<>@]", rest), rest


@BOUNDED
@given(n=notifications())
def test_chat_bodies_carry_nothing_from_labels(n: Notification) -> None:
    for name in ("dingtalk-markdown", "dingtalk-actionCard"):
        body, size = posted(BUILDERS[name], n)
        assert size <= dingtalk.MAX_BODY_BYTES
        fields = body.get("markdown") or body["actionCard"]
        assert_plain_title(fields["title"])
        assert utf8_len(fields["title"]) <= dingtalk.TITLE_LIMIT_BYTES
        assert_chat(fields["text"], n, markdown=True)
        for button in fields.get("btns", []):
            assert button["actionURL"] in product_links(n)
            assert button["title"].startswith(("Acknowledge", "Silence", "Details", "确认", "静默", "详情"))
    markdown = posted(BUILDERS["wecom-markdown"], n)[0]["markdown"]["content"]
    assert utf8_len(markdown) <= wecom.MARKDOWN_MAX_BYTES
    assert_chat(markdown, n, markdown=True)
    text = posted(BUILDERS["wecom-text"], n)[0]["text"]["content"]
    assert utf8_len(text) <= wecom.TEXT_MAX_BYTES
    assert_chat(text, n, markdown=False)
    body, size = posted(BUILDERS["feishu"], n)
    text = body["content"]["text"]
    assert size <= feishu.MAX_BODY_BYTES
    assert utf8_len(text) <= feishu.TEXT_LIMIT_BYTES
    assert_chat(text, n, markdown=False)


@BOUNDED
@given(n=notifications())
def test_sms_text_and_variables_carry_no_link_from_labels(n: Notification) -> None:
    body, _ = posted(BUILDERS["sms-generic"], n)
    assert utf8_len(body["text"]) <= sms.TEXT_LIMIT_BYTES
    assert not found_links(body["text"], n), body["text"]
    params = body["params"]
    assert list(params) == [f"v_{f}" for f in SMS_FIELDS]
    assert params["v_link"] == n.link  # the product's own link, whole
    for name, value in params.items():
        assert value
        assert "\n" not in value
        if name != "v_link":
            assert not LINKISH.search(value), (name, value)
            assert "](" not in value, (name, value)


@BOUNDED
@given(n=notifications())
def test_email_has_one_line_subject_and_no_injected_header_or_link(n: Notification) -> None:
    config = {"name": "mail", "type": "email", "host": "smtp.invalid", "from": "ar@example.com", "to": ["a@x.org"]}
    message = EmailChannel(EmailChannelConfig.model_validate(config), renderer=TEMPLATES).message(n)
    subject = str(message["Subject"])
    assert_plain_title(subject)
    assert utf8_len(subject) <= SUBJECT_LIMIT_BYTES
    again = email.message_from_bytes(message.as_bytes(), policy=email_policy)
    assert sorted(again.keys()) == sorted(message.keys())  # nothing a value added (Bcc:, a second Subject:)
    assert " ".join(str(again["Subject"]).split()) == " ".join(subject.split())
    text, html = (part.get_content() for part in message.iter_parts())
    assert not found_links(text, n), found_links(text, n)
    assert not found_links(html, n), found_links(html, n)
    tags, hrefs = html_tags(html)
    assert "img" not in tags
    assert set(hrefs) <= set(product_links(n))


@BOUNDED
@given(n=notifications())
def test_voice_variables_are_speakable_whatever_the_labels(n: Notification) -> None:
    """Every spoken variable: one line, never empty, within its length, and nothing Aliyun's voice templates
    refuse (`# / : - % $ [ ]`, a link, "http", an IP address) whatever a label or annotation held."""
    params = voice.voice_params(n, {f"v_{f}": f for f in VOICE_FIELDS}, 40)
    assert list(params) == [f"v_{f}" for f in VOICE_FIELDS]
    for name, value in params.items():
        assert 0 < len(value) <= 40, (name, value)
        assert not HIDDEN.search(value), (name, value)
        assert "\n" not in value
        assert not LINKISH.search(value), (name, value)
        assert not re.search(r"[#/:\-%$\[\]]|https?|\d{1,3}(?:\.\d{1,3}){3}", value, re.IGNORECASE), (name, value)

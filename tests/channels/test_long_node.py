"""A 4,096-character node (dcgm-exporter's `Hostname`, kube-state-metrics' `node`: label values pass the ingest
up to that) no longer pushes the alert name out of what a person reads first: every channel's title or
headline, and the SMS and voice variables, hold the alert name whole and the node shortened to a head and an
ellipsis, in English and in Chinese. Bodies are posted by the real channels with the real templates and
caught by `httpx.MockTransport`; the email is built, not sent; the voice call goes to a recording provider."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from alertrouter.channels import dingtalk, feishu, sms, voice, wecom
from alertrouter.channels.base import Channel, MessageKind, Notification, utf8_len
from alertrouter.channels.email import SUBJECT_LIMIT_BYTES, EmailChannel
from alertrouter.channels.headline import NODE_CAP
from alertrouter.message.i18n import Locale
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.render.templates import Templates
from alertrouter.ruleset.channels import (
    DingTalkChannelConfig,
    EmailChannelConfig,
    FeishuChannelConfig,
    SmsChannelConfig,
    VoiceChannelConfig,
    WeComChannelConfig,
)

TEMPLATES = Templates(builtin_dir=Path(__file__).resolve().parents[2] / "templates")
URL = "http://vendor.invalid/send"
TOKEN = "long-node-robot-token-7c1d"
ALERT = "GPUXidError"
NODE = ("gpu-node-07-" + "a100-sxm4-80gb-rack12-north-" * 147)[:4096]
HEAD = NODE[:NODE_CAP]  # what a headline shows of it, before its ellipsis
EN = Locale("en", "Asia/Shanghai")
ZH = Locale("zh-CN", "Asia/Shanghai")
# The words each language puts around the node and the alert name, as `alertrouter.message.phrases.node_headline` does.
HEADLINE = {"en": f"{HEAD}…: {ALERT} on 2/8 GPUs", "zh-CN": f"{HEAD}…：2/8 块 GPU {ALERT}"}
SEVERITY = {"en": "CRITICAL", "zh-CN": "严重"}


def long_node(locale: Locale) -> Notification:
    """A node incident as the engine stores it in the outbox (`pipeline.incident.node_facts`)."""
    labels = {"alertname": ALERT, "node": NODE, "region": "north", "severity": "critical"}
    head = f"{NODE}: {ALERT} on 2/8 GPUs"
    item: dict[str, Any] = {
        "incident": f"gpu-by-node/{ALERT}/{NODE[:40]}",
        "kind": "node",
        "reason": "first",
        "status": "firing",
        "severity": "critical",
        "headline": head,
        "labels": labels,
        "summary": {
            "headline": head,
            "where": NODE,
            "alertname": ALERT,
            "units": ["3", "5"],
            "units_total": 8,
            "unit_name": "",
            "alerts": 2,
            "firing": 2,
            "eligible": 2,
        },
        "alerts": [
            {
                "fingerprint": f"fp{gpu}",
                "labels": {**labels, "gpu": gpu, "xid": "79", "Hostname": NODE},
                "firing": True,
                "annotations": {"summary": f"XID 79 on GPU {gpu}"},
                "starts_at": "2026-11-21T10:00:00+00:00",
            }
            for gpu in ("3", "5")
        ],
        "opened_at": "2026-11-21T10:00:00+00:00",
        "at": "2026-11-21T10:00:30+00:00",
    }
    return Notification(
        kind=MessageKind.FIRING,
        receiver="oncall",
        severity="critical",
        items=(MessageSnapshot.from_json(item),),
        link="https://alertrouter.example.org/incidents/77",
        recipients=("13800000000",),
        locale=locale,
    )


def posted(build: Callable[[httpx.AsyncClient], Channel], n: Notification) -> dict[str, Any]:
    bodies: list[bytes] = []

    def vendor(request: httpx.Request) -> httpx.Response:
        bodies.append(request.content)
        return httpx.Response(200, json={"errcode": 0, "code": 0, "StatusCode": 0})

    async def send() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(vendor)) as client:
            await build(client).send(n)

    asyncio.run(send())
    (body,) = bodies
    parsed: dict[str, Any] = json.loads(body)
    return parsed


def chat(kind: str, **fields: Any) -> dict[str, Any]:
    return {"name": f"{kind}-robot", "type": kind, "url": URL, **fields}


def first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0]


LOCALES = pytest.mark.parametrize("locale", [EN, ZH], ids=["en", "zh-CN"])


@LOCALES
def test_dingtalk_title_and_headline_keep_the_alert_name(locale: Locale) -> None:
    build = lambda c: dingtalk.DingTalkChannel(  # noqa: E731
        DingTalkChannelConfig.model_validate(chat("dingtalk", access_token=TOKEN)), client=c, renderer=TEMPLATES
    )
    body = posted(build, long_node(locale))["markdown"]
    assert body["title"] == f"[{SEVERITY[locale.language]}] {HEADLINE[locale.language]}"
    assert utf8_len(body["title"]) <= dingtalk.TITLE_LIMIT_BYTES
    assert first_line(body["text"]) == f"### 🔴 {SEVERITY[locale.language]} | {HEADLINE[locale.language]}"


@LOCALES
def test_wecom_and_feishu_headlines_keep_the_alert_name(locale: Locale) -> None:
    n = long_node(locale)
    severity, headline = SEVERITY[locale.language], HEADLINE[locale.language]
    markdown = posted(
        lambda c: wecom.WeComChannel(
            WeComChannelConfig.model_validate(chat("wecom", key=TOKEN)), client=c, renderer=TEMPLATES
        ),
        n,
    )["markdown"]["content"]
    assert first_line(markdown) == f'### <font color="warning">{severity}</font> {headline}'
    text = posted(
        lambda c: wecom.WeComChannel(
            WeComChannelConfig.model_validate(chat("wecom", key=TOKEN, msgtype="text")), client=c, renderer=TEMPLATES
        ),
        n,
    )["text"]["content"]
    assert first_line(text) == f"[{severity}] {headline}"
    lark = posted(
        lambda c: feishu.FeishuChannel(
            FeishuChannelConfig.model_validate(chat("feishu", hook=TOKEN)), client=c, renderer=TEMPLATES
        ),
        n,
    )["content"]["text"]
    assert first_line(lark) == f"[{severity}] {headline}"


@LOCALES
def test_email_subject_keeps_the_alert_name(locale: Locale) -> None:
    config = {"name": "mail", "type": "email", "host": "smtp.invalid", "from": "ar@example.com", "to": ["a@x.org"]}
    message = EmailChannel(EmailChannelConfig.model_validate(config), renderer=TEMPLATES).message(long_node(locale))
    subject = " ".join(str(message["Subject"]).split())  # a long subject is folded
    assert subject == " ".join(f"[{SEVERITY[locale.language]}] {HEADLINE[locale.language]}".split())
    assert utf8_len(str(message["Subject"])) <= SUBJECT_LIMIT_BYTES


@LOCALES
def test_sms_text_and_variables_keep_the_alert_name(locale: Locale) -> None:
    """The shipped SMS variables (rules/channels.yml: 20 characters each) and a headline variable."""
    params = {"severity": "severity", "node": "node", "alert": "alertname", "what": "headline"}
    config = {"name": "sms", "type": "sms", "provider": "generic", "generic": {"url": URL}}
    build = lambda c: sms.SmsChannel(  # noqa: E731
        SmsChannelConfig.model_validate(config | {"params": params, "param_max_length": 20}),
        client=c,
        renderer=TEMPLATES,
    )
    body = posted(build, long_node(locale))
    head = HEADLINE[locale.language].replace("…", "...")  # GSM-7 has no ellipsis
    assert first_line(body["text"]).startswith(f"[{SEVERITY[locale.language]}] {head}")
    assert body["params"]["node"] == "gpu-node-07-a100-s.."
    assert body["params"]["alert"] == ALERT
    # "gpu-no..: GPUXidError" would be 21: the node goes before any of the alert name
    assert body["params"]["what"] == {"en": ALERT, "zh-CN": f"gpu-no..：{ALERT}"}[locale.language]
    wider = sms.sms_params(long_node(locale), {"what": "headline"}, 40)["what"]
    assert (
        wider
        == {
            "en": "gpu-node-07-a100-sxm4-80g..: GPUXidError",  # the count goes first, then the node's end
            "zh-CN": "gpu-node-07-a100-sxm4-80gb..：GPUXidError",
        }[locale.language]
    )


class Recorder:
    """A voice provider that records what it would say."""

    def __init__(self) -> None:
        self.calls: list[dict[str, str]] = []

    async def call(self, number: str, params: Mapping[str, str], *, reference: str | None = None) -> str:
        self.calls.append(dict(params))
        return "call-1"


@LOCALES
def test_the_spoken_headline_keeps_the_alert_name(locale: Locale) -> None:
    """As rules/channels.yml's voice channels: the headline in one variable of 30 characters."""
    tencent = {"secret_id": "AKIDlongNode01", "secret_key": "longNodeSecret01", "voice_sdk_app_id": "1400006666"}
    config = VoiceChannelConfig.model_validate(
        {"name": "voice", "type": "voice", "provider": "tencent", "tencent": tencent | {"template_id": "4356"}}
        | {"params": {"1": "headline"}, "param_max_length": 30}
    )
    recorder = Recorder()

    async def call() -> None:
        async with httpx.AsyncClient() as client:
            await voice.VoiceChannel(config, client=client, provider=recorder).send(long_node(locale))

    asyncio.run(call())
    (params,) = recorder.calls
    assert (
        params["1"]
        == {
            "en": "gpu node 07 a100.. GPUXidError",  # 30 characters: no count, the node cut
            "zh-CN": "gpu node 07 a100..：GPUXidError",
        }[locale.language]
    )


@LOCALES
def test_a_storm_keeps_the_alert_name_whatever_its_region(locale: Locale) -> None:
    """A storm's headline says its scope first in Chinese (`north 区 40 个节点 GPUXidError`)."""
    region = ("north-" * 700)[:4096]
    item: dict[str, Any] = {
        "incident": f"cluster/{ALERT}/north",
        "kind": "cluster",
        "reason": "first",
        "status": "firing",
        "severity": "critical",
        "headline": f"{ALERT} on 40 nodes in region {region}",
        "labels": {"alertname": ALERT, "region": region},
        "summary": {"alertname": ALERT, "scope": [["region", region]], "nodes": 40, "units": 320, "unit_name": ""},
        "opened_at": "2026-11-21T10:00:00+00:00",
    }
    snapshot = MessageSnapshot.from_json(item)
    n = Notification(kind=MessageKind.CLUSTER, receiver="oncall", severity="critical", items=(snapshot,), locale=locale)
    shown = region[:NODE_CAP]
    assert (
        TEMPLATES.title(n, limit_bytes=dingtalk.TITLE_LIMIT_BYTES)
        == {
            "en": f"[CRITICAL] {ALERT} on 40 nodes in region {shown}…: 320 GPUs",
            "zh-CN": f"[严重] {shown}… 区 40 个节点 {ALERT}，共 320 块 GPU",
        }[locale.language]
    )

"""What the on-call person reads of an incident's times, through the engine, the outbox, the delivery loop
and the real DingTalk, WeCom and SMS channels posting to the fake vendors over loopback HTTP, on both
stores: a dcgm-exporter alert Prometheus fired ten minutes before alertrouter heard of it, resolved a
minute after, told to a receiver reading Chinese in Asia/Shanghai."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from alertrouter.channels.registry import build_channels
from alertrouter.delivery.worker import DeliveryWorker
from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.render.templates import Templates
from alertrouter.ruleset.schema import Ruleset
from alertrouter.store import Database
from support.fakes.dingtalk import FakeDingTalk
from support.fakes.smsgateway import FakeSmsGateway
from support.fakes.wecom import FakeWeCom
from support.passes import T0, Clock, run_for
from support.scenario import dcgm_labels, shipped_pipeline
from support.webhooks import webhook

M = timedelta(minutes=1)
DT_TOKEN = "dt-oncall-token-2b7e"  # literal test credentials, nothing real
WECOM_KEY = "wecom-oncall-key-9f31"
ONCALL = "13800138000"


@pytest.fixture
def vendors() -> Iterator[tuple[FakeDingTalk, FakeWeCom, FakeSmsGateway]]:
    fakes = (FakeDingTalk({DT_TOKEN: None}), FakeWeCom([WECOM_KEY]), FakeSmsGateway())
    for fake in fakes:
        fake.start()
    try:
        yield fakes
    finally:
        for fake in fakes:
            fake.stop()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(trust_env=False) as c:
        yield c


def _rules(robot: FakeDingTalk, wecom: FakeWeCom, sms: FakeSmsGateway) -> Ruleset:
    channels: list[dict[str, Any]] = [
        {"name": "robot", "type": "dingtalk", "url": f"{robot.url}/robot/send", "access_token": DT_TOKEN},
        {"name": "wecom", "type": "wecom", "url": f"{wecom.url}/cgi-bin/webhook/send", "key": WECOM_KEY},
        {"name": "sms", "type": "sms", "provider": "generic", "generic": {"url": f"{sms.url}/sms/send"}},
    ]
    return Ruleset.model_validate(
        {
            "global": {"language": "zh-CN", "timezone": "Asia/Shanghai"},
            "channels": channels,
            # the shipped rules route a critical alert of no region to oncall-core
            "receivers": [{"name": "oncall-core", "channels": ["robot", "wecom", {"channel": "sms", "to": [ONCALL]}]}],
        }
    )


async def test_the_words_each_vendor_receives(
    db: Database, vendors: tuple[FakeDingTalk, FakeWeCom, FakeSmsGateway], client: httpx.AsyncClient
) -> None:
    robot, wecom, sms = vendors
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    rules = _rules(robot, wecom, sms)
    channels = build_channels(rules, client=client, renderer=Templates())
    worker = DeliveryWorker(db, rules, channels, clock=clock, rng=random.Random(0))
    gpu = [dcgm_labels("10.0.3.17", "gpu-node-17", 3)]
    started = T0 - 10 * M  # 15:50 CST
    await ingestor.ingest(parse_webhook(webhook(gpu, starts_at=started)).batch)
    await run_for(runner, clock, M)
    await worker.run_once()
    await ingestor.ingest(parse_webhook(webhook(gpu, status="resolved", starts_at=started, ends_at=T0 + M)).batch)
    await run_for(runner, clock, 10 * M)
    await worker.run_once()

    dingtalk = [m["markdown"]["text"] for m in robot.messages(DT_TOKEN)]
    assert len(dingtalk) == 2
    assert "- **开始于：** 15:50 CST（10 分钟前）" in dingtalk[0]
    assert "- **持续：** 11 分钟（15:50 CST 开始）" in dingtalk[1]
    wecom_texts = [m["markdown"]["content"] for m in wecom.messages(WECOM_KEY)]
    assert len(wecom_texts) == 2
    assert '> 开始于： **15:50 CST** <font color="comment">10 分钟前</font>' in wecom_texts[0]
    assert '> 持续： **11 分钟** <font color="comment">15:50 CST 开始</font>' in wecom_texts[1]
    texts = [text for number, text in sms.sent if number == ONCALL]
    assert len(texts) == 2
    assert texts[0].startswith("[严重] gpu-node-17：1/8 块 GPU GPUXidError，15:50 CST 开始")
    assert texts[1].startswith("[已恢复] gpu-node-17：1/8 块 GPU GPUXidError，持续 11 分钟")

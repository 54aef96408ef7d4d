"""A newcomer's first run, on an injected clock: the shipped rules and channels (pointed at the vendor fakes),
no Prometheus pointed at alertrouter yet. Seven minutes pass (past the shipped 5m heartbeat timeout) and
nothing is sent; then the first GPU alert arrives, started ten minutes ago, and resolves a minute later:
its messages, and only those, reach the ops robot and mail. Once heard, the Watchdog's silence pages as
it always did; `warn_if_never_heard` sends one warning to ops instead of silence."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from alertrouter.channels.email import EmailChannel
from alertrouter.channels.registry import build_channels
from alertrouter.delivery.worker import DeliveryWorker
from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.liveness.monitor import HeartbeatMonitor
from alertrouter.render.templates import Templates
from alertrouter.ruleset import Ruleset, load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.ruleset.channels import EmailChannelConfig
from alertrouter.store import Database
from alertrouter.store.tables import OutboxRow
from cluster.box import (
    ALIYUN_ID,
    ALIYUN_SECRET,
    DINGTALK_BACKUP,
    DINGTALK_CORE,
    DINGTALK_CORE_SECRET,
    DINGTALK_NORTH,
    DINGTALK_OPS,
    DINGTALK_SOUTH,
    SMS_SIGN,
    SMS_TEMPLATE,
    SMTP_PASSWORD,
    SMTP_USER,
    WECOM_KEY,
    Vendors,
    point_channels,
    vendor_env,
)
from e2e.harness import gpu_labels, webhook, webhook_alert
from support.fakes.aliyun import FakeAliyunSms
from support.fakes.dingtalk import FakeDingTalk
from support.fakes.smtp import FakeSmtp, self_signed_cert
from support.fakes.tencent_voice import FakeTencentVoice
from support.fakes.wecom import FakeWeCom
from support.passes import T0, Clock, rows

REPO = Path(__file__).resolve().parents[2]
S, M = timedelta(seconds=1), timedelta(minutes=1)
TICK = 5 * S  # every part runs once per tick of the test clock, as `serve`'s loops do (each within seconds)


@pytest.fixture
def vendors(tmp_path: Path) -> Iterator[Vendors]:
    """The fakes of every shipped channel, strict as the real services (tests/cluster/box.py's)."""
    dingtalk = FakeDingTalk(
        {DINGTALK_CORE: DINGTALK_CORE_SECRET, DINGTALK_BACKUP: None, DINGTALK_OPS: None}
        | {DINGTALK_NORTH: None, DINGTALK_SOUTH: None}
    )
    aliyun = FakeAliyunSms(
        {ALIYUN_ID: ALIYUN_SECRET},
        sign_names=(SMS_SIGN,),
        templates={SMS_TEMPLATE: ("severity", "node", "alert", "gpus")},
        param_limit=20,
    )
    smtp = FakeSmtp(security="starttls", users={SMTP_USER: SMTP_PASSWORD}, tls=self_signed_cert(tmp_path))
    found = Vendors(dingtalk, FakeWeCom([WECOM_KEY]), aliyun, smtp, FakeTencentVoice({}))
    started = []
    try:
        for fake in (found.dingtalk, found.wecom, found.aliyun, found.tencent, found.smtp):
            fake.start()
            started.append(fake)
        yield found
    finally:
        for fake in reversed(started):
            fake.stop()


def shipped_rules(v: Vendors, directory: Path, heartbeat: str = "") -> Ruleset:
    """rules/ as shipped, its channels pointed at the fakes and their credentials in the environment;
    `heartbeat`: a line added to the shipped heartbeat's entry."""
    shutil.copytree(REPO / "rules", directory)
    if heartbeat:
        beats = directory / "heartbeats.yml"
        beats.write_text(beats.read_text().replace("    timeout: 5m\n", f"    timeout: 5m\n    {heartbeat}\n"))
    pointed = point_channels(
        (REPO / "rules" / "channels.yml").read_text(),
        dingtalk=v.dingtalk.url,
        wecom=v.wecom.url,
        aliyun=v.aliyun.url,
        smtp_port=v.smtp.port,
        tencent=v.tencent.url,
    )
    (directory / "channels.yml").write_text(pointed)
    return load_ruleset(directory, vendor_env(v.smtp))


@dataclass
class Newcomer:
    """`serve`'s moving parts on one test clock: ingest, the heartbeat monitor, the engine, delivery."""

    clock: Clock
    ingestor: Ingestor
    monitor: HeartbeatMonitor
    engine: EngineRunner
    delivery: DeliveryWorker

    async def run_for(self, duration: timedelta) -> None:
        end = self.clock.now + duration
        while self.clock.now < end:
            await self.monitor.check_once()
            await self.engine.run_once()
            await self.delivery.run_once()
            self.clock.now += TICK

    async def post(self, body: object) -> None:
        """As the webhook endpoint takes it: a heartbeat's alert refreshes it, the others are stored."""
        batch = parse_webhook(json.dumps(body).encode()).batch
        heard = self.monitor.heard(batch.alerts)
        if heard.names:
            await self.monitor.seen(heard.names, via="alert")
        if heard.others:
            await self.ingestor.ingest(replace(batch, alerts=heard.others, body_digest=None))


def newcomer(db: Database, rules: Ruleset, v: Vendors, http: httpx.AsyncClient) -> Newcomer:
    clock = Clock()
    renderer = Templates()
    channels = dict(build_channels(rules, client=http, renderer=renderer))
    (mail,) = [c for c in rules.channels if isinstance(c, EmailChannelConfig)]
    # in-process, the fake's throwaway certificate is trusted by the channel itself (serve: SSL_CERT_FILE)
    channels[mail.name] = EmailChannel(mail, renderer=renderer, ssl_context=v.smtp.client_context())
    delivery = DeliveryWorker(db, rules, channels, clock=clock, rng=random.Random(0))
    engine = EngineRunner(db, compile_rules(rules), clock=clock, on_intents=delivery.nudge)
    ingestor = Ingestor(db, TouchBuffer(), clock=clock, on_committed=engine.committed)
    monitor = HeartbeatMonitor(db, rules.heartbeats, ingestor.ingest, locale=rules.locale(""), clock=clock)
    return Newcomer(clock, ingestor, monitor, engine, delivery)


def sent(v: Vendors) -> list[str]:
    """Everything any fake was asked to deliver, as text."""
    out = [
        r.body.decode(errors="replace") for fake in (v.dingtalk, v.wecom, v.aliyun, v.tencent) for r in fake.received
    ]
    return out + [str(m) for m in v.smtp.messages]


def robot_texts(v: Vendors, token: str) -> list[str]:
    return [str(body[body["msgtype"]].get("text", "")) for body in v.dingtalk.messages(token)]


async def test_a_fresh_install_pages_no_one_until_its_first_alert(
    db: Database, vendors: Vendors, tmp_path: Path
) -> None:
    rules = shipped_rules(vendors, tmp_path / "rules")
    async with httpx.AsyncClient(timeout=10) as http:
        run = newcomer(db, rules, vendors, http)
        await run.run_for(7 * M)
        assert sent(vendors) == []  # no "monitoring is blind", no escalation towards a call
        assert await rows(db, OutboxRow) == []  # not even recorded for a channel without credentials
        (waiting,) = await run.monitor.statuses()
        assert (waiting.config.name, waiting.state) == ("prometheus", "waiting")

        labels = gpu_labels(7, 3)  # GPUHighTemp, warning, on gpu-node-07's GPU 3
        started = run.clock.now - 10 * M
        await run.post(webhook([webhook_alert(labels, starts_at=started)]))
        await run.run_for(M)
        (firing,) = robot_texts(vendors, DINGTALK_OPS)  # shipped routes: warning -> ops (DingTalk and mail)
        assert firing.startswith("### 🟠 警告 | gpu-node-07：1/8 块 GPU GPUHighTemp\n")  # global.language zh-CN
        assert "- **节点：** gpu-node-07 (gpu-prod-sh1 集群)" in firing
        await run.post(webhook([webhook_alert(labels, starts_at=started, ends_at=started + 11 * M)]))
        await run.run_for(6 * M)  # a resolve is told at the route's next group_interval (5m)
        assert len(robot_texts(vendors, DINGTALK_OPS)) == 2
        resolved = robot_texts(vendors, DINGTALK_OPS)[1]
        assert resolved.startswith("### ✅ 已恢复 | gpu-node-07：1/8 块 GPU GPUHighTemp\n")
        assert "- **节点：** gpu-node-07 (gpu-prod-sh1 集群)" in resolved
        # The alert's own times, in Asia/Shanghai: it started at 15:57 CST, ten minutes before it was first
        # seen, and lasted 11 minutes; not when alertrouter saw it or told it.
        assert "15:57 CST" in firing, firing
        assert "10 分钟" in firing, firing
        assert "11 分钟" in resolved, resolved
        assert "15:57 CST" in resolved, resolved
        assert [m["Subject"] for m in vendors.smtp.messages] == [
            "[警告] gpu-node-07：1/8 块 GPU GPUHighTemp",
            "[已恢复] gpu-node-07：1/8 块 GPU GPUHighTemp",
        ]
        assert [m for m in sent(vendors) if "prometheus" in m] == []  # nothing of the heartbeat, ever
        assert vendors.refused() == []


async def test_once_heard_a_silent_prometheus_pages_and_its_return_is_told(
    db: Database, vendors: Vendors, tmp_path: Path
) -> None:
    """Prometheus pointed at it six minutes after the start: its Watchdog heard once, then silent past the 5m
    timeout, the critical page goes out as it always did, and the Watchdog's return resolves it."""
    rules = shipped_rules(vendors, tmp_path / "rules")
    watchdog = {"alertname": "Watchdog", "severity": "none"}
    summary = {"summary": "An alert that should always be firing to certify that Alertmanager is working properly."}
    async with httpx.AsyncClient(timeout=10) as http:
        run = newcomer(db, rules, vendors, http)
        await run.run_for(6 * M)
        assert sent(vendors) == []
        await run.post(webhook([webhook_alert(watchdog, starts_at=T0, annotations=summary)], group_by=()))
        await run.run_for(6 * M)  # silent since 08:06 UTC, raised at 08:11, told after the 30s group_wait
        (page,) = robot_texts(vendors, DINGTALK_CORE)  # shipped routes: critical -> oncall-core
        assert page.startswith("### 🔴 严重 | 监控失明：prometheus\n")
        assert "- AlertrouterHeartbeatMissing: 监控失明：prometheus 自 16:06 CST 起无心跳" in page
        await run.run_for(M)
        assert run.clock.now == T0 + 13 * M
        await run.post(webhook([webhook_alert(watchdog, starts_at=T0, annotations=summary)], group_by=()))
        await run.run_for(6 * M)  # a resolve is told at the route's next group_interval
        assert len(robot_texts(vendors, DINGTALK_CORE)) == 2
        told = robot_texts(vendors, DINGTALK_CORE)[1]
        assert told.startswith("### ✅ 已恢复 | 监控失明：prometheus\n")
        # Blind from 08:06 UTC (last heard) to 08:13 UTC (heard again), in Asia/Shanghai.
        assert "16:06 CST" in page, page
        assert "7 分钟" in told, told
        assert "16:06 CST" in told, told
        assert vendors.refused() == []


async def test_warn_if_never_heard_sends_one_warning_to_ops(db: Database, vendors: Vendors, tmp_path: Path) -> None:
    rules = shipped_rules(vendors, tmp_path / "rules", heartbeat="warn_if_never_heard: 10m")
    async with httpx.AsyncClient(timeout=10) as http:
        run = newcomer(db, rules, vendors, http)
        await run.run_for(10 * M)
        assert sent(vendors) == []
        await run.run_for(2 * M)  # raised at 08:10 UTC, told after the 30s group_wait
        (text,) = robot_texts(vendors, DINGTALK_OPS)  # shipped routes: warning -> ops, never the on-call
        assert text.startswith("### 🟠 警告 | AlertrouterHeartbeatNeverHeard\n")
        summary = "prometheus 自 16:00 CST 起从未收到心跳：请将其 Prometheus 和 Alertmanager 指向 alertrouter"
        assert f"- AlertrouterHeartbeatNeverHeard: {summary}" in text
        assert robot_texts(vendors, DINGTALK_CORE) == []
        assert [m["Subject"] for m in vendors.smtp.messages] == ["[警告] AlertrouterHeartbeatNeverHeard"]
        assert len(sent(vendors)) == 2

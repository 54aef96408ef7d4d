"""What a message says of an incident's times, from Alertmanager's webhooks through the engine and the store
to each channel's words: when the alerts started (their `startsAt`) and how long they lasted (to the
`endsAt` that resolved them), never when alertrouter heard of them or when it decided to tell."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from alertrouter.channels.base import MessageKind, Notification
from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.message.i18n import Locale
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.render.templates import Templates
from alertrouter.store import Database
from alertrouter.store.tables import OutboxRow
from support.passes import T0, Clock, rows, run_for
from support.scenario import dcgm_labels, node_down_labels, shipped_pipeline
from support.webhooks import webhook

M = timedelta(minutes=1)
SHANGHAI = "Asia/Shanghai"  # UTC+8: T0 (08:00 UTC) is 16:00 CST

# Channel, format -> the words of a firing and of a resolved message, per language.
FIRING = {
    "en": {
        ("dingtalk", "md"): "- **Since:** 15:50 CST (10m ago)",
        ("wecom", "md"): '> Since: **15:50 CST** <font color="comment">10m ago</font>',
        ("sms", "txt"): "[CRITICAL] gpu-node-17: GPUXidError on 1/8 GPUs, since 15:50 CST",
        ("email", "html"): "<td>15:50 CST (10m ago)</td>",
    },
    "zh-CN": {
        ("dingtalk", "md"): "- **开始于：** 15:50 CST（10 分钟前）",
        ("wecom", "md"): '> 开始于： **15:50 CST** <font color="comment">10 分钟前</font>',
        ("sms", "txt"): "[严重] gpu-node-17：1/8 块 GPU GPUXidError，15:50 CST 开始",
        ("email", "html"): "<td>15:50 CST（10 分钟前）</td>",
    },
}
RESOLVED = {
    "en": {
        ("dingtalk", "md"): "- **Lasted:** 11m (since 15:50 CST)",
        ("wecom", "md"): '> Lasted: **11m** <font color="comment">since 15:50 CST</font>',
        ("sms", "txt"): "[RESOLVED] gpu-node-17: GPUXidError on 1/8 GPUs, lasted 11m",
        ("email", "html"): "<td>11m (since 15:50 CST)</td>",
    },
    "zh-CN": {
        ("dingtalk", "md"): "- **持续：** 11 分钟（15:50 CST 开始）",
        ("wecom", "md"): '> 持续： **11 分钟** <font color="comment">15:50 CST 开始</font>',
        ("sms", "txt"): "[已恢复] gpu-node-17：1/8 块 GPU GPUXidError，持续 11 分钟",
        ("email", "html"): "<td>11 分钟（15:50 CST 开始）</td>",
    },
}


async def _told(db: Database) -> list[tuple[str, MessageSnapshot]]:
    """The outbox as the delivery loop reads it back: (reason, snapshot), in order."""
    told = sorted(await rows(db, OutboxRow), key=lambda o: o.id)
    return [(o.reason, MessageSnapshot.from_json(o.message)) for o in told if o.reason != "escalated"]


def _rendered(snapshot: MessageSnapshot, channel: str, fmt: str, language: str) -> str:
    kind = MessageKind.RESOLVED if snapshot.resolved else MessageKind.FIRING
    n = Notification(
        kind=kind,
        receiver="oncall-core",
        severity=snapshot.severity,
        items=(snapshot,),
        created_at=snapshot.at,
        locale=Locale(language, SHANGHAI),
    )
    return Templates().render(channel, fmt, n)


async def _gpu_fired_ten_minutes_before_it_arrived(db: Database) -> list[tuple[str, MessageSnapshot]]:
    """dcgm-exporter's XID alert: Prometheus fired it at 07:50 UTC, alertrouter hears of it at 08:00 (an
    Alertmanager that was down, or a long group_wait upstream); it resolves at 08:01 (its real endsAt),
    and the resolved message goes out at the incident's next group interval, 08:05:30."""
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    gpu = [dcgm_labels("10.0.3.17", "gpu-node-17", 3)]
    started = T0 - 10 * M
    await ingestor.ingest(parse_webhook(webhook(gpu, starts_at=started)).batch)
    await run_for(runner, clock, M)
    ended = T0 + M
    await ingestor.ingest(parse_webhook(webhook(gpu, status="resolved", starts_at=started, ends_at=ended)).batch)
    await run_for(runner, clock, 10 * M)
    return await _told(db)


async def test_a_gpu_alert_is_told_from_its_startsat_and_lasted_to_its_endsat(db: Database) -> None:
    told = await _gpu_fired_ten_minutes_before_it_arrived(db)
    assert [reason for reason, _ in told] == ["first", "resolved"]
    (_, firing), (_, resolved) = told
    assert resolved.at == datetime.fromisoformat("2026-11-21T08:05:30+00:00")  # told 5.5 minutes after it opened
    for language in ("en", "zh-CN"):
        for (channel, fmt), words in FIRING[language].items():
            assert words in _rendered(firing, channel, fmt, language), (language, channel)
        for (channel, fmt), words in RESOLVED[language].items():
            assert words in _rendered(resolved, channel, fmt, language), (language, channel)


@pytest.mark.parametrize(
    ("language", "words"),
    [("en", "- **Lasted:** 2m (since 16:00 CST)"), ("zh-CN", "- **持续：** 2 分钟（16:00 CST 开始）")],
)
async def test_a_node_down_for_two_minutes_lasted_two_minutes(db: Database, language: str, words: str) -> None:
    """NodeDown (`up == 0` for 1m) fired at 08:00 and ended at 08:02; the resolved message, sent later,
    says 2 minutes, not the 5 from opening to the group interval that let it go."""
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    node = [node_down_labels("gpu-node-17")]
    await ingestor.ingest(parse_webhook(webhook(node, starts_at=T0)).batch)
    await run_for(runner, clock, M)
    clock.now = T0 + 2 * M + timedelta(seconds=30)
    await ingestor.ingest(parse_webhook(webhook(node, status="resolved", starts_at=T0, ends_at=T0 + 2 * M)).batch)
    await run_for(runner, clock, 10 * M)
    told = await _told(db)
    assert [reason for reason, _ in told] == ["first", "resolved"]
    resolved = told[-1][1]
    assert resolved.at is not None
    assert resolved.at - T0 >= 5 * M
    assert words in _rendered(resolved, "dingtalk", "md", language)


async def test_a_storm_is_told_from_its_members_alerts(db: Database) -> None:
    """Eight NodeDowns of one rack that Prometheus fired at 07:50 roll up into one storm, first told at
    08:00:30; they end at 08:03, and the storm's resolved message goes out minutes later."""
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    down = [node_down_labels(f"gpu-node-{n:02d}", region="north", rack="r12") for n in range(8)]
    started = T0 - 10 * M
    await ingestor.ingest(parse_webhook(webhook(down, starts_at=started)).batch)
    await run_for(runner, clock, 2 * M)
    await ingestor.ingest(parse_webhook(webhook(down, status="resolved", starts_at=started, ends_at=T0 + 3 * M)).batch)
    await run_for(runner, clock, 10 * M)
    told = [(reason, s) for reason, s in await _told(db) if s.kind == "cluster"]
    assert [reason for reason, _ in told] == ["first", "resolved"]
    (_, firing), (_, resolved) = told
    assert (firing.started_at, resolved.started_at, resolved.ended_at) == (started, started, T0 + 3 * M)
    assert "- **Since:** 15:50 CST (10m ago)" in _rendered(firing, "dingtalk", "md", "en")
    assert "- **持续：** 13 分钟（15:50 CST 开始）" in _rendered(resolved, "dingtalk", "md", "zh-CN")


async def test_a_gpu_that_flapped_between_two_messages_is_told_from_its_first_start(db: Database) -> None:
    """GPUHighTemp fires at 08:00 and is told; it resolves at 08:01:30 and fires again at 08:02 with a new
    `startsAt` (Prometheus' next episode), both inside the group interval, so neither is a message; it ends
    for good at 08:03. The resolved message speaks of what the receiver was told: hot since 16:00 CST, for
    3 minutes, not "30s since 16:02" from the last episode alone."""
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    gpu = [dcgm_labels("10.0.3.17", "gpu-node-17", 0, alertname="GPUHighTemp", severity="warning")]
    await ingestor.ingest(parse_webhook(webhook(gpu, starts_at=T0)).batch)
    await run_for(runner, clock, M)
    await ingestor.ingest(parse_webhook(webhook(gpu, status="resolved", starts_at=T0, ends_at=T0 + M + M / 2)).batch)
    await run_for(runner, clock, M)
    again = T0 + 2 * M
    await ingestor.ingest(parse_webhook(webhook(gpu, starts_at=again)).batch)
    await run_for(runner, clock, M / 2)
    await ingestor.ingest(parse_webhook(webhook(gpu, status="resolved", starts_at=again, ends_at=T0 + 3 * M)).batch)
    await run_for(runner, clock, 10 * M)
    told = await _told(db)
    assert [reason for reason, _ in told] == ["first", "resolved"]
    resolved = told[-1][1]
    assert (resolved.started_at, resolved.ended_at) == (T0, T0 + 3 * M)
    assert "- **Lasted:** 3m (since 16:00 CST)" in _rendered(resolved, "dingtalk", "md", "en")
    assert "- **持续：** 3 分钟（16:00 CST 开始）" in _rendered(resolved, "dingtalk", "md", "zh-CN")

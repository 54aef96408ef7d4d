"""Heartbeats on an injected clock against real databases: a silent source raises alertrouter's own
alert, routed by the shipped rules; its return resolves it; restarts and two replicas raise it once."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta
from zoneinfo import ZoneInfo

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.liveness.monitor import HeartbeatMonitor
from alertrouter.liveness.watch import Heard, Step
from alertrouter.message.i18n import Locale, translations
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.message.words import words_for
from alertrouter.metrics import Metrics
from alertrouter.render.context import LocalClock, build_item
from alertrouter.ruleset.heartbeats import HeartbeatConfig
from alertrouter.store import Database
from alertrouter.store.tables import AlertEpisodeRow, AlertRow, IncidentRow, OutboxRow
from alertrouter.web.console.views import incident_headline
from support.passes import T0, Clock, rows, run_for
from support.scenario import shipped_pipeline
from support.webhooks import Status, webhook

M = timedelta(minutes=1)
S = timedelta(seconds=1)

NORTH = HeartbeatConfig.model_validate(
    {
        "name": "prometheus-north",
        "matchers": ['alertname="Watchdog"', 'prometheus="monitoring/north"'],
        "timeout": "5m",
        "labels": {"severity": "critical", "region": "north"},
        "description": "the north region's Prometheus",
    }
)


def monitor(
    db: Database,
    clock: Clock,
    holder: str = "a",
    configs: list[HeartbeatConfig] | None = None,
    metrics: Metrics | None = None,
) -> HeartbeatMonitor:
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    return HeartbeatMonitor(
        db,
        [NORTH] if configs is None else configs,
        ingestor.ingest,
        locale=Locale("en", "UTC"),
        clock=clock,
        holder=holder,
        metrics=metrics,
    )


def watchdog(prometheus: str, status: Status = "firing") -> bytes:
    """What Alertmanager sends for kube-prometheus' Watchdog (its `prometheus` external label included)."""
    return webhook(
        [{"alertname": "Watchdog", "severity": "none", "prometheus": prometheus}],
        status=status,
        starts_at="2026-11-21T07:00:00Z",
        ends_at="2026-11-21T08:00:00Z" if status == "resolved" else None,
        annotations={
            "summary": "An alert that should always be firing to certify that Alertmanager is working properly."
        },
        group_by=["alertname"],
    )


async def blind_alerts(db: Database) -> list[AlertRow]:
    return [a for a in await rows(db, AlertRow) if a.labels.get("alertname") == "AlertrouterHeartbeatMissing"]


async def test_a_silent_source_is_raised_after_its_timeout_routed_and_resolved_on_return(db: Database) -> None:
    clock = Clock()
    hb = monitor(db, clock)
    engine = EngineRunner(db, shipped_pipeline(), clock=clock)
    assert await hb.check_once() == {}
    clock.now += M
    await hb.seen(["prometheus-north"], via="alert")
    clock.now += 5 * M - S
    assert await hb.check_once() == {}  # silent for 4m59s: not yet
    assert await blind_alerts(db) == []
    clock.now += S
    assert await hb.check_once() == {"prometheus-north": Step.RAISE}
    (alert,) = await blind_alerts(db)
    assert alert.status == "firing"
    assert alert.labels == {
        "alertname": "AlertrouterHeartbeatMissing",
        "heartbeat": "prometheus-north",
        "severity": "critical",
        "region": "north",
    }
    assert alert.starts_at == T0 + M  # silent since it was last heard from
    assert alert.annotations["summary"] == "monitoring is blind: prometheus-north silent since 08:01 UTC"
    await run_for(engine, clock, M)
    (page,) = await rows(db, OutboxRow)
    assert (page.receiver, page.reason) == ("critical-north", "first")  # the shipped routes page it like any critical
    assert page.message["headline"] == "AlertrouterHeartbeatMissing"  # as stored; messages word it:
    snapshot = MessageSnapshot.from_json(page.message)
    # what the delivery loop adds before sending: each alert's start and annotations (as stored)
    stored = {"summary": alert.annotations["summary"]}
    sent = tuple(replace(a, starts_at=alert.starts_at, annotations=stored) for a in snapshot.alerts)
    snapshot = replace(snapshot, alerts=sent)
    zh = translations("zh-CN")
    item = build_item(
        snapshot,
        fallback_severity="critical",
        clock=LocalClock(ZoneInfo("Asia/Shanghai")),
        now=clock.now,
        words=words_for("zh-CN"),
    )
    assert item.headline == "监控失明：prometheus-north"
    assert item.summary == "监控失明：prometheus-north 自 16:01 CST 起无心跳"  # the receiver's language and zone
    english = build_item(snapshot, fallback_severity="critical", clock=LocalClock(ZoneInfo("UTC")), now=clock.now)
    assert english.headline == "monitoring is blind: prometheus-north"
    (incident,) = await rows(db, IncidentRow)
    assert incident_headline(translations("en"), incident, "en") == "monitoring is blind: prometheus-north"
    assert incident_headline(zh, incident, "zh-CN") == "监控失明：prometheus-north"

    clock.now += 2 * M
    assert await hb.check_once() == {"prometheus-north": Step.KEEP}  # still silent: raised once, kept
    await hb.seen(["prometheus-north"], via="http")
    back = clock.now
    assert await hb.check_once() == {"prometheus-north": Step.RESOLVE}
    (alert,) = await blind_alerts(db)
    assert alert.status == "resolved"
    assert alert.ends_at == back
    await run_for(engine, clock, 6 * M)  # a resolve is told at the route's next group_interval
    assert [(o.receiver, o.reason) for o in await rows(db, OutboxRow)] == [
        ("critical-north", "first"),
        ("critical-north", "resolved"),
    ]
    # silent again since its return, for longer than the timeout: a new episode of the same alert
    assert await hb.check_once() == {"prometheus-north": Step.RAISE}
    assert len([e for e in await rows(db, AlertEpisodeRow) if e.fingerprint == alert.fingerprint]) == 2


async def test_the_watchdog_of_the_configured_prometheus_refreshes_it_and_only_while_firing(db: Database) -> None:
    clock = Clock()
    hb = monitor(db, clock)
    north = hb.heard(parse_webhook(watchdog("monitoring/north")).batch.alerts)
    assert (north.names, north.others, north.beats) == (frozenset({"prometheus-north"}), [], 1)
    south = parse_webhook(watchdog("monitoring/south")).batch.alerts
    assert hb.heard(south) == Heard(frozenset(), south, 0)  # another Prometheus' Watchdog: an ordinary alert
    # resolved (Alertmanager lets go of a Watchdog Prometheus stopped sending): refreshes nothing, stored neither
    resolved = hb.heard(parse_webhook(watchdog("monitoring/north", "resolved")).batch.alerts)
    assert (resolved.names, resolved.others, resolved.beats) == (frozenset(), [], 1)


async def test_a_restart_counts_the_timeout_from_its_start_and_keeps_a_raised_loss(db: Database) -> None:
    clock = Clock()
    first = monitor(db, clock, holder="a")
    await first.check_once()
    await first.seen(["prometheus-north"], via="alert")
    # alertrouter is down for an hour: the source had no one to send to
    clock.now += 60 * M
    second = monitor(db, clock, holder="b")
    assert await second.check_once() == {}  # no false alarm at the start
    clock.now += 5 * M
    assert await second.check_once() == {"prometheus-north": Step.RAISE}
    (alert,) = await blind_alerts(db)
    assert alert.starts_at == T0  # silent since its last sighting, before the restart

    # another restart while it is lost: still raised, not raised again
    clock.now += 2 * M
    third = monitor(db, clock, holder="c")
    assert await third.check_once() == {"prometheus-north": Step.KEEP}
    await third.seen(["prometheus-north"], via="alert")
    assert await third.check_once() == {"prometheus-north": Step.RESOLVE}
    episodes = await rows(db, AlertEpisodeRow)
    assert len(episodes) == 1
    assert episodes[0].ends_at is not None


async def test_two_replicas_raise_it_once(db: Database) -> None:
    clock = Clock()
    a, b = monitor(db, clock, holder="a"), monitor(db, clock, holder="b")
    await a.check_once()
    await b.check_once()
    await b.seen(["prometheus-north"], via="alert")
    clock.now += 6 * M
    steps = [await a.check_once(), await b.check_once(), await b.check_once(), await a.check_once()]
    assert steps[0] == {"prometheus-north": Step.RAISE}
    assert steps[1:3] == [{}, {}]  # b does not hold the lease
    assert steps[3] == {"prometheus-north": Step.KEEP}
    assert len(await rows(db, AlertEpisodeRow)) == 1
    # a stops (or dies): b takes over once the lease expires, and resolves it
    clock.now += M
    await b.seen(["prometheus-north"], via="http")
    assert await b.check_once() == {"prometheus-north": Step.RESOLVE}
    (alert,) = await blind_alerts(db)
    assert alert.status == "resolved"


async def test_a_heartbeat_removed_from_the_rules_has_its_raised_alert_resolved(db: Database) -> None:
    clock = Clock()
    hb = monitor(db, clock)
    await hb.check_once()
    await hb.seen(["prometheus-north"], via="alert")
    clock.now += 6 * M
    assert await hb.check_once() == {"prometheus-north": Step.RAISE}
    clock.now += M
    assert await monitor(db, clock, holder="a", configs=[]).check_once() == {"prometheus-north": Step.RESOLVE}
    (alert,) = await blind_alerts(db)
    assert alert.status == "resolved"


async def test_metrics_say_when_it_was_last_seen_and_whether_it_is_missing(db: Database) -> None:
    clock = Clock()
    metrics = Metrics()
    hb = monitor(db, clock, metrics=metrics)
    await hb.check_once()
    await hb.seen(["prometheus-north"], via="alert")
    registry = metrics.registry
    labels = {"heartbeat": "prometheus-north"}
    assert registry.get_sample_value("alertrouter_heartbeat_last_seen_timestamp_seconds", labels) == T0.timestamp()
    await hb.check_once()
    assert registry.get_sample_value("alertrouter_heartbeat_missing", labels) == 0
    clock.now += 5 * M
    await hb.check_once()
    assert registry.get_sample_value("alertrouter_heartbeat_missing", labels) == 1


async def test_statuses_show_a_never_heard_heartbeat_as_waiting_with_no_deadline(db: Database) -> None:
    clock = Clock()
    hb = monitor(db, clock)
    (status,) = await hb.statuses()
    assert status.record.last_seen is None
    assert status.deadline is None
    assert (status.state, status.waiting, status.missing) == ("waiting", True, False)
    await hb.seen(["prometheus-north"], via="alert")
    (status,) = await hb.statuses()
    assert (status.state, status.deadline) == ("ok", T0 + 5 * M)


async def test_a_stop_during_a_check_ends_the_loop_without_waiting_out_the_interval(db: Database) -> None:
    watch = monitor(db, Clock(T0))
    watch.interval = timedelta(hours=1)
    checking, release = asyncio.Event(), asyncio.Event()
    check_once = watch.check_once

    async def slow_check() -> dict[str, Step]:
        checking.set()
        await release.wait()
        return await check_once()

    watch.check_once = slow_check  # type: ignore[method-assign]
    watch.start()
    await checking.wait()
    stopping = asyncio.create_task(watch.stop())
    await asyncio.sleep(0)  # the stop is asked for while the check runs
    release.set()
    # Lost, the stop would be seen only after the next wait: an hour.
    await asyncio.wait_for(stopping, timeout=60)

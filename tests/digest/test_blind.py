"""The digest counts each heartbeat's silences in the week ("monitoring blind"), from the alert the
heartbeat monitor raised and resolved through the real ingest; on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from alertrouter.digest.send import DigestRunner, digest_targets
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.liveness.monitor import HeartbeatMonitor
from alertrouter.liveness.watch import Step
from alertrouter.message.i18n import Locale
from alertrouter.render.templates import Templates
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.ruleset.heartbeats import HeartbeatConfig
from alertrouter.store import Database
from support.passes import Clock

REPO = Path(__file__).resolve().parents[2]
WEEK = "2026-W47"  # Asia/Shanghai: 2026-11-15T16:00Z to 2026-11-22T16:00Z
NORTH = HeartbeatConfig.model_validate({"name": "prometheus-north", "matchers": ['alertname="Watchdog"']})


def t(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


async def silence(monitor: HeartbeatMonitor, clock: Clock, heard: str, back: str) -> None:
    """Heard at `heard`, then silent until `back`."""
    clock.now = t(heard)
    await monitor.seen(["prometheus-north"], via="alert")
    clock.now += timedelta(minutes=6)
    assert await monitor.check_once() == {"prometheus-north": Step.RAISE}
    clock.now = t(back)
    await monitor.seen(["prometheus-north"], via="alert")
    assert await monitor.check_once() == {"prometheus-north": Step.RESOLVE}


async def test_the_digest_says_how_often_and_how_long_monitoring_was_blind(db: Database) -> None:
    clock = Clock(t("2026-11-16T01:00"))
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    monitor = HeartbeatMonitor(db, [NORTH], ingestor.ingest, locale=Locale("zh-CN", "Asia/Shanghai"), clock=clock)
    await monitor.check_once()
    await silence(monitor, clock, "2026-11-16T01:40", "2026-11-16T02:17")  # 37 minutes
    await silence(monitor, clock, "2026-11-18T10:00", "2026-11-18T10:10")  # 10 minutes
    await silence(monitor, clock, "2026-11-24T10:00", "2026-11-24T10:30")  # the next week

    ruleset = load_ruleset(REPO / "rules", {})
    runner = DigestRunner(
        db, ruleset, compile_rules(ruleset), templates=Templates(), holder="test", clock=lambda: t("2026-11-25T01:00")
    )
    (target,) = digest_targets(ruleset)
    stats, rendered = await runner.build(target, WEEK)
    (blind,) = stats.blind
    assert (blind.heartbeat, blind.times, blind.total) == ("prometheus-north", 2, timedelta(minutes=47))
    assert "prometheus-north：2 次，共 47 分钟" in rendered.text
    assert "监控失明" in rendered.html
    _, english = await runner.build(target, WEEK, language="en")
    assert "prometheus-north: 2 times, 47m in all" in english.text

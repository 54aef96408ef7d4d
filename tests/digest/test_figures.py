"""The digest's figures against a week's stored events, seeded through the real heartbeat monitor, ingest and
engine (manual clock), on SQLite and PostgreSQL: a silence still going on when the week is previewed, a
decision that names no rule, an alert of no node. Every expected figure is worked out from the scenario."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from alertrouter.digest.send import DigestRunner, digest_targets
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.liveness.monitor import HeartbeatMonitor
from alertrouter.liveness.watch import Step
from alertrouter.message.i18n import Locale
from alertrouter.render.templates import Templates
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.ruleset.heartbeats import HeartbeatConfig
from alertrouter.store import Database
from support.digestweek import WeekDriver
from support.webhooks import webhook

REPO = Path(__file__).resolve().parents[2]
WEEK = "2026-W47"  # Asia/Shanghai: 2026-11-15T16:00Z to 2026-11-22T16:00Z
NORTH = HeartbeatConfig.model_validate({"name": "prometheus-north", "matchers": ['alertname="Watchdog"']})
M = timedelta(minutes=1)
XID = {
    "alertname": "GPUXidError",
    "Hostname": "gpu-node-01",
    "instance": "10.0.3.1:9400",
    "job": "dcgm-exporter",
    "gpu": "3",
    "xid": "79",
    "severity": "critical",
}
RULES_FAILING = {"alertname": "PrometheusRuleFailures", "job": "prometheus", "severity": "warning"}  # of no node
DISK = {"alertname": "DiskAlmostFull", "instance": "gpu-node-02:9100", "job": "node", "severity": "info"}


def t(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


async def test_every_figure_is_the_weeks_stored_events(db: Database) -> None:
    ruleset = load_ruleset(REPO / "rules", {})
    pipeline = compile_rules(ruleset)
    week = WeekDriver(db, pipeline, t("2026-11-16T01:00"))
    monitor = HeartbeatMonitor(
        db, [NORTH], week.ingestor.ingest, locale=Locale("zh-CN", "Asia/Shanghai"), clock=week.clock
    )
    await monitor.check_once()
    await monitor.seen(["prometheus-north"], via="alert")
    # Monday: an XID on gpu-node-01 for 30 minutes; its repeats wait the repeat interval ("throttled").
    week.at(t("2026-11-16T02:00"))
    await week.fire([XID])
    await week.settle(25 * M)
    week.at(t("2026-11-16T02:30"))
    await week.resolve([XID])
    await week.settle(5 * M)
    for day in ("2026-11-16T03:00", "2026-11-17T03:00"):  # an alert of no node, twice
        week.at(t(day))
        await week.fire([RULES_FAILING])
        await week.settle()
        week.at(t(day) + 10 * M)
        await week.resolve([RULES_FAILING])
        await week.settle()
    # Tuesday: an info alert Prometheus fired at 12:50 local reaches alertrouter at 13:00 (the digest's own).
    week.at(t("2026-11-17T05:00"))
    await week.ingestor.ingest(parse_webhook(webhook([DISK], starts_at=t("2026-11-17T04:50"))).batch)
    await week.settle()
    # Tuesday 21:47 local: the heartbeat falls silent; the week is previewed 13 minutes later, still silent.
    week.at(t("2026-11-17T13:47"))
    await monitor.seen(["prometheus-north"], via="alert")
    week.at(t("2026-11-17T13:53"))
    assert await monitor.check_once() == {"prometheus-north": Step.RAISE}
    await week.settle(6 * M)
    read_at = t("2026-11-17T14:00")
    runner = DigestRunner(db, ruleset, pipeline, templates=Templates(), holder="test", clock=lambda: read_at)
    (target,) = digest_targets(ruleset)

    stats, zh = await runner.build(target, WEEK)
    _, en = await runner.build(target, WEEK, language="en")

    (blind,) = stats.blind
    assert (blind.heartbeat, blind.times, blind.total) == ("prometheus-north", 1, 13 * M)  # not until Sunday
    assert "prometheus-north: 1 time, 13m in all" in en.text
    assert "prometheus-north：1 次，共 13 分钟" in zh.text
    totals = stats.totals
    # fired: the XID once, the rule failures twice, the disk once, the heartbeat's own alert once
    assert totals.fired == 5
    assert [(c.name, c.count) for c in totals.by_alertname] == [
        ("PrometheusRuleFailures", 2),
        ("AlertrouterHeartbeatMissing", 1),
        ("DiskAlmostFull", 1),
        ("GPUXidError", 1),
    ]
    # no node called "(none)" for the rule failures and the heartbeat
    assert [(c.name, c.count) for c in totals.by_node] == [("gpu-node-01", 1), ("gpu-node-02", 1)]
    assert totals.by_region == []  # none of them names one
    assert [(c.name, c.count, c.extra) for c in stats.noisiest_nodes] == [
        ("gpu-node-01", 1, "GPUXidError"),
        ("gpu-node-02", 1, "DiskAlmostFull"),
    ]
    assert {c.name: c.extra for c in stats.noisiest_alerts} == {
        "PrometheusRuleFailures": "",  # on no node
        "AlertrouterHeartbeatMissing": "",
        "DiskAlmostFull": "1",
        "GPUXidError": "1",
    }
    section = stats.receiver
    assert section is not None
    (disk,) = section.incidents
    assert disk.first_at == t("2026-11-17T04:50")  # when it started, not when its message was decided
    assert "  [info] gpu-node-02: DiskAlmostFull (from Tue 17 Nov 12:50, 2 messages)" in en.text
    mechanisms = {m.name: m for m in stats.noise.mechanisms}
    throttled = mechanisms["throttled"]
    assert (throttled.alerts, [(r.name, r.count) for r in throttled.rules]) == (
        2,
        [("repeat interval", 2)],
    )  # the XID, the disk
    for rendered in (en, zh):
        for text in (rendered.text, rendered.html):
            assert [line for line in text.splitlines() if "None" in line or "(none)" in line or "（无）" in line] == []
    assert "    repeat interval: 2\n" in en.text
    assert "        2  PrometheusRuleFailures\n" in en.text  # on no node: no "()" after it

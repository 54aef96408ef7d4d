"""The weekly digest names an alert without `alertname` (Alertmanager forwards those) by its label set,
seeded through the real ingest and engine, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from alertrouter.digest.send import DigestRunner, digest_targets
from alertrouter.render.templates import Templates
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.ruleset.schedule import zone
from alertrouter.store import Database
from support.digestweek import WeekDriver

REPO = Path(__file__).resolve().parents[2]
WEEK = "2026-W47"  # Asia/Shanghai: 2026-11-15T16:00Z to 2026-11-22T16:00Z
BACKUP = {"job": "nightly-backup", "instance": "db-1:9100", "severity": "warning", "region": "north"}
NAMED = {"alertname": "BackupFailed", "job": "weekly-backup", "instance": "db-2:9100", "severity": "warning"}


def t(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


async def test_digest_counts_a_nameless_alert_under_its_label_set(db: Database) -> None:
    ruleset = load_ruleset(REPO / "rules", {})
    week = WeekDriver(db, compile_rules(ruleset), t("2026-11-16T02:00"))
    for day in ("16", "17"):  # two episodes of the nameless one, one of the named one
        week.at(t(f"2026-11-{day}T02:00"))
        await week.fire([BACKUP])
        await week.settle()
        week.at(t(f"2026-11-{day}T03:00"))
        await week.resolve([BACKUP])
        await week.settle()
    week.at(t("2026-11-18T02:00"))
    await week.fire([NAMED])
    await week.settle()
    runner = DigestRunner(
        db, ruleset, compile_rules(ruleset), templates=Templates(), holder="test", clock=lambda: t("2026-11-23T01:00")
    )
    (target,) = digest_targets(ruleset)
    stats = await runner.stats(target, WEEK, zone("Asia/Shanghai"))
    names = {c.name: c.count for c in stats.totals.by_alertname}
    assert names == {
        '{instance="db-1:9100", job="nightly-backup", region="north", severity="warning"}': 2,
        "BackupFailed": 1,
    }

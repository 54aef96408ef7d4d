"""The digest's numbers against a week seeded through the real ingest and engine (manual clock), on
SQLite and PostgreSQL. Every expected number is worked out below from the scenario, not read back
from the code under test."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from alertrouter.digest.send import DigestRunner, digest_targets
from alertrouter.digest.types import DigestStats
from alertrouter.render.templates import Templates
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.ruleset.schedule import zone
from alertrouter.store import Database
from alertrouter.store.actions import acknowledge_incident
from alertrouter.store.tables import AlertEventRow, IncidentRow, OutboxRow
from support.digestweek import WeekDriver

REPO = Path(__file__).resolve().parents[2]
WEEK = "2026-W47"  # Asia/Shanghai: 2026-11-15T16:00Z to 2026-11-22T16:00Z
HOSTILE = "<img src=x onerror=alert(1)>"


def t(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def gpu(node: str, n: int, alertname: str = "GPUHighTemp", severity: str = "warning", **extra: str) -> dict[str, str]:
    labels = {"alertname": alertname, "Hostname": node, "gpu": str(n), "job": "dcgm", "severity": severity}
    return {**labels, "region": "north", **extra}


A = gpu("node-01", 0)
B = gpu("node-02", 1)
XID48 = gpu("node-03", 0, "GPUXidError", "critical", xid="48")
XID13 = gpu("node-03", 2, "GPUXidError", "critical", xid="13")
XID31 = gpu("node-04", 1, "GPUXidError", "critical", xid="31")
DOWN = {"alertname": "NodeDown", "instance": "node-05:9100", "job": "node", "severity": "critical", "region": "north"}
N5 = [gpu("node-05", g) for g in range(4)]
N7 = [gpu("node-07", g) for g in range(4)]
DISK = {"alertname": "DiskAlmostFull", "instance": "node-06:9100", "severity": "info", "region": HOSTILE}
LATER = gpu("node-08", 0)


async def seed(db: Database) -> DigestRunner:
    ruleset = load_ruleset(REPO / "rules", {})
    pipeline = compile_rules(ruleset)
    week = WeekDriver(db, pipeline, t("2026-11-10T02:00"))

    async def fire(at: str, *labels: dict[str, str]) -> None:
        week.at(t(at))
        await week.fire(list(labels))
        await week.settle()

    async def resolve(at: str, *labels: dict[str, str]) -> None:
        week.at(t(at))
        await week.resolve(list(labels))
        await week.settle()
        # Time passes: the shipped `stale:` rule tells a resolve once its hold is over (2 minutes for one
        # alert, 20 for several of one exporter resolving together), as a running engine would.
        week.at(t(at) + timedelta(minutes=3 if len(labels) == 1 else 21))
        await week.settle()

    await fire("2026-11-10T02:00", A)  # the week before: A is a recurring alert in W47
    await resolve("2026-11-10T02:30", A)
    await fire("2026-11-16T02:00", A)  # Monday
    await resolve("2026-11-16T02:30", A)
    for minute in (0, 20, 40):  # Tuesday: B flaps, three 10-minute episodes
        await fire(f"2026-11-17T02:{minute:02d}", B)
        await resolve(f"2026-11-17T02:{minute + 10:02d}", B)
    await fire("2026-11-18T02:00", XID48)
    await resolve("2026-11-18T03:00", XID48)
    await fire("2026-11-19T02:00", XID13)
    await resolve("2026-11-19T04:00", XID13)
    await fire("2026-11-19T05:00", XID31)
    await resolve("2026-11-19T05:30", XID31)
    await fire("2026-11-20T02:00", DOWN, *N5)  # Friday: node-05 down, its GPU alerts inhibited
    async with db.write() as session:
        key = (await session.scalars(select(IncidentRow.id).where(IncidentRow.key.contains("NodeDown")))).one()
        assert await acknowledge_incident(session, incident_id=key, by="alice", now=t("2026-11-20T02:15"))
        await session.commit()
    await fire("2026-11-21T02:00", *N7)  # Saturday
    await resolve("2026-11-21T03:00", *N7)
    await fire("2026-11-21T04:00", DISK)  # info: routed to weekly-digest
    await fire("2026-11-23T00:00", LATER)  # Monday 08:00 local: next week, not counted
    return DigestRunner(
        db, ruleset, pipeline, templates=Templates(), holder="test", clock=lambda: t("2026-11-23T01:00")
    )


@pytest.fixture
async def seeded(db: Database) -> tuple[DigestRunner, DigestStats]:
    runner = await seed(db)
    (target,) = digest_targets(load_ruleset(REPO / "rules", {}))
    return runner, await runner.stats(target, WEEK, zone("Asia/Shanghai"))


async def test_totals(seeded: tuple[DigestRunner, DigestStats]) -> None:
    _, stats = seeded
    totals = stats.totals
    # fired: A 1 + B 3 + XID 3 + NodeDown 1 + node-05 GPUs 4 + node-07 GPUs 4 + disk 1
    assert totals.fired == 17
    assert (totals.distinct_alerts, totals.new_alerts, totals.recurring_alerts) == (15, 14, 1)
    assert totals.open_at_end == 6  # NodeDown, node-05's 4 GPUs, the disk
    assert [(c.name, c.count) for c in totals.by_severity] == [("critical", 4), ("warning", 12), ("info", 1)]
    assert [(c.name, c.count) for c in totals.by_region] == [("north", 16), (HOSTILE, 1)]
    assert [(c.name, c.count) for c in totals.by_alertname] == [
        ("GPUHighTemp", 12),
        ("GPUXidError", 3),
        ("DiskAlmostFull", 1),
        ("NodeDown", 1),
    ]
    assert [(c.name, c.count) for c in stats.noisiest_nodes] == [
        ("node-05", 5),
        ("node-07", 4),
        ("node-02", 3),
        ("node-03", 2),
        ("node-01", 1),
        ("node-04", 1),
        ("node-06", 1),
    ]
    assert stats.noisiest_alerts[0].extra == "4"  # nodes: GPUHighTemp on node-01, -02, -05 and -07
    assert [d.total for d in stats.per_day] == [1, 3, 1, 2, 5, 5, 0]  # local days Mon..Sun (Sat's disk at 12:00)
    assert stats.per_day[0].day.isoformat() == "2026-11-16"
    assert stats.hours == 168


async def test_flapping_and_gpu_faults(seeded: tuple[DigestRunner, DigestStats]) -> None:
    _, stats = seeded
    assert [(f.alertname, f.node, f.detail, f.episodes) for f in stats.flapping] == [
        ("GPUHighTemp", "node-02", "gpu 1", 3)
    ]
    # node-03: XID 48 on GPU 0 (Wed) and XID 13 on GPU 2 (Thu); node-04: XID 31 on GPU 1 (Thu). One fault is
    # listed too (a node's mean time between faults needs no repeat): 168 h / 2 = 84 h, 168 h / 1 = 168 h.
    assert [(n.node, n.faults, n.gpus, n.codes, n.mtbf) for n in stats.gpu_faults] == [
        ("node-03", 2, ["0", "2"], [13, 48], timedelta(hours=84)),
        ("node-04", 1, ["1"], [31], timedelta(hours=168)),
    ]
    assert stats.rma == []  # no UUID label on these GPUs: nothing an RMA could name


async def test_time_to_resolve_and_acknowledge(seeded: tuple[DigestRunner, DigestStats]) -> None:
    _, stats = seeded
    m = timedelta(minutes=1)
    resolve = {r.name: (r.resolved, r.mean, r.median) for r in stats.resolve}
    # resolved in the week: A 30m, B 3 x 10m, XIDs 60m, 120m, 30m, node-07 4 x 60m
    assert resolve["all"] == (11, 510 / 11 * m, 60 * m)  # sorted, the 6th of 11 is 60m
    assert resolve["critical"] == (3, 70 * m, 60 * m)
    assert resolve["warning"] == (8, 37.5 * m, 45 * m)
    ack = {a.name: (a.acknowledged, a.mean) for a in stats.ack}
    assert ack["all"] == (1, 15 * m)
    assert ack["critical"] == (1, 15 * m)


async def test_noise_reduction(db: Database, seeded: tuple[DigestRunner, DigestStats]) -> None:
    _, stats = seeded
    noise = stats.noise
    assert noise.alert_changes == 28  # 17 firings + 11 resolutions
    assert (noise.payloads, noise.payload_alerts) == (18, 28)
    inhibited = {m.name: m for m in noise.mechanisms}["inhibited"]
    assert inhibited.alerts == 4
    assert [(r.name, r.count) for r in inhibited.rules] == [("node-down-mutes-node", 4)]
    start, end = t("2026-11-15T16:00"), t("2026-11-22T16:00")
    async with db.read() as session:
        intended = (
            await session.execute(select(func.count()).where(OutboxRow.created_at >= start, OutboxRow.created_at < end))
        ).scalar_one()
        events = (
            await session.execute(
                select(AlertEventRow.fingerprint, AlertEventRow.detail).where(
                    AlertEventRow.kind == "decision", AlertEventRow.at >= start, AlertEventRow.at < end
                )
            )
        ).all()
    assert noise.messages_intended == intended > 0
    by_mechanism: dict[str, set[str]] = {}
    for fp, detail in events:
        by_mechanism.setdefault(detail["decision"], set()).add(fp)
    for m in noise.mechanisms:
        assert m.alerts == len(by_mechanism[m.name]), m.name
    assert noise.messages_sent == 0  # no delivery loop ran


async def test_receiver_section(seeded: tuple[DigestRunner, DigestStats]) -> None:
    _, stats = seeded
    section = stats.receiver
    assert section is not None
    assert section.receiver == "weekly-digest"
    assert [i.severity for i in section.incidents] == ["info"]
    assert "DiskAlmostFull" in section.incidents[0].headline
    assert section.messages == sum(c.count for c in section.by_reason) >= 1


async def test_html_escapes_label_values_and_text_has_the_numbers(seeded: tuple[DigestRunner, DigestStats]) -> None:
    runner, _ = seeded
    target = runner.targets["weekly-digest"]
    _, rendered = await runner.build(target, WEEK)
    assert HOSTILE not in rendered.html
    assert "&lt;img src=x onerror=alert(1)&gt;" in rendered.html
    assert "<script" not in rendered.html.lower()
    assert [c.cid for c in rendered.charts] == ["alerts-per-day", "noise", "top-nodes"]
    for chart in rendered.charts:
        assert chart.png.startswith(b"\x89PNG\r\n\x1a\n")
        assert f'src="cid:{chart.cid}"' in rendered.html
    # the shipped rules write the digest in zh-CN: the catalogue's msgstr of "alerts fired (episodes)",
    # "%(node)s: %(num)s faults, GPU %(gpus)s, XID %(xids)s, MTBF %(mtbf)s", "%(hours)s h" and the subject's
    assert re.search(r"^  触发的告警（次） +17$", rendered.text, re.MULTILINE)
    assert "  node-03：2 次故障，GPU 0, 2，XID 13, 48，平均故障间隔 84.0 小时" in rendered.text.splitlines()
    assert rendered.subject.startswith("告警周报 2026-W47：告警 17 次")
    _, english = await runner.build(target, WEEK, language="en")
    assert "alerts fired (episodes)       17" in english.text
    assert "  node-03: 2 faults, GPU 0, 2, XID 13, 48, MTBF 84.0 h" in english.text.splitlines()
    # one section about XIDs, not two that count differently (alerts there, deduplicated faults here)
    assert "HARDWARE SUSPECTS" not in english.text
    assert "Hardware suspects" not in english.html
    assert english.text.count("node-03:") == 1
    assert english.subject.startswith("Weekly alert digest 2026-W47: 17 alerts")


async def test_escalations(seeded: tuple[DigestRunner, DigestStats]) -> None:
    runner, stats = seeded
    # critical incidents opened in the week, each a chain of the shipped critical-unacked policy: node-03's
    # XID 48 and (after it resolved) its XID 13, node-04's XID 31, node-05's NodeDown. None reached a step:
    # the XIDs resolved and NodeDown was acknowledged (15 minutes in) before a pass ran past 10 minutes.
    assert stats.escalations == {0: 4}
    _, rendered = await runner.build(runner.targets["weekly-digest"], WEEK, language="en")
    assert "ESCALATIONS (4 incidents under an escalation policy)" in rendered.text
    assert "no incident reached an escalation step" in rendered.text

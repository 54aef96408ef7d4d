"""The scheduler: a digest missed while the service was down goes out once on start (and not again on
the next start), two replicas racing send one email, jobs are registered for the schedule, and the
hourly housekeeping prunes old history only."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from alertrouter.digest.period import next_send
from alertrouter.digest.send import DigestRunner
from alertrouter.metrics import Metrics
from alertrouter.process.scheduler import Scheduler
from alertrouter.render.templates import Templates
from alertrouter.ruleset import Ruleset, load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.store import Database, retention
from alertrouter.store.tables import (
    AlertEventRow,
    AlertRow,
    DeliveryRow,
    LeaseRow,
    NodeAliasRow,
    OutboxRow,
    RevokedSessionRow,
    ScheduledRunRow,
    UsedTokenRow,
)
from support.fakes.smtp import FakeSmtp

SEND = datetime(2026, 11, 23, 1, 0, tzinfo=UTC)  # W47's digest: Monday 09:00 Shanghai
WAIT = 30.0  # seconds to wait for a tick that runs at once; a guard against hanging, not a measurement


def rules(tmp_path: Path, port: int) -> Ruleset:
    (tmp_path / "rules.yml").write_text(
        f"""\
route: {{receiver: digest}}
receivers:
  - name: digest
    digest: {{channel: mail, to: [ops@example.com], schedule: "mon 09:00", timezone: Asia/Shanghai}}
channels:
  - {{name: mail, type: email, host: 127.0.0.1, port: {port}, security: none, from: alertrouter@example.com}}
"""
    )
    return load_ruleset(tmp_path, env={})


def alert_with_events(fingerprint: str, since: datetime, events_at: list[datetime]) -> list[object]:
    """An alert first seen at `since`, and a history event at each of `events_at` (add the alert first)."""
    alert = AlertRow(
        fingerprint=fingerprint,
        alertname="X",
        status="resolved",
        labels={},
        annotations={},
        starts_at=since,
        first_seen=since,
        last_seen=since,
        updated_at=since,
    )
    events = [AlertEventRow(fingerprint=fingerprint, kind="firing", at=at, episode_starts_at=since) for at in events_at]
    return [alert, *events]


def scheduler(db: Database, ruleset: Ruleset, holder: str, now: datetime, metrics: Metrics | None = None) -> Scheduler:
    def clock() -> datetime:
        return now

    digests = DigestRunner(db, ruleset, compile_rules(ruleset), templates=Templates(), holder=holder, clock=clock)
    return Scheduler(db, digests, metrics=metrics, holder=holder, clock=clock)


@pytest.fixture
def sink() -> Iterator[FakeSmtp]:
    with FakeSmtp() as smtp:
        yield smtp


async def start_and_tick(s: Scheduler) -> None:
    s.start()
    try:
        await asyncio.wait_for(s.ticked.wait(), WAIT)
    finally:
        await s.stop()


async def test_missed_digest_is_sent_once_on_start(db: Database, sink: FakeSmtp, tmp_path: Path) -> None:
    ruleset = rules(tmp_path, sink.port)
    metrics = Metrics()
    await start_and_tick(scheduler(db, ruleset, "first", SEND - timedelta(days=4)))  # in use since Thursday
    down_over = SEND + timedelta(days=1, hours=3)  # then down through Monday 09:00
    await start_and_tick(scheduler(db, ruleset, "first", down_over, metrics))
    assert len(sink.messages) == 1
    assert "2026-W47" in sink.messages[0]["Subject"]
    sample = metrics.registry.get_sample_value(
        "alertrouter_scheduled_runs_total", {"job": "digest:digest", "result": "sent"}
    )
    assert sample == 1
    await start_and_tick(scheduler(db, ruleset, "second", down_over + timedelta(minutes=2)))  # restarted
    assert len(sink.messages) == 1
    async with db.read() as session:
        run = (await session.scalars(select(ScheduledRunRow).where(ScheduledRunRow.job == "digest:digest"))).one()
    assert (run.period, run.status, run.holder) == ("2026-W47", "done", "first")


async def test_a_fresh_install_sends_no_digest_of_a_week_it_never_saw(
    db: Database, sink: FakeSmtp, tmp_path: Path
) -> None:
    """Installed on Monday 08:59: W46 and W47 were over before it started and are never sent (not at
    start, not at 09:00, not after a restart); the first digest is W48's, the first week it saw."""
    ruleset = rules(tmp_path, sink.port)
    await start_and_tick(scheduler(db, ruleset, "a", SEND - timedelta(minutes=1)))
    await start_and_tick(scheduler(db, ruleset, "a", SEND))
    await start_and_tick(scheduler(db, ruleset, "b", SEND + timedelta(days=3)))  # restarted
    assert sink.messages == []
    await start_and_tick(scheduler(db, ruleset, "b", SEND + timedelta(days=7)))
    assert [m["Subject"].split(":")[0] for m in sink.messages] == ["Weekly alert digest 2026-W48"]


async def installed_before(db: Database, ruleset: Ruleset) -> None:
    """The store in use since before W47 began (Monday of W46), as the other tests need."""
    await scheduler(db, ruleset, "installer", SEND - timedelta(days=8))._installed_at()


async def test_two_schedulers_racing_send_one_email(db: Database, sink: FakeSmtp, tmp_path: Path) -> None:
    ruleset = rules(tmp_path, sink.port)
    await installed_before(db, ruleset)
    other = Database(db.url.render_as_string(hide_password=False))
    try:
        a = scheduler(db, ruleset, "a", SEND)
        b = scheduler(other, ruleset, "b", SEND)
        await asyncio.gather(a.tick(), b.tick(), a.tick(), b.tick())
        target = a.digests.targets["digest"]
        await asyncio.gather(a.run_due(target), b.run_due(target))  # two leaders at once: the claim holds
    finally:
        await other.dispose()
    assert len(sink.messages) == 1
    async with db.read() as session:
        lease = (await session.scalars(select(LeaseRow).where(LeaseRow.name == "scheduler"))).one()
    assert lease.holder in ("a", "b")


async def test_jobs_follow_the_schedule(db: Database, sink: FakeSmtp, tmp_path: Path) -> None:
    s = scheduler(db, rules(tmp_path, sink.port), "a", SEND)
    s.start()
    try:
        runs = s.next_runs()
    finally:
        await s.stop()
    target = s.digests.targets["digest"]
    expected = next_send(datetime.now(UTC) - timedelta(microseconds=1), target.schedule, target.tz)[1]
    assert runs["digest:digest"] == expected
    assert {"digest:digest", "tick", "housekeeping"} <= set(runs)


async def test_housekeeping_prunes_old_history_only(db: Database, tmp_path: Path) -> None:
    now = datetime(2026, 11, 23, 3, 0, tzinfo=UTC)
    old, recent = now - timedelta(days=91), now - timedelta(days=89)
    async with db.write() as session:
        alert, *events = alert_with_events("f1", old, [old, recent])
        session.add(alert)
        await session.flush()
        session.add_all(events)
        for created, status in ((old, "dispatched"), (old, "pending"), (recent, "dispatched")):
            session.add(
                OutboxRow(
                    incident_key="k",
                    receiver="r",
                    reason="first",
                    created_at=created,
                    message={},
                    status=status,
                    next_attempt_at=created,
                )
            )
        for created, status in ((old, "sent"), (old, "pending"), (recent, "sent")):
            session.add(
                DeliveryRow(
                    receiver="r",
                    channel="c",
                    kind="firing",
                    severity="info",
                    severity_rank=2,
                    message={},
                    status=status,
                    created_at=created,
                    next_attempt_at=created,
                )
            )
        session.add(
            UsedTokenRow(nonce="n1", action="ack", incident_id=1, used_at=old, expires_at=now - timedelta(hours=1))
        )
        session.add(
            UsedTokenRow(nonce="n2", action="ack", incident_id=1, used_at=now, expires_at=now + timedelta(hours=1))
        )
        for sid, expires in (("s-gone", now - timedelta(hours=1)), ("s-live", now + timedelta(hours=1))):
            session.add(RevokedSessionRow(session_id=sid, username="u", revoked_at=old, expires_at=expires))
        for address, seen in (("10.0.0.7", now - timedelta(days=8)), ("10.0.0.8", now - timedelta(days=6))):
            session.add(
                NodeAliasRow(
                    address=address,
                    node="n",
                    first_seen=seen,
                    last_seen=seen,
                    learned_from="GPUXidError",
                    fingerprint="f",
                )
            )  # learned_alias_ttl: 7d by default
        await session.commit()
    s = scheduler(db, rules(tmp_path, 25), "a", now)
    await s.housekeeping()
    await s.housekeeping()  # the same hour: claimed already, nothing more

    async def count(model: type[object]) -> int:
        async with db.read() as session:
            return int((await session.execute(select(func.count()).select_from(model))).scalar_one())

    assert await count(AlertEventRow) == 1
    assert await count(OutboxRow) == 2  # the recent one and the old pending one
    assert await count(DeliveryRow) == 2
    assert await count(UsedTokenRow) == 1
    assert await count(RevokedSessionRow) == 1
    assert await count(NodeAliasRow) == 1
    async with db.read() as session:
        (run,) = (await session.scalars(select(ScheduledRunRow))).all()
    assert (run.job, run.period, run.status) == ("housekeeping", "2026-11-23T03", "done")
    assert run.detail == {
        "alert_events": 1,
        "deliveries": 1,
        "outbox": 1,
        "scheduled_runs": 0,
        "used_tokens": 1,
        "revoked_sessions": 1,
        "node_aliases": 1,
        "login_failures": 0,
    }


async def test_housekeeping_prunes_a_large_event_backlog_in_chunks(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retention, "EVENTS_CHUNK", 2)
    now = datetime(2026, 11, 23, 3, 0, tzinfo=UTC)
    old, recent = now - timedelta(days=91), now - timedelta(days=1)
    async with db.write() as session:
        alert, *events = alert_with_events("f1", old, [old] * 5 + [recent])
        session.add(alert)
        await session.flush()
        session.add_all(events)
        await session.commit()
    await scheduler(db, rules(tmp_path, 25), "a", now).housekeeping()
    async with db.read() as session:
        left = (await session.scalars(select(AlertEventRow.at))).all()
        (run,) = (await session.scalars(select(ScheduledRunRow))).all()
    assert left == [recent]  # five old ones, two at a time
    assert run.detail is not None
    assert run.detail["alert_events"] == 5

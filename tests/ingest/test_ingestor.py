"""The ingest orchestrator against real databases: SQLite and PostgreSQL, every test on both."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from sqlalchemy import func, select

import alertrouter.ingest.writer as writer_module
from alertrouter.ingest.batch import IngestBatch
from alertrouter.ingest.maintenance import Maintenance
from alertrouter.ingest.payloads import parse_api_v2, parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.store import Database, is_outage, queries, retention
from alertrouter.store.tables import AlertEpisodeRow, AlertEventRow, AlertRow, RawEventRow
from alertrouter.transitions import Transition
from support.counting import Commits, Sessions
from support.integrity import dangling_history

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
T0 = datetime(2026, 11, 21, 8, 20, tzinfo=UTC)


@pytest.fixture(autouse=True)
async def _history_points_at_stored_rows(db: Database) -> AsyncIterator[None]:
    """After every workload here (races, retries, pruning included): nothing dangles."""
    yield
    assert await dangling_history(db) == {"episodes": 0, "events": 0, "raw links": 0}


class Clock:
    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def webhook(alerts: list[dict[str, Any]], **extra: Any) -> IngestBatch:
    data = {
        "version": "4",
        "receiver": "alertrouter",
        "status": "firing",
        "groupKey": "g",
        "alerts": alerts,
        **extra,
    }
    return parse_webhook(json.dumps(data).encode()).batch


def gpu_alert(gpu: int, status: str = "firing", starts: str = "2026-11-21T08:00:00Z", **kw: Any) -> dict[str, Any]:
    return {
        "status": status,
        "labels": {
            "alertname": "GPUHighTemp",
            "Hostname": "gpu-node-07",
            "gpu": str(gpu),
            "severity": "warning",
        },
        "annotations": kw.pop("annotations", {"summary": "hot"}),
        "startsAt": starts,
        "endsAt": kw.pop("ends", "0001-01-01T00:00:00Z"),
        **kw,
    }


async def count(db: Database, model: type[Any]) -> int:
    async with db.read() as s:
        return int(await s.scalar(select(func.count()).select_from(model)) or 0)


async def alert_row(db: Database, fp: str) -> AlertRow:
    async with db.read() as s:
        row = await queries.get_alert(s, fingerprint=fp)
        assert row is not None
        return row


async def test_fixture_webhook_is_stored_with_history(db: Database) -> None:
    ingestor = Ingestor(db, TouchBuffer(), clock=Clock())
    batch = parse_webhook((FIXTURES / "webhook_gpu_temp_firing.json").read_bytes()).batch
    result = await ingestor.ingest(batch)
    assert result.transitions == {Transition.NEW_FIRING: 2, Transition.NEW_RESOLVED: 1}
    assert await count(db, AlertRow) == 3
    assert await count(db, AlertEpisodeRow) == 3
    assert await count(db, RawEventRow) == 1
    row = await alert_row(db, "1a2b3c4d5e6f7081")
    assert row.status == "firing"
    assert row.labels["UUID"] == "GPU-5fd4c9a1-8e3b-4f0e-9d0a-7a1c2b3d4e50"
    assert row.starts_at == datetime(2026, 11, 21, 8, 14, 3, 517889, tzinfo=UTC)
    assert row.first_seen == T0
    resolved = await alert_row(db, "c0ffee00c0ffee02")
    assert (resolved.status, resolved.resolved_by) == ("resolved", "source")
    async with db.read() as s:
        raw = (await s.scalars(select(RawEventRow))).one()
    assert raw.receiver == "alertrouter"
    assert json.loads(raw.body)["groupKey"] == batch.group_key  # the original body, for replay


async def test_lifecycle_firing_resolved_refired(db: Database) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    first = webhook([gpu_alert(0)])
    fp = first.alerts[0].fingerprint
    await ingestor.ingest(first)
    clock.now += timedelta(minutes=5)
    await ingestor.ingest(webhook([gpu_alert(0, "resolved", ends="2026-11-21T08:24:00Z")], status="resolved"))
    row = await alert_row(db, fp)
    assert (row.status, row.ends_at) == ("resolved", datetime(2026, 11, 21, 8, 24, tzinfo=UTC))
    clock.now += timedelta(minutes=30)
    await ingestor.ingest(webhook([gpu_alert(0, starts="2026-11-21T08:50:00Z")]))
    row = await alert_row(db, fp)
    assert (row.status, row.episodes, row.ends_at) == ("firing", 2, None)
    async with db.read() as s:
        episodes = await queries.get_episodes(s, fingerprint=fp)
        events = await queries.get_events(s, fingerprint=fp)
    assert [(e.starts_at.minute, e.ends_at is None, e.resolved_by) for e in episodes] == [
        (50, True, None),
        (0, False, "source"),
    ]
    assert [e.kind for e in events] == ["refired", "resolved", "firing"]


async def test_unchanged_resend_writes_nothing(db: Database) -> None:
    clock = Clock()
    touches = TouchBuffer()
    ingestor = Ingestor(db, touches, clock=clock)
    batch = webhook([gpu_alert(g) for g in range(8)])
    await ingestor.ingest(batch)
    clock.now += timedelta(minutes=1)
    again = await ingestor.ingest(batch)
    assert again.repeat  # recognised without touching the database
    # a second replica has no memory of the payload; it reads, finds nothing changed, writes nothing
    other = Ingestor(db, TouchBuffer(), clock=clock)
    result = await other.ingest(batch)
    assert result.transitions == {Transition.UNCHANGED: 8}
    assert result.written == 0
    assert await count(db, RawEventRow) == 1
    assert await count(db, AlertEventRow) == 8
    # last_seen moves only when the buffered refreshes are flushed
    row = await alert_row(db, batch.alerts[0].fingerprint)
    assert row.last_seen == T0
    await Maintenance(db, touches, interval=timedelta(seconds=5), retention=timedelta(days=7), clock=clock).flush()
    row = await alert_row(db, batch.alerts[0].fingerprint)
    assert row.last_seen == T0 + timedelta(minutes=1)
    assert row.updated_at == T0


async def test_ha_twin_and_late_duplicates_change_nothing(db: Database) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    firing = webhook([gpu_alert(1)], externalURL="http://am-0:9093")
    await ingestor.ingest(firing)
    resolved = webhook([gpu_alert(1, "resolved", ends="2026-11-21T08:30:00Z")], status="resolved")
    await ingestor.ingest(resolved)
    # the other Alertmanager of the pair sends the old firing notification late
    late = await Ingestor(db, TouchBuffer(), clock=clock).ingest(
        webhook([gpu_alert(1)], externalURL="http://am-1:9093")
    )
    assert late.transitions == {Transition.STALE: 1}
    row = await alert_row(db, firing.alerts[0].fingerprint)
    assert (row.status, row.episodes) == ("resolved", 1)


async def test_concurrent_identical_posts_store_one_alert_one_episode(db: Database) -> None:
    batch = webhook([gpu_alert(3)])
    # ten replicas (no shared memory) racing on the same payload
    ingestors = [Ingestor(db, TouchBuffer(), clock=Clock()) for _ in range(10)]
    results = await asyncio.gather(*(i.ingest(batch) for i in ingestors))
    assert sum(r.transitions[Transition.NEW_FIRING] for r in results) == 1
    assert await count(db, AlertRow) == 1
    assert await count(db, AlertEpisodeRow) == 1
    assert await count(db, AlertEventRow) == 1
    assert await count(db, RawEventRow) == 1


async def test_api_v2_refresh_extends_then_expiry_resolves_then_revives(db: Database) -> None:
    clock = Clock()
    touches = TouchBuffer()
    ingestor = Ingestor(db, touches, clock=clock)
    maintenance = Maintenance(db, touches, interval=timedelta(seconds=5), retention=timedelta(days=7), clock=clock)
    push = json.dumps(
        [{"labels": {"alertname": "NodeDown", "instance": "10.0.0.7:9100"}, "startsAt": "2026-11-21T08:19:00Z"}]
    ).encode()
    first = await ingestor.ingest(parse_api_v2(push, now=clock.now).batch)
    assert first.transitions == {Transition.NEW_FIRING: 1}
    fp = parse_api_v2(push, now=clock.now).batch.alerts[0].fingerprint
    # Prometheus re-sends a minute later: only endsAt moves, and nothing is logged
    clock.now += timedelta(minutes=1)
    second = await ingestor.ingest(parse_api_v2(push, now=clock.now).batch)
    assert second.transitions == {Transition.EXTENDED: 1}
    assert await count(db, RawEventRow) == 1
    await maintenance.run_once()
    assert (await alert_row(db, fp)).ends_at == clock.now + timedelta(minutes=5)
    # then Prometheus goes quiet: the alert resolves when endsAt passes
    clock.now += timedelta(minutes=6)
    await maintenance.run_once()
    row = await alert_row(db, fp)
    assert (row.status, row.resolved_by) == ("resolved", "timeout")
    # and comes back with the same episode: revived, not a new episode
    third = await ingestor.ingest(parse_api_v2(push, now=clock.now).batch)
    assert third.transitions == {Transition.REVIVED: 1}
    row = await alert_row(db, fp)
    assert (row.status, row.episodes, row.resolved_by) == ("firing", 1, None)
    async with db.read() as s:
        kinds = [e.kind for e in await queries.get_events(s, fingerprint=fp)]
    assert kinds == ["revived", "expired", "firing"]


async def test_buffered_refresh_does_not_extend_a_resolved_alert(db: Database) -> None:
    clock = Clock()
    touches = TouchBuffer()
    ingestor = Ingestor(db, touches, clock=clock)
    maintenance = Maintenance(db, touches, interval=timedelta(seconds=5), retention=timedelta(days=7), clock=clock)
    push = b'[{"labels": {"alertname": "NodeDown"}, "startsAt": "2026-11-21T08:19:00Z"}]'
    await ingestor.ingest(parse_api_v2(push, now=clock.now).batch)
    clock.now += timedelta(minutes=1)
    await ingestor.ingest(parse_api_v2(push, now=clock.now).batch)  # buffered extension
    resolve = json.dumps(
        [{"labels": {"alertname": "NodeDown"}, "startsAt": "2026-11-21T08:19:00Z", "endsAt": "2026-11-21T08:21:00Z"}]
    ).encode()
    clock.now += timedelta(seconds=30)
    await ingestor.ingest(parse_api_v2(resolve, now=clock.now).batch)
    await maintenance.flush()
    row = await alert_row(db, parse_api_v2(push, now=clock.now).batch.alerts[0].fingerprint)
    assert (row.status, row.ends_at) == ("resolved", datetime(2026, 11, 21, 8, 21, tzinfo=UTC))


async def test_same_fingerprint_twice_in_one_batch(db: Database) -> None:
    ingestor = Ingestor(db, TouchBuffer(), clock=Clock())
    batch = webhook([gpu_alert(5), gpu_alert(5, "resolved", ends="2026-11-21T08:10:00Z")])
    result = await ingestor.ingest(batch)
    assert result.transitions == {Transition.NEW_FIRING: 1, Transition.RESOLVED: 1}
    row = await alert_row(db, batch.alerts[0].fingerprint)
    assert (row.status, row.episodes) == ("resolved", 1)
    assert await count(db, AlertEpisodeRow) == 1


async def test_raw_events_pruned_after_retention(db: Database) -> None:
    clock = Clock()
    touches = TouchBuffer()
    ingestor = Ingestor(db, touches, clock=clock)
    await ingestor.ingest(webhook([gpu_alert(6)]))
    clock.now += timedelta(days=8)
    await ingestor.ingest(webhook([gpu_alert(7)]))
    await Maintenance(db, touches, interval=timedelta(seconds=5), retention=timedelta(days=7), clock=clock).run_once()
    assert await count(db, RawEventRow) == 1
    # the history survives the raw log: its link is cleared, not the event
    assert await count(db, AlertEventRow) == 2


async def test_a_large_raw_backlog_is_pruned_in_short_transactions(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retention, "RAW_CHUNK", 3)
    clock = Clock()
    touches = TouchBuffer()
    ingestor = Ingestor(db, touches, clock=clock)
    for gpu in range(7):
        await ingestor.ingest(webhook([gpu_alert(gpu)]))
    clock.now += timedelta(days=8)
    await ingestor.ingest(webhook([gpu_alert(7)]))
    commits = Commits(db)
    await Maintenance(db, touches, interval=timedelta(seconds=5), retention=timedelta(days=7), clock=clock).run_once()
    assert await count(db, RawEventRow) == 1  # the recent one
    assert commits.count == 1 + 3  # the expiry check, then 7 old ones three at a time
    async with db.read() as s:
        links = (await s.scalars(select(AlertEventRow.raw_event_id).order_by(AlertEventRow.id))).all()
    assert links[:7] == [None] * 7
    assert links[7] is not None


async def test_concurrent_payloads_share_one_commit_and_keep_their_own_results(db: Database) -> None:
    commits = Commits(db)
    ingestor = Ingestor(db, TouchBuffer(), clock=Clock())
    batches = [webhook([gpu_alert(g, starts=f"2026-11-21T08:{g:02d}:00Z")], groupKey=f"g{g}") for g in range(20)]
    resolve = webhook([gpu_alert(0, "resolved", starts="2026-11-21T08:00:00Z", ends="2026-11-21T08:30:00Z")])
    results = await asyncio.gather(*(ingestor.ingest(b) for b in [*batches, resolve]))
    assert commits.count <= 2  # 21 payloads, written together rather than one transaction each
    assert [r.transitions for r in results[:20]] == [{Transition.NEW_FIRING: 1}] * 20
    assert results[20].transitions == {Transition.RESOLVED: 1}  # applied after the firing, in arrival order
    assert all(r.raw_event_id is not None for r in results)
    assert len({r.raw_event_id for r in results}) == 21
    assert await count(db, RawEventRow) == 21
    assert (await alert_row(db, batches[0].alerts[0].fingerprint)).status == "resolved"


async def test_firing_and_its_resolve_racing_from_two_replicas_end_resolved(db: Database) -> None:
    # Two replicas (or, on PostgreSQL, two writers of one) commit the same alert's firing and resolve
    # concurrently: whichever lands first, the sender's resolve wins and there is one episode.
    for gpu in range(6):
        firing = webhook([gpu_alert(gpu)])
        resolve = webhook([gpu_alert(gpu, "resolved", ends="2026-11-21T08:30:00Z")], status="resolved")
        first, second = (firing, resolve) if gpu % 2 else (resolve, firing)
        a, b = Ingestor(db, TouchBuffer(), clock=Clock()), Ingestor(db, TouchBuffer(), clock=Clock())
        await asyncio.gather(a.ingest(first), b.ingest(second))
        row = await alert_row(db, firing.alerts[0].fingerprint)
        assert (row.status, row.episodes) == ("resolved", 1), f"gpu {gpu}"
    assert await count(db, AlertEpisodeRow) == 6


async def test_postgresql_writers_run_concurrently_and_store_everything(db: Database) -> None:
    # One payload per transaction, so that concurrency (not grouping) is what is left to see.
    ingestor = Ingestor(db, TouchBuffer(), clock=Clock(), max_group_alerts=1)
    in_flight = peak = 0
    original = ingestor._commit

    async def counting(batches: list[IngestBatch]) -> Any:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            return await original(batches)
        finally:
            in_flight -= 1

    ingestor._commit = counting  # type: ignore[method-assign]
    await asyncio.gather(*(ingestor.ingest(webhook([gpu_alert(g)], groupKey=f"g{g}")) for g in range(40)))
    assert await count(db, RawEventRow) == 40
    assert await count(db, AlertRow) == 40
    assert await count(db, AlertEpisodeRow) == 40
    # SQLite has one writer; PostgreSQL commits several transactions at once.
    assert peak == 1 if db.is_sqlite else peak > 1


async def test_identical_payloads_in_one_commit_are_logged_once(db: Database) -> None:
    ingestor = Ingestor(db, TouchBuffer(), clock=Clock())
    batch = webhook([gpu_alert(2)])
    first, second = await asyncio.gather(ingestor.ingest(batch), ingestor.ingest(batch))
    assert first.raw_event_id is not None
    assert second.raw_event_id is None
    assert second.transitions == {Transition.UNCHANGED: 1}
    assert await count(db, RawEventRow) == 1


async def test_api_v2_pushes_that_only_confirm_the_store_open_no_transaction(db: Database) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    sessions = Sessions(db)

    def gpu1(ends: datetime) -> IngestBatch:
        return push(range(1, 2), clock.now, ends=ends)

    assert (await ingestor.ingest(gpu1(T0 + timedelta(minutes=4)))).transitions == {Transition.NEW_FIRING: 1}
    assert sessions.writes == 1
    assert (await ingestor.ingest(gpu1(T0 + timedelta(minutes=4)))).transitions == {Transition.UNCHANGED: 1}
    assert (await ingestor.ingest(gpu1(T0 + timedelta(minutes=5)))).transitions == {Transition.EXTENDED: 1}
    assert sessions.writes == 1  # read, compared, answered
    clock.now += timedelta(minutes=10)  # the push's endsAt has passed: a resolve, which must be written
    assert (await ingestor.ingest(gpu1(T0 + timedelta(minutes=5)))).transitions == {Transition.RESOLVED: 1}
    assert sessions.writes == 2
    assert (await alert_row(db, gpu1(T0).alerts[0].fingerprint)).status == "resolved"


async def test_quiet_for_is_zero_while_a_payload_is_being_stored(db: Database) -> None:
    ingestor = Ingestor(db, TouchBuffer())
    assert ingestor.quiet_for() == math.inf  # nothing stored yet
    storing = asyncio.create_task(ingestor.ingest(webhook([gpu_alert(0)])))
    await asyncio.sleep(0)  # the task is inside ingest, waiting on the store
    assert not storing.done()
    assert ingestor.quiet_for() == 0
    await storing
    assert 0 < ingestor.quiet_for() < math.inf


def senders(n: int, round_: int) -> list[IngestBatch]:
    """A new alert from each of `n` senders."""
    return [webhook([gpu_alert(100 * round_ + g)], groupKey=f"g{g}") for g in range(n)]


async def test_a_single_writer_under_load_waits_for_a_group_as_full_as_the_last(db: Database) -> None:
    ingestor = Ingestor(db, TouchBuffer(), clock=Clock(), writers=1, group_wait=10.0)
    commits = Commits(db)
    await asyncio.gather(*(ingestor.ingest(b) for b in senders(3, 1)))  # three senders, one commit
    assert commits.count == 1
    # They send again, one at a time: the first waits for the other two instead of committing alone.
    first, *others = senders(3, 2)
    waiting = asyncio.create_task(ingestor.ingest(first))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    results = await asyncio.gather(waiting, *(ingestor.ingest(b) for b in others))
    assert commits.count == 2
    assert [r.transitions for r in results] == [{Transition.NEW_FIRING: 1}] * 3
    assert await count(db, RawEventRow) == 6


async def test_the_wait_for_a_full_group_is_bounded(db: Database) -> None:
    ingestor = Ingestor(db, TouchBuffer(), clock=Clock(), writers=1, group_wait=0.05)
    commits = Commits(db)
    await asyncio.gather(*(ingestor.ingest(b) for b in senders(3, 1)))
    async with asyncio.timeout(10):
        result = await ingestor.ingest(senders(1, 2)[0])  # nobody else comes
    assert result.written
    assert commits.count == 2


async def test_a_lone_sender_never_waits(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_module, "RECENT_GROUP_AGE", 0.05)
    ingestor = Ingestor(db, TouchBuffer(), clock=Clock(), writers=1, group_wait=60.0)
    async with asyncio.timeout(10):
        for round_ in range(3):  # no concurrent load: nothing to wait for
            assert (await ingestor.ingest(senders(1, round_)[0])).written
        await asyncio.gather(*(ingestor.ingest(b) for b in senders(3, 10)))
        await asyncio.sleep(0.1)  # the load is over, and its commits are older than RECENT_GROUP_AGE
        assert (await ingestor.ingest(senders(1, 11)[0])).written


def push(gpus: range, now: datetime = T0, ends: datetime | None = None) -> IngestBatch:
    """An API v2 push of GPU alerts (with `endsAt` when `ends` is given)."""
    labels = [{"alertname": "GPUHighTemp", "Hostname": "gpu-node-07", "gpu": str(g)} for g in gpus]
    alerts = [{"labels": each, "startsAt": "2026-11-21T08:00:00Z"} for each in labels]
    if ends is not None:
        alerts = [{**alert, "endsAt": ends.isoformat()} for alert in alerts]
    return parse_api_v2(json.dumps(alerts).encode(), now=now).batch


async def test_a_push_with_alerts_never_seen_here_goes_straight_to_the_writer(db: Database) -> None:
    ingestor = Ingestor(db, TouchBuffer(), clock=Clock())
    sessions = Sessions(db)
    assert (await ingestor.ingest(push(range(2)))).transitions == {Transition.NEW_FIRING: 2}
    assert (sessions.reads, sessions.writes) == (0, 1)  # no read first: it could not be a confirmation
    assert (await ingestor.ingest(push(range(2)))).transitions == {Transition.UNCHANGED: 2}
    assert (sessions.reads, sessions.writes) == (1, 1)  # known now: confirmed by a read
    assert (await ingestor.ingest(push(range(3)))).transitions == {Transition.UNCHANGED: 2, Transition.NEW_FIRING: 1}
    assert (sessions.reads, sessions.writes) == (1, 2)


async def test_a_confirming_push_is_read_without_a_transaction(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    # One statement is its own snapshot: on PostgreSQL a BEGIN and a ROLLBACK around it were two more
    # round trips for every re-sent push. (SQLite's driver opens no transaction for a read at all.)
    ingestor = Ingestor(db, TouchBuffer(), clock=Clock())
    await ingestor.ingest(push(range(2)))
    sent: list[str] = []
    if not db.is_sqlite:
        execute = asyncpg.Connection.execute

        async def recording(self: asyncpg.Connection, query: str, *args: Any, **kwargs: Any) -> Any:
            sent.append(query)
            return await execute(self, query, *args, **kwargs)

        monkeypatch.setattr(asyncpg.Connection, "execute", recording)
    sessions = Sessions(db)
    assert (await ingestor.ingest(push(range(2)))).transitions == {Transition.UNCHANGED: 2}
    assert (sessions.reads, sessions.writes) == (1, 0)
    assert [q for q in sent if q.strip(" ;").upper() in ("BEGIN", "ROLLBACK", "COMMIT")] == []


async def test_a_confirming_push_is_read_without_a_session_where_the_store_allows(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQLite in a file: the event loop's own connection (`Database.read_now`), no trip to aiosqlite's
    # thread, and through a session when that connection cannot serve (busy, failing). PostgreSQL: the
    # driver's connection from the pool (`Database.read_driver`).
    ingestor = Ingestor(db, TouchBuffer(), clock=Clock())
    await ingestor.ingest(push(range(2)))
    sessions: list[None] = []
    drivers: list[None] = []
    read_single, read_driver = db.read_single, db.read_driver

    def session() -> Any:
        sessions.append(None)
        return read_single()

    def driver() -> Any:
        drivers.append(None)
        return read_driver()

    monkeypatch.setattr(db, "read_single", session)
    monkeypatch.setattr(db, "read_driver", driver)
    assert (await ingestor.ingest(push(range(2)))).transitions == {Transition.UNCHANGED: 2}
    assert (len(sessions), len(drivers)) == ((0, 0) if db.is_sqlite else (0, 1))
    monkeypatch.setattr(db, "read_now", lambda: None)
    assert (await ingestor.ingest(push(range(2)))).transitions == {Transition.UNCHANGED: 2}
    assert (len(sessions), len(drivers)) == ((1, 0) if db.is_sqlite else (0, 2))


async def test_a_replica_that_never_saw_the_alerts_still_finds_them_stored(db: Database) -> None:
    # Another replica (or this one before a restart) stored them: the writer reads them, writes nothing.
    await Ingestor(db, TouchBuffer(), clock=Clock()).ingest(push(range(4)))
    replica = Ingestor(db, TouchBuffer(), clock=Clock())
    commits = Commits(db)
    logged = await count(db, RawEventRow)
    assert (await replica.ingest(push(range(4)))).transitions == {Transition.UNCHANGED: 4}
    # PostgreSQL first tries them as new alerts, in one statement that finds them stored and writes nothing
    assert commits.count == (0 if db.is_sqlite else 1)
    assert await count(db, RawEventRow) == logged
    sessions = Sessions(db)
    assert (await replica.ingest(push(range(4)))).transitions == {Transition.UNCHANGED: 4}
    assert (sessions.reads, sessions.writes) == (1, 0)  # from now on it knows them
    assert await count(db, AlertRow) == 4


async def test_a_nul_character_neither_fails_the_commit_nor_its_neighbours(db: Database) -> None:
    # PostgreSQL's text and jsonb cannot hold U+0000: such a payload once failed with 503 for ever
    # (Alertmanager retries 5xx), and every payload sharing its commit with it.
    ingestor = Ingestor(db, TouchBuffer(), clock=Clock(), writers=1)
    odd = webhook([gpu_alert(1, annotations={"summary": "hot\u0000"}) | {"labels": {"alertname": "X", "v": "\u0000"}}])
    plain = webhook([gpu_alert(2)], groupKey="other")
    results = await asyncio.gather(ingestor.ingest(odd), ingestor.ingest(plain))
    assert [r.transitions for r in results] == [{Transition.NEW_FIRING: 1}] * 2
    row = await alert_row(db, odd.alerts[0].fingerprint)
    assert (row.labels, row.annotations) == ({"alertname": "X", "v": "\ufffd"}, {"summary": "hot\ufffd"})


async def test_a_payload_failing_for_its_own_reason_fails_alone_in_a_group_commit(db: Database) -> None:
    # A value the store refuses (here a truncatedAlerts past both stores' INTEGER, built past the ingest
    # boundary as a stand-in for anything the boundary might miss) once failed every payload that shared
    # its commit: 180-210 of 210 on SQLite. The others are committed without it; it fails alone, and not
    # with an error that would be answered as "store unavailable".
    ingestor = Ingestor(db, TouchBuffer(), clock=Clock(), writers=1)
    good = [webhook([gpu_alert(g, starts=f"2026-11-21T08:{g:02d}:00Z")], groupKey=f"g{g}") for g in range(30)]
    poison = dataclasses.replace(webhook([gpu_alert(40)], groupKey="poison"), truncated_alerts=2**63)
    batches = [*good[:15], poison, *good[15:]]
    results = await asyncio.gather(*(ingestor.ingest(b) for b in batches), return_exceptions=True)
    failed = [i for i, r in enumerate(results) if isinstance(r, BaseException)]
    assert failed == [15]
    assert isinstance(results[15], BaseException)
    assert not is_outage(results[15])
    assert await count(db, AlertRow) == 30
    assert await count(db, RawEventRow) == 30


async def test_the_engine_is_told_once_per_commit_that_wrote_and_only_then(db: Database) -> None:
    # The writer is the one party that tells the engine: with the new alert rows of each commit that
    # wrote something, and not at all for a re-send that changed nothing.
    told: list[list[str]] = []
    clock = Clock()
    ingestor = Ingestor(
        db, TouchBuffer(), clock=clock, on_committed=lambda rows: told.append([r["fingerprint"] for r in rows])
    )
    batch = webhook([gpu_alert(g) for g in range(3)])
    await ingestor.ingest(batch)
    assert told == [[a.fingerprint for a in batch.alerts]]
    clock.now += timedelta(minutes=1)
    await Ingestor(db, TouchBuffer(), clock=clock, on_committed=lambda rows: told.append(["other"])).ingest(batch)
    assert len(told) == 1  # nothing changed: no commit worth a pass
    resolved = webhook([gpu_alert(0, status="resolved", ends="2026-11-21T08:05:00Z")])
    await ingestor.ingest(resolved)
    assert told[1:] == [[]]  # a change, but no new alert row to hand over


def webhook_bytes(alerts: list[dict[str, Any]], **extra: Any) -> bytes:
    data = {"version": "4", "receiver": "alertrouter", "status": "firing", "groupKey": "g", "alerts": alerts, **extra}
    return json.dumps(data).encode()


async def test_a_byte_identical_resend_is_recognised_from_its_bytes(db: Database) -> None:
    clock = Clock()
    touches = TouchBuffer()
    ingestor = Ingestor(db, touches, clock=clock)
    body = webhook_bytes([gpu_alert(g) for g in range(8)], externalURL="http://am-0:9093")
    batch = parse_webhook(body).batch
    assert ingestor.repeat_body(body) is None  # nothing committed yet
    await ingestor.ingest(batch)
    touches.take()
    clock.now += timedelta(minutes=5)  # Alertmanager's group_interval
    assert ingestor.repeat_body(body) == 8
    seen, extended = touches.take()
    assert seen == sorted((a.fingerprint, clock.now) for a in batch.alerts)
    assert extended == []
    # the twin Alertmanager's copy differs in externalURL only: not the same bytes, parsed, then a repeat
    twin = webhook_bytes([gpu_alert(g) for g in range(8)], externalURL="http://am-1:9093")
    assert ingestor.repeat_body(twin) is None
    assert (await ingestor.ingest(parse_webhook(twin).batch)).repeat
    assert ingestor.repeat_body(twin) == 8  # and its bytes are known from then on
    assert await count(db, RawEventRow) == 1


async def test_a_resend_with_a_refused_or_truncated_alert_is_parsed_every_time(db: Database) -> None:
    ingestor = Ingestor(db, TouchBuffer(), clock=Clock())
    refused = webhook_bytes([gpu_alert(0), gpu_alert(1, starts="0001-01-01T00:00:00Z")])
    parsed = parse_webhook(refused)
    assert parsed.problems  # each re-send must answer 400 with them again
    await ingestor.ingest(parsed.batch)
    assert ingestor.repeat_body(refused) is None
    truncated = webhook_bytes([gpu_alert(2)], truncatedAlerts=40)
    await ingestor.ingest(parse_webhook(truncated).batch)
    assert ingestor.repeat_body(truncated) is None  # its truncation is counted and logged on every copy


async def test_bytes_are_forgotten_with_their_payload(db: Database) -> None:
    ingestor = Ingestor(db, TouchBuffer(), clock=Clock(), recent_digests=1)
    first = webhook_bytes([gpu_alert(0)])
    await ingestor.ingest(parse_webhook(first).batch)
    await ingestor.ingest(parse_webhook(webhook_bytes([gpu_alert(1)])).batch)
    assert ingestor.repeat_body(first) is None  # the writer no longer knows it: it goes to the database again
    result = await ingestor.ingest(parse_webhook(first).batch)
    assert (result.repeat, result.written) == (False, 0)

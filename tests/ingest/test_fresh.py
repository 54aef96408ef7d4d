"""PostgreSQL's insert of alerts none of which is stored, in one statement that commits on its own
(`store.alerts.insert_fresh`, `Ingestor._commit_fresh`): the same rows as the transaction's way, all
or nothing, and the transaction's way whenever an alert turns out to be stored."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest
from sqlalchemy import exc, select, text

import alertrouter.ingest.writer as writer_module
from alertrouter.ingest.batch import IngestBatch
from alertrouter.ingest.payloads import parse_api_v2, parse_webhook
from alertrouter.ingest.plan import Plan, plan_alerts, raw_row
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.store import Database, is_outage
from alertrouter.store import alerts as store
from alertrouter.store.tables import AlertEpisodeRow, AlertEventRow, AlertRow, Base, RawEventRow
from alertrouter.transitions import Transition
from support import pg
from support.webhooks import Status, webhook

NOW = datetime(2026, 11, 21, 8, 20, tzinfo=UTC)
DCGM = "DCGM_FI_DEV_GPU_TEMP"


def gpu(node: int, gpu: int) -> dict[str, str]:
    """A bare-metal dcgm-exporter alert's labels (`instance` is the exporter's address, no node name)."""
    return {
        "alertname": "GPUHighTemperature",
        "instance": f"10.0.{node // 256}.{node % 256}:9400",
        "job": "dcgm-exporter",
        "gpu": str(gpu),
        "UUID": f"GPU-{node:04d}{gpu:04d}-0000-0000-0000-000000000000",
        "Hostname": f"gpu-node-{node:02d}",
        "modelName": "NVIDIA H100 80GB HBM3",
        "severity": "critical",
    }


def hook(node: int, gpus: range, status: Status = "firing") -> IngestBatch:
    body = webhook([gpu(node, g) for g in gpus], status=status, annotations={"summary": f"{DCGM} over 85"})
    return parse_webhook(body).batch


def push(node: int, gpus: range) -> IngestBatch:
    alerts = [
        {"labels": gpu(node, g), "annotations": {"summary": "hot"}, "startsAt": "2026-11-21T08:00:00Z"} for g in gpus
    ]
    return parse_api_v2(json.dumps(alerts).encode(), now=NOW).batch


TABLES = ", ".join(t.name for t in Base.metadata.sorted_tables)


@pytest.fixture
def database_url(pg_database: str) -> str:
    """PostgreSQL only (the conftest's `db` on it): SQLite's one writer always takes the transaction's way."""
    pg.truncate(pg_database, [t.name for t in Base.metadata.sorted_tables])
    return pg.url_for(pg_database)


class Spy:
    """Counts `insert_fresh`'s calls and what they returned."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.results: list[dict[str, int] | None] = []
        self.raws: list[int] = []
        real = store.insert_fresh

        async def spying(db: Database, raws: Sequence[Any], *rest: Any) -> dict[str, int] | None:
            self.raws.append(len(raws))
            result = await real(db, raws, *rest)
            self.results.append(result)
            return result

        monkeypatch.setattr(store, "insert_fresh", spying)


async def snapshot(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    """Every stored row of the four tables, without what differs by construction (ids, `change_seq`
    from the transaction id); an event's payload by its digest."""
    async with db.read() as s:
        raws = {r.id: r.digest for r in (await s.scalars(select(RawEventRow))).all()}
        columns = [c.name for c in AlertRow.__table__.columns if c.name != "change_seq"]
        alerts = [tuple(repr(getattr(r, c)) for c in columns) for r in (await s.scalars(select(AlertRow))).all()]
        episodes = [
            tuple(map(repr, (r.fingerprint, r.starts_at, r.ends_at, r.resolved_by, r.opened_at, r.closed_at)))
            for r in (await s.scalars(select(AlertEpisodeRow))).all()
        ]
        events = [
            (
                *map(repr, (r.fingerprint, r.kind, r.at, r.episode_starts_at, r.detail)),
                raws.get(r.raw_event_id or -1, ""),
            )
            for r in (await s.scalars(select(AlertEventRow))).all()
        ]
        logged = [
            tuple(map(repr, (r.digest, r.source, r.receiver, r.group_key, r.alert_count, r.body)))
            for r in (await s.scalars(select(RawEventRow))).all()
        ]
    return {"alerts": sorted(alerts), "episodes": sorted(episodes), "events": sorted(events), "raw": sorted(logged)}


def payloads() -> list[IngestBatch]:
    return [hook(1, range(8)), hook(2, range(3), status="resolved"), hook(3, range(4)), push(4, range(8))]


async def ingest_all(db: Database) -> list[Any]:
    # One writer: the first payload commits alone, the others queue meanwhile and share a commit.
    ingestor = Ingestor(db, TouchBuffer(), clock=lambda: NOW, writers=1)
    return list(await asyncio.gather(*(ingestor.ingest(b) for b in payloads())))


async def test_new_alerts_are_stored_as_the_transaction_stores_them(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as m:
        m.setattr(Ingestor, "_may_be_fresh", lambda self, batches: False)
        by_transaction = await ingest_all(db)
        expected = await snapshot(db)
    async with db.write() as session:
        await session.execute(text(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE"))
        await session.commit()
    spy = Spy(monkeypatch)
    fresh = await ingest_all(db)
    assert sum(spy.raws) == 4  # every payload ...
    assert max(spy.raws) > 1  # ... some sharing a statement
    assert all(result is not None for result in spy.results)
    assert [r.transitions for r in fresh] == [r.transitions for r in by_transaction]
    assert fresh[1].transitions == {Transition.NEW_RESOLVED: 3}
    assert all(r.raw_event_id is not None for r in fresh)
    got = await snapshot(db)
    assert got == expected
    # each history event names the payload that carried its alert
    carried = {a.fingerprint: b.digest for b in payloads() for a in b.alerts}
    assert {(e[0], e[5]) for e in got["events"]} == {(repr(fp), digest) for fp, digest in carried.items()}


async def test_one_stored_alert_sends_the_group_the_transaction_way_and_nothing_is_written_twice(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    await Ingestor(db, TouchBuffer(), clock=lambda: NOW).ingest(hook(1, range(2)))
    spy = Spy(monkeypatch)
    restarted = Ingestor(db, TouchBuffer(), clock=lambda: NOW)  # knows no fingerprint yet
    result = await restarted.ingest(hook(1, range(4)))
    assert spy.results == [None]
    assert result.transitions == {Transition.UNCHANGED: 2, Transition.NEW_FIRING: 2}
    assert result.raw_event_id is not None
    async with db.read() as s:
        assert len((await s.scalars(select(AlertRow))).all()) == 4
        assert len((await s.scalars(select(AlertEpisodeRow))).all()) == 4
        assert len((await s.scalars(select(RawEventRow))).all()) == 2


def rows(batch: IngestBatch) -> tuple[Plan, list[dict[str, Any]]]:
    """What the writer plans for `batch`'s alerts as new: the plan, and its alert rows in order."""
    plan = Plan()
    plan_alerts(plan, {}, batch.alerts, NOW)
    for event in plan.events:
        event["raw_digest"] = batch.digest
    return plan, [plan.new_alerts[fp] for fp in sorted(plan.new_alerts)]


async def test_an_alert_inserted_by_another_transaction_meanwhile_undoes_the_whole_statement(db: Database) -> None:
    ours, theirs = hook(5, range(2)), hook(5, range(1, 2))
    their_plan, their_alerts = rows(theirs)
    our_plan, our_alerts = rows(ours)
    raw = raw_row(ours, NOW)
    async with db.write() as session:
        assert await store.insert_new(session, their_alerts, their_plan.new_episodes, []) == 1
        # Not committed yet: our statement sees no stored alert, then waits on the other's insert of GPU 1.
        attempt = asyncio.create_task(store.insert_fresh(db, [raw], our_alerts, our_plan.new_episodes, our_plan.events))
        await asyncio.sleep(0.3)
        assert not attempt.done()
        await session.commit()
    assert await attempt is None
    async with db.read() as s:
        assert [r.fingerprint for r in (await s.scalars(select(AlertRow))).all()] == [theirs.alerts[0].fingerprint]
        assert (await s.scalars(select(RawEventRow))).all() == []  # our payload's log undone with the rest
        assert (await s.scalars(select(AlertEventRow))).all() == []


async def test_an_ha_twin_going_the_transaction_way_at_once_is_waited_for_without_a_deadlock(db: Database) -> None:
    # Both Alertmanagers of an HA pair send the same webhook; here one replica stores it the transaction's
    # way (its payload logged first, then its alerts) while another tries the one statement.
    twin = hook(6, range(2))
    plan, alerts = rows(twin)
    raw = raw_row(twin, NOW)
    async with db.write() as session:
        assert set(await store.insert_raw_events(session, [raw])) == {twin.digest}
        attempt = asyncio.create_task(store.insert_fresh(db, [raw], alerts, plan.new_episodes, plan.events))
        await asyncio.sleep(0.3)
        assert not attempt.done()  # waiting for the twin's payload, holding none of its alerts ...
        theirs, their_alerts = rows(twin)
        assert await store.insert_new(session, their_alerts, theirs.new_episodes, []) == 2  # ... so this goes on
        await session.commit()
    assert await attempt is None
    async with db.read() as s:
        assert len((await s.scalars(select(AlertRow))).all()) == 2
        assert len((await s.scalars(select(RawEventRow))).all()) == 1


async def test_an_ha_twin_arriving_while_its_pair_is_inserted_here_takes_the_transactions_way(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The second Alertmanager of an HA pair sends the same notification while the first one's statement
    # is under way: racing it, the second statement would wait for it and be undone by an error that
    # PostgreSQL logs; the transaction's way waits without one.
    labels = [gpu(7, g) for g in range(2)]
    twins = [parse_webhook(webhook(labels, external_url=f"http://alertmanager-{i}:9093")).batch for i in (0, 1)]
    assert twins[0].digest == twins[1].digest
    calls: list[dict[str, int] | None] = []
    started, release = asyncio.Event(), asyncio.Event()
    real = store.insert_fresh

    async def held_first(*args: Any) -> dict[str, int] | None:
        if not calls and not started.is_set():
            started.set()
            await release.wait()  # the first statement is under way until the second is answered
        calls.append(result := await real(*args))
        return result

    monkeypatch.setattr(store, "insert_fresh", held_first)
    ingestor = Ingestor(db, TouchBuffer(), clock=lambda: NOW)
    first = asyncio.create_task(ingestor.ingest(twins[0]))
    await started.wait()
    second = await ingestor.ingest(twins[1])
    release.set()
    results = [await first, second]
    assert calls == [None]  # one statement only: the first's, which then found the second's rows
    assert sorted((kind, n) for r in results for kind, n in r.transitions.items()) == [
        (Transition.NEW_FIRING, 2),
        (Transition.UNCHANGED, 2),
    ]
    async with db.read() as s:
        assert len((await s.scalars(select(AlertRow))).all()) == 2
        assert len((await s.scalars(select(RawEventRow))).all()) == 1


async def test_after_finding_stored_alerts_the_fresh_try_pauses(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_module, "FRESH_PAUSE", 0.5)
    await Ingestor(db, TouchBuffer(), clock=lambda: NOW).ingest(hook(1, range(8)))
    spy = Spy(monkeypatch)
    restarted = Ingestor(db, TouchBuffer(), clock=lambda: NOW)
    await restarted.ingest(hook(1, range(1)))  # stored: tried, found, paused
    await restarted.ingest(hook(2, range(2)))  # new, but within the pause: the transaction's way
    assert spy.results == [None]
    await asyncio.sleep(0.6)
    await restarted.ingest(hook(3, range(2)))
    assert len(spy.results) == 2
    assert spy.results[1] is not None


async def test_a_refused_statement_falls_back_and_an_outage_is_answered_as_one(
    db: Database, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    refusal = exc.OperationalError(None, None, asyncpg.exceptions.NumericValueOutOfRangeError("out of range"))
    outage = exc.OperationalError(None, None, ConnectionRefusedError("connection refused"))
    raised: list[Exception] = [refusal]

    async def failing(*_: Any) -> dict[str, int] | None:
        raise raised[0]

    monkeypatch.setattr(store, "insert_fresh", failing)
    ingestor = Ingestor(db, TouchBuffer(), clock=lambda: NOW)
    with caplog.at_level(logging.WARNING, logger="alertrouter.ingest.writer"):
        assert (await ingestor.ingest(hook(1, range(2)))).transitions == {
            Transition.NEW_FIRING: 2
        }  # stored all the same
    assert [r.getMessage() for r in caplog.records if r.name == "alertrouter.ingest.writer"] == [
        "2 new alerts not inserted in one statement ((asyncpg.exceptions.NumericValueOutOfRangeError) out of range): "
        "in a transaction instead"
    ]
    raised[0] = outage
    with pytest.raises(exc.OperationalError) as info:
        await ingestor.ingest(hook(2, range(2)))
    assert is_outage(info.value)  # answered 503, and Alertmanager retries
    async with db.read() as s:
        assert len((await s.scalars(select(AlertRow))).all()) == 2

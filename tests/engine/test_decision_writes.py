"""Where a pass's changed decisions are written: a webhook's few in the pass's own transaction (one
commit per pass), under a savepoint; should one row's values fail there, the savepoint alone rolls
back, the pass's incidents and messages still commit, the rows are written after it one by one, and the
alert whose row failed is quarantined. On both stores."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import exc, func, select

import alertrouter.engine.decisions as decisions_module
from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.pipeline.types import Decision
from alertrouter.store import Database
from alertrouter.store import alerts as alerts_store
from alertrouter.store.tables import AlertEventRow, AlertRow, OutboxRow
from support.passes import Clock
from support.scenario import dcgm_labels, shipped_pipeline
from support.webhooks import webhook


def dcgm(node: int, gpu: int) -> dict[str, str]:
    return dcgm_labels(f"10.0.0.{node}", f"gpu-node-{node:02d}", gpu, region="north")


async def _events(db: Database) -> dict[str, int]:
    """Decision trail events per alert (`Hostname/gpu`)."""
    async with db.read() as s:
        rows = (
            await s.execute(
                select(AlertRow.labels, func.count(AlertEventRow.id))
                .join(AlertEventRow, AlertEventRow.fingerprint == AlertRow.fingerprint)
                .where(AlertEventRow.kind == "decision")
                .group_by(AlertRow.labels)
            )
        ).all()
    return {f"{labels['Hostname']}/{labels['gpu']}": n for labels, n in rows}


async def _decisions(db: Database) -> dict[str, str | None]:
    async with db.read() as s:
        rows = (await s.execute(select(AlertRow.labels, AlertRow.decision))).all()
    return {f"{labels['Hostname']}/{labels['gpu']}": decision for labels, decision in rows}


@pytest.mark.parametrize("refused", [False, True])
async def test_a_row_refused_in_the_pass_loses_nothing_else_and_writes_nothing_twice(
    db: Database, monkeypatch: pytest.MonkeyPatch, refused: bool
) -> None:
    clock = Clock()
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    batch = parse_webhook(webhook([dcgm(7, 1), dcgm(7, 2), dcgm(8, 0)])).batch
    bad = batch.alerts[0].fingerprint  # gpu-node-07/1
    await ingestor.ingest(batch)
    real = alerts_store.insert_events

    async def insert_events(session: Any, rows: Sequence[Mapping[str, Any]]) -> None:
        """The trail rows are written, then the driver refuses one row's values (as it would a value
        too long for its column): what was written before the refusal must not stay."""
        await real(session, rows)
        if refused and any(r["fingerprint"] == bad and r["detail"]["decision"] != Decision.QUARANTINED for r in rows):
            raise exc.DataError("INSERT INTO alert_events ...", {}, ValueError("value too long"))

    monkeypatch.setattr(decisions_module, "insert_events", insert_events)
    await runner.run_once()
    stored = await _decisions(db)
    assert stored["gpu-node-07/2"] in (Decision.HELD, Decision.NOTIFY)
    assert stored["gpu-node-08/0"] in (Decision.HELD, Decision.NOTIFY)
    assert stored["gpu-node-07/1"] == (Decision.QUARANTINED if refused else stored["gpu-node-07/2"])
    # one decision event per alert decided, and none of the refused row's left over: its one event is
    # the quarantine's
    assert await _events(db) == {"gpu-node-07/2": 1, "gpu-node-08/0": 1, "gpu-node-07/1": 1}
    async with db.read() as s:
        decisions = select(AlertEventRow.detail).where(
            AlertEventRow.fingerprint == bad, AlertEventRow.kind == "decision"
        )
        trail = (await s.scalars(decisions)).all()
    assert [d["decision"] for d in trail] == [Decision.QUARANTINED if refused else stored["gpu-node-07/2"]]
    # the pass's messages still go out: both nodes' incidents after the shipped group wait
    clock.now += timedelta(minutes=1)
    await runner.run_once()
    async with db.read() as s:
        headlines = [o.message["headline"] for o in (await s.scalars(select(OutboxRow))).all()]
    assert any("gpu-node-07" in h for h in headlines)
    assert any("gpu-node-08" in h for h in headlines)


def mixed_webhook(*, firing: Sequence[dict[str, str]], resolved: Sequence[Mapping[str, str]]) -> bytes:
    """One webhook of firing and resolved alerts (a group's notification can carry both)."""
    body = json.loads(webhook([*firing, *resolved]))
    for alert in body["alerts"][len(firing) :]:
        alert["status"], alert["endsAt"] = "resolved", "2026-11-21T08:00:30Z"
    return json.dumps(body).encode()


async def _trail(db: Database) -> dict[str, list[str]]:
    """Each alert's decision events, in the trail's order (by time, as the console reads it)."""
    async with db.read() as s:
        rows = (
            await s.execute(
                select(AlertRow.labels, AlertEventRow.detail)
                .join(AlertEventRow, AlertEventRow.fingerprint == AlertRow.fingerprint)
                .where(AlertEventRow.kind == "decision")
                .order_by(AlertEventRow.at, AlertEventRow.id)
            )
        ).all()
    out: dict[str, list[str]] = {}
    for labels, detail in rows:
        out.setdefault(f"{labels['Hostname']}/{labels['gpu']}", []).append(detail["decision"])
    return out


async def test_a_newly_firing_alerts_pass_goes_before_a_storms_waiting_decisions(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass that decided more than a chunk writes its decisions after it, a chunk at a time, and stops
    when a newly firing alert is stored meanwhile: that alert's pass goes first. What that pass writes of
    an alert supersedes the row still waiting, and what it finds unchanged against the waiting decisions
    it does not write again: at the end every alert holds its latest decision, one trail event a change."""
    monkeypatch.setattr(decisions_module, "DECISION_CHUNK", 1)
    clock = Clock()
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    ingestor = Ingestor(db, TouchBuffer(), clock=clock, on_committed=runner.committed)
    storm = parse_webhook(webhook([dcgm(n, g) for n in (7, 8, 9) for g in (0, 1)])).batch
    await ingestor.ingest(storm)
    # the storm's alert whose decision is written last (rows go in fingerprint order): still waiting
    last = max(storm.alerts, key=lambda a: a.fingerprint).labels
    name = f"{last['Hostname']}/{last['gpu']}"
    real_save = decisions_module.PendingDecisions._save
    arrived: list[str] = []

    async def save(self: decisions_module.PendingDecisions, *args: Any) -> None:
        if not arrived:  # while the first chunk is written: a new alert fires, and the last one resolves
            arrived.append(name)
            clock.now += timedelta(milliseconds=500)
            await ingestor.ingest(parse_webhook(mixed_webhook(firing=[dcgm(10, 0)], resolved=[last])).batch)
        await real_save(self, *args)

    monkeypatch.setattr(decisions_module.PendingDecisions, "_save", save)
    await runner.run_once()  # decides 6 alerts: one chunk written, then the new alert's pass is due
    first = await _decisions(db)
    assert sorted(first.values(), key=str) == [None] * 6 + [Decision.HELD]  # the new alert's is not yet
    assert first[name] is None

    monkeypatch.setattr(decisions_module, "DECISION_CHUNK", 100)  # this pass's decisions go with it
    clock.now += timedelta(milliseconds=500)
    await runner.run_once()  # the new alert's pass, then the storm's rows still waiting
    stored = await _decisions(db)
    assert stored[name] == Decision.RESOLVING  # the stale rule's hold on a resolve; not the older row
    assert stored["gpu-node-10/0"] == Decision.HELD
    assert {n for n, d in stored.items() if d == Decision.HELD} == set(stored) - {name}
    trail = await _trail(db)
    assert trail == {n: [Decision.HELD] for n in stored} | {name: [Decision.HELD, Decision.RESOLVING]}


def _changes(decisions: Mapping[str, str], at: datetime) -> decisions_module.DecisionChanges:
    """Decision changes as a pass works them out (`decision_changes`), of alerts by fingerprint."""
    changes = decisions_module.DecisionChanges()
    for fp, decision in decisions.items():
        detail = {"aggregation_rule": "gpu-by-node"}
        changes.stored[fp] = (decision, detail)
        row = {"node": "gpu-node-07", "incident_key": "k", "decision": decision, "decision_detail": detail}
        changes.rows.append({"fingerprint": fp, **row, "decided_at": at})
        changes.events.append(
            {
                "fingerprint": fp,
                "kind": "decision",
                "at": at,
                "episode_starts_at": datetime(2026, 11, 21, 7, 59, tzinfo=UTC),
                "raw_event_id": None,
                "detail": {"decision": decision, "incident": "k", **detail},
            }
        )
    return changes


async def test_waiting_decisions_write_each_alerts_newest_row_and_every_trail_event(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    batch = parse_webhook(webhook([dcgm(7, 0), dcgm(7, 1), dcgm(7, 2)])).batch
    await Ingestor(db, TouchBuffer(), clock=clock).ingest(batch)
    a, b, c = (alert.fingerprint for alert in batch.alerts)
    pending = decisions_module.PendingDecisions()
    pending.add(_changes({a: Decision.HELD, b: Decision.HELD, c: Decision.HELD}, clock.now))
    pending.add(_changes({a: Decision.NOTIFY, b: Decision.NOTIFY}, clock.now + timedelta(seconds=1)))
    written: dict[str, Any] = {"other": ("x", {})}
    assert pending.previous(written)[a] == (Decision.NOTIFY, {"aggregation_rule": "gpu-by-node"})
    assert pending.previous(written)["other"] == ("x", {})
    pending.supersede([b])  # a later pass wrote its own decision of b (here: none, to tell them apart)
    assert b not in pending.previous(written)

    monkeypatch.setattr(decisions_module, "DECISION_CHUNK", 2)
    asked = iter([False, True])
    await pending.drain(db, written.update, until=lambda: next(asked))  # one chunk, then a new alert waits
    assert len(pending) == 3
    await pending.drain(db, written.update)
    assert len(pending) == 0
    stored = await _decisions(db)
    assert stored == {"gpu-node-07/0": Decision.NOTIFY, "gpu-node-07/1": None, "gpu-node-07/2": Decision.HELD}
    assert {fp: d for fp, (d, _) in written.items()} == {"other": "x", a: Decision.NOTIFY, c: Decision.HELD}
    assert await _trail(db) == {
        "gpu-node-07/0": [Decision.HELD, Decision.NOTIFY],
        "gpu-node-07/1": [Decision.HELD, Decision.NOTIFY],
        "gpu-node-07/2": [Decision.HELD],
    }
    assert pending.previous(written) is written


async def test_trail_events_of_no_decision_wait_behind_the_decisions_and_one_refused_is_dropped_alone(
    db: Database, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An escalation's trail events (`add_trail`) are written after the decisions waiting, a chunk per
    transaction; an event the store refuses on its values is dropped with a warning, not its chunk."""
    clock = Clock()
    batch = parse_webhook(webhook([dcgm(7, 0), dcgm(7, 1), dcgm(7, 2)])).batch
    await Ingestor(db, TouchBuffer(), clock=clock).ingest(batch)
    a, b, c = (alert.fingerprint for alert in batch.alerts)
    pending = decisions_module.PendingDecisions()
    pending.add(_changes({a: Decision.NOTIFY}, clock.now))

    def event(fp: str, kind: str | None = "escalation") -> dict[str, Any]:
        at = clock.now
        return {"fingerprint": fp, "kind": kind, "at": at, "episode_starts_at": at, "raw_event_id": None, "detail": {}}

    pending.add_trail([event(a), event(b, kind=None), event(c)])  # kind is NOT NULL: refused
    assert len(pending) == 4
    monkeypatch.setattr(decisions_module, "DECISION_CHUNK", 3)
    asked = iter([False, True])
    remembered: dict[str, Any] = {}
    await pending.drain(db, remembered.update, until=lambda: next(asked))  # the decision, then a new alert waits
    assert len(pending) == 3, "the trail waits behind a pass that came first"
    with caplog.at_level("WARNING", logger="alertrouter.engine.decisions"):
        await pending.drain(db, remembered.update)
    assert len(pending) == 0
    async with db.read() as s:
        kinds = (await s.execute(select(AlertEventRow.fingerprint, AlertEventRow.kind))).all()
    assert sorted(fp for fp, kind in kinds if kind == "escalation") == sorted([a, c])
    (dropped,) = [r.getMessage() for r in caplog.records if r.name == "alertrouter.engine.decisions"]
    assert dropped.startswith(f"trail event of {b} dropped: "), dropped


async def test_decisions_left_waiting_are_written_at_shutdown(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """Shut down while a storm's decisions wait behind a newly firing alert's pass: they are written
    before the lease is given up (the new alert is the next leader's)."""
    monkeypatch.setattr(decisions_module, "DECISION_CHUNK", 1)
    runner = EngineRunner(db, shipped_pipeline(), interval=timedelta(milliseconds=10))
    ingestor = Ingestor(db, TouchBuffer(), on_committed=runner.committed)
    real_save = decisions_module.PendingDecisions._save
    stopping: list[asyncio.Task[None]] = []

    async def save(self: decisions_module.PendingDecisions, *args: Any) -> None:
        if not stopping:  # while the first chunk is written: a new alert fires, and the process is stopped
            await ingestor.ingest(parse_webhook(webhook([dcgm(10, 0)])).batch)
            stopping.append(asyncio.create_task(runner.stop()))
        await real_save(self, *args)

    monkeypatch.setattr(decisions_module.PendingDecisions, "_save", save)
    runner.start()
    await ingestor.ingest(parse_webhook(webhook([dcgm(n, g) for n in (7, 8, 9) for g in (0, 1)])).batch)
    for _ in range(500):
        if stopping:
            break
        await asyncio.sleep(0.01)
    assert stopping, "the loop's pass never wrote its decisions"
    await stopping[0]
    stored = await _decisions(db)
    assert stored.pop("gpu-node-10/0") is None  # never evaluated here
    assert set(stored.values()) == {Decision.HELD}
    assert await _events(db) == dict.fromkeys(stored, 1)


async def test_a_waiting_decision_of_an_alert_let_go_meanwhile_is_not_held_again(db: Database) -> None:
    """An alert resolved long ago is let go by the engine (evicted) while its last decision may still wait
    to be written: once written, it is not remembered again (nothing would ever let it go twice)."""
    clock = Clock()
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    batch = parse_webhook(webhook([dcgm(7, 0)])).batch
    await Ingestor(db, TouchBuffer(), clock=clock).ingest(batch)
    await runner.run_once()
    live = batch.alerts[0].fingerprint
    runner._passes.live.written([(live, (Decision.NOTIFY, {})), ("let-go", (Decision.RESOLVED, {}))])
    assert runner._passes.live.decisions[live] == (Decision.NOTIFY, {})
    assert "let-go" not in runner._passes.live.decisions

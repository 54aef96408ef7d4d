"""Silences, acknowledgements and the decision trail, through real engine passes on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from sqlalchemy import select, update

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.labels import parse_matchers
from alertrouter.pipeline.silence import Silence, Silencer
from alertrouter.store import Database, actions
from alertrouter.store.tables import AlertEventRow, AlertRow, IncidentRow, OutboxRow
from support.passes import T0, Clock, rows, run_for
from support.scenario import gpu_labels, shipped_pipeline
from support.webhooks import webhook

S = timedelta(seconds=1)
H = timedelta(hours=1)


def silence(text: str, start: datetime = T0, end: datetime = T0 + H, id: str = "s1") -> Silence:
    return Silence(id, tuple(parse_matchers(text)), start, end)


@pytest.mark.parametrize(
    ("matchers", "labels", "at", "muted"),
    [
        ('node="gpu-node-07"', {"node": "gpu-node-07", "gpu": "3"}, T0, True),
        ('node="gpu-node-07"', {"node": "gpu-node-08"}, T0, False),
        ('node=~"gpu-node-0[0-7]"', {"node": "gpu-node-07"}, T0, True),
        ('node="gpu-node-07", gpu!="3"', {"node": "gpu-node-07", "gpu": "3"}, T0, False),
        ('node="gpu-node-07"', {"node": "gpu-node-07"}, T0 - S, False),  # not started yet
        ('node="gpu-node-07"', {"node": "gpu-node-07"}, T0 + H, False),  # ended (ends_at is exclusive)
        ('rack=""', {"node": "gpu-node-07"}, T0, True),  # an absent label matches ""
    ],
)
def test_silencer_matches_like_alertmanager(matchers: str, labels: dict[str, str], at: datetime, muted: bool) -> None:
    assert (Silencer([silence(matchers)]).mutes(labels, at) is not None) is muted


def test_silencer_is_deterministic_and_knows_its_next_change() -> None:
    late = silence('node="a"', T0 + H, T0 + 3 * H, id="late")
    early = silence('node="a"', T0, T0 + 2 * H, id="early")
    silencer = Silencer([late, early])
    found = silencer.mutes({"node": "a"}, T0 + 90 * timedelta(minutes=1))
    assert found is not None
    assert found.id == "early"
    assert silencer.next_change(T0) == T0 + H
    assert silencer.next_change(T0 + H) == T0 + 2 * H
    assert silencer.next_change(T0 + 3 * H) is None
    assert Silencer([Silence("empty", (), T0, T0 + H)]).mutes({"node": "a"}, T0) is None  # never mutes everything


async def add_silence(db: Database, matchers: list[str], start: datetime, end: datetime) -> str:
    async with db.write() as session:
        row = await actions.create_silence(
            session, matchers=matchers, starts_at=start, ends_at=end, created_by="test", comment="", now=start
        )
        await session.commit()
        return row.id


async def test_silence_mutes_until_it_ends_then_notifies(db: Database) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    silence_id = await add_silence(db, ['node="gpu-node-07"'], T0, T0 + H)
    await ingestor.ingest(
        parse_webhook(webhook([gpu_labels("gpu-node-07", g, region="north") for g in range(4)])).batch
    )
    await run_for(runner, clock, timedelta(minutes=10))
    alerts = await rows(db, AlertRow)
    assert {a.decision for a in alerts} == {"silenced"}
    assert {a.decision_detail["silenced_by"] for a in alerts} == {silence_id}
    assert await rows(db, OutboxRow) == []
    (incident,) = await rows(db, IncidentRow)
    assert (incident.summary["silenced"], incident.summary["firing"]) == (4, 4)
    # The silence ends with no new alert arriving: the engine wakes for it and tells the receiver.
    await run_for(runner, clock, timedelta(minutes=52))
    assert {a.decision for a in await rows(db, AlertRow)} == {"aggregated"}
    (outbox,) = await rows(db, OutboxRow)
    assert (outbox.receiver, outbox.reason) == ("ops-north", "first")


async def test_silence_created_while_firing_stops_repeats_and_expiring_it_resumes(db: Database) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    await ingestor.ingest(
        parse_webhook(webhook([gpu_labels("gpu-node-07", g, severity="critical") for g in range(2)])).batch
    )
    await run_for(runner, clock, timedelta(minutes=1))
    assert len(await rows(db, OutboxRow)) == 1
    silence_id = await add_silence(db, ['alertname="GPUHighTemp"'], clock.now, clock.now + 2 * H)
    await run_for(runner, clock, timedelta(minutes=40))  # critical repeats every 10 minutes, but silenced
    assert len(await rows(db, OutboxRow)) == 1
    assert {a.decision for a in await rows(db, AlertRow)} == {"silenced"}
    async with db.write() as session:
        assert await actions.expire_silence(session, silence_id=silence_id, now=clock.now)
        await session.commit()
    await run_for(runner, clock, timedelta(minutes=1))
    assert {a.decision for a in await rows(db, AlertRow)} == {"aggregated"}
    # Nothing was told while silenced, so the receiver still holds the firing state: a repeat is due.
    assert [o.reason for o in await rows(db, OutboxRow)] == ["first", "repeat"]


async def test_decision_trail_records_each_change_once(db: Database) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    await ingestor.ingest(parse_webhook(webhook([gpu_labels("gpu-node-07", 0, region="north")])).batch)
    await run_for(runner, clock, timedelta(minutes=2))
    silence_id = await add_silence(db, ['gpu="0"'], clock.now, clock.now + H)
    await run_for(runner, clock, timedelta(minutes=2))
    async with db.read() as session:
        events = (
            await session.scalars(
                select(AlertEventRow).where(AlertEventRow.kind == "decision").order_by(AlertEventRow.id)
            )
        ).all()
    trail = [e.detail["decision"] for e in events if e.detail]
    # held for the inhibition hold-down, then notified, then silenced; the unchanged passes between add nothing
    assert trail == ["held", "notify", "silenced"]
    assert events[-1].detail is not None
    assert events[-1].detail["silenced_by"] == silence_id
    assert all(e.detail and e.detail["incident"] for e in events)


async def test_acknowledgement_stops_repeats_and_ends_when_the_incident_fires_again(db: Database) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    labels = [gpu_labels("gpu-node-07", 0, severity="critical")]
    await ingestor.ingest(parse_webhook(webhook(labels)).batch)
    await run_for(runner, clock, timedelta(minutes=1))
    (incident,) = await rows(db, IncidentRow)
    async with db.write() as session:
        acked = await actions.acknowledge_incident(session, incident_id=incident.id, by="alice", now=clock.now)
        await session.commit()
    assert acked is not None
    assert acked.acknowledged_by == "alice"
    await run_for(runner, clock, timedelta(minutes=30))
    assert [o.reason for o in await rows(db, OutboxRow)] == ["first"]  # no repeats once acknowledged
    clock.now += S
    await ingestor.ingest(parse_webhook(webhook(labels, status="resolved")).batch)
    await run_for(runner, clock, timedelta(minutes=6))
    assert [o.reason for o in await rows(db, OutboxRow)] == ["first", "resolved"]  # the resolve still goes
    # It fires again (a new episode): a new occurrence, not acknowledged, repeats again.
    again = webhook(labels, starts_at="2026-11-21T09:00:00Z")
    await ingestor.ingest(parse_webhook(again).batch)
    await run_for(runner, clock, timedelta(minutes=15))
    (incident,) = await rows(db, IncidentRow)
    assert incident.acknowledged_at is None
    told = [(o.receiver, o.reason) for o in await rows(db, OutboxRow)]
    assert [reason for receiver, reason in told if receiver == "oncall-core"] == [
        "first",
        "resolved",
        "first",
        "repeat",
    ]
    # and the shipped escalation policy runs again for the new occurrence (the old one was acknowledged)
    assert [receiver for receiver, reason in told if reason == "escalated"] == ["oncall-secondary"]


async def test_acknowledging_twice_or_a_resolved_incident_changes_nothing(db: Database) -> None:
    clock = Clock()
    async with db.write() as session:
        session.add(
            IncidentRow(
                key="k",
                kind="node",
                rule="r",
                status="resolved",
                severity="critical",
                headline="h",
                labels={},
                summary={},
                opened_at=T0,
                updated_at=T0,
            )
        )
        await session.commit()
    (incident,) = await rows(db, IncidentRow)
    async with db.write() as session:
        row = await actions.acknowledge_incident(session, incident_id=incident.id, by="a", now=clock.now)
        assert row is not None
        assert row.acknowledged_at is None
        await session.execute(update(IncidentRow).values(status="firing"))
        first = await actions.acknowledge_incident(session, incident_id=incident.id, by="a", now=clock.now)
        second = await actions.acknowledge_incident(session, incident_id=incident.id, by="b", now=clock.now + H)
        assert first is not None
        assert second is not None
        assert (second.acknowledged_by, second.acknowledged_at) == ("a", clock.now)
        assert await actions.acknowledge_incident(session, incident_id=999, by="a", now=clock.now) is None

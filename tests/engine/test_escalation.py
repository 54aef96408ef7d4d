"""An escalation chain through the engine on SQLite and PostgreSQL, with a clock the test moves: each step
when it is due, an acknowledgement at each step stops it, a restart mid-chain neither repeats nor skips."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

import alertrouter.engine.decisions as decisions_module
import alertrouter.engine.escalation as escalation_module
import alertrouter.engine.passes as passes_module
from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.metrics import Metrics
from alertrouter.pipeline.escalation import Chain
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.store import Database, actions, escalations
from alertrouter.store.tables import AlertEventRow, EscalationRow, IncidentRow, OutboxRow
from support.passes import Clock, rows, run_for
from support.scenario import dcgm_labels, node_down_labels
from support.webhooks import webhook

S = timedelta(seconds=1)
M = timedelta(minutes=1)

RULES = """
global: {language: en, timezone: UTC}
oncall:
  people:
    - {name: ana, mobile: "13800000001"}
    - {name: bo, mobile: "13800000002"}
  schedules:
    - {name: primary, timezone: UTC, layers: [{people: [ana], rotation: 1w, start: "2026-11-01 00:00"}]}
  escalations:
    - name: critical-unacked
      steps:
        - {after: 10m, receivers: [secondary]}
        - {after: 20m, receivers: [lead]}
        - {after: 30m, receivers: [voice]}
route:
  receiver: first
  group_wait: 30s
  repeat_interval: 4h
  escalation: critical-unacked
  routes:
    - {matchers: ['severity="warning"'], receiver: first, escalation: none}
receivers:
  - {name: first}
  - {name: secondary}
  - {name: lead}
  - {name: voice}
"""


@pytest.fixture
def pipeline(tmp_path: Path) -> CompiledRules:
    (tmp_path / "rules.yml").write_text(RULES)
    return compile_rules(load_ruleset(tmp_path, {}))


async def sent(db: Database) -> list[tuple[str, str]]:
    """(receiver, reason) of every outbox row, in order."""
    return [(r.receiver, r.reason) for r in sorted(await rows(db, OutboxRow), key=lambda r: r.id)]


async def escalated(db: Database) -> list[str]:
    return [receiver for receiver, reason in await sent(db) if reason == "escalated"]


async def chain(db: Database) -> EscalationRow:
    row: EscalationRow
    (row,) = await rows(db, EscalationRow)
    return row


async def fire(db: Database, clock: Clock, labels: dict[str, str] | None = None) -> None:
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    await ingestor.ingest(parse_webhook(webhook([labels or node_down_labels("gpu-node-07")])).batch)


async def resolve(db: Database, clock: Clock) -> None:
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    resolved = webhook([node_down_labels("gpu-node-07")], status="resolved", ends_at="2026-11-21T09:30:00Z")
    await ingestor.ingest(parse_webhook(resolved).batch)


async def acknowledge(db: Database, clock: Clock, by: str) -> None:
    async with db.write() as session:
        (incident,) = (await session.scalars(select(IncidentRow))).all()
        await actions.acknowledge_incident(session, incident_id=incident.id, by=by, now=clock.now)
        await session.commit()


async def test_unacknowledged_critical_incident_escalates_step_by_step(db: Database, pipeline: CompiledRules) -> None:
    clock = Clock()
    metrics = Metrics()
    runner = EngineRunner(db, pipeline, metrics, clock=clock)
    await fire(db, clock)
    await run_for(runner, clock, 1 * M)
    assert await sent(db) == [("first", "first")]
    assert runner._passes._escalated.events == [], "a chain's trail events are let go once stored"
    first_at = (await chain(db)).started_at
    await run_for(runner, clock, first_at + 10 * M - 2 * S - clock.now, every=S)
    assert await escalated(db) == []  # not before its time
    await run_for(runner, clock, 5 * S, every=S)
    assert await escalated(db) == ["secondary"]
    await run_for(runner, clock, 10 * M, every=5 * S)
    assert await escalated(db) == ["secondary", "lead"]
    await run_for(runner, clock, 10 * M, every=5 * S)
    assert await escalated(db) == ["secondary", "lead", "voice"]
    await run_for(runner, clock, 30 * M, every=M)
    assert await escalated(db) == ["secondary", "lead", "voice"]  # the chain ended with its last step
    row = await chain(db)
    assert (row.policy, row.next_step, row.steps, row.stopped, row.next_at) == (
        "critical-unacked",
        3,
        3,
        "exhausted",
        None,
    )
    assert [h["event"] for h in row.history] == ["started", "step", "step", "step"]
    assert [h.get("step") for h in row.history[1:]] == [1, 2, 3]
    (message,) = [r.message for r in await rows(db, OutboxRow) if r.receiver == "lead"]
    assert message["reason"] == "escalated"
    assert message["summary"]["escalation"] == {
        "policy": "critical-unacked",
        "step": 2,
        "steps": 3,
        "after": "20m",
        "after_seconds": 1200,
        "receivers": ["lead"],
    }
    trail = [e.detail for e in await rows(db, AlertEventRow) if e.kind == "escalation"]
    assert [(t["event"], t.get("step")) for t in trail] == [("started", None), ("step", 1), ("step", 2), ("step", 3)]
    samples = {
        s.labels["step"]: s.value
        for m in metrics.registry.collect()
        if m.name == "alertrouter_escalation_steps"
        for s in m.samples
        if s.name.endswith("_total")
    }
    assert samples == {"1": 1.0, "2": 1.0, "3": 1.0}


async def escalated_through(db: Database, pipeline: CompiledRules, steps: int) -> tuple[EngineRunner, Clock, list[str]]:
    """An engine whose incident's chain has just taken `steps` steps; the receivers they paged."""
    clock = Clock()
    runner = EngineRunner(db, pipeline, clock=clock)
    await fire(db, clock)
    await run_for(runner, clock, 1 * M)
    started = (await chain(db)).started_at
    clock.now = started + steps * 10 * M + 30 * S  # just after the last of those steps was due
    await run_for(runner, clock, 5 * S)
    paged = ["secondary", "lead", "voice"][:steps]
    assert await escalated(db) == paged
    return runner, clock, paged


@pytest.mark.parametrize("steps_before_ack", [0, 1, 2])
async def test_an_acknowledgement_stops_the_chain_at_each_step(
    db: Database, pipeline: CompiledRules, steps_before_ack: int
) -> None:
    runner, clock, expected = await escalated_through(db, pipeline, steps_before_ack)
    await acknowledge(db, clock, by="ana")
    await run_for(runner, clock, 2 * timedelta(hours=1), every=30 * S)
    assert await escalated(db) == expected
    row = await chain(db)
    assert (row.stopped, row.stopped_by, row.next_step) == ("acknowledged", "ana", steps_before_ack)


async def test_an_acknowledgement_just_before_the_step_is_due_wins_even_without_a_pass_between(
    db: Database, pipeline: CompiledRules
) -> None:
    clock = Clock()
    runner = EngineRunner(db, pipeline, clock=clock)
    await fire(db, clock)
    await run_for(runner, clock, 1 * M)
    started = (await chain(db)).started_at
    clock.now = started + 10 * M - S
    await runner.run_once()
    await acknowledge(db, clock, by="bo")  # committed after the pass read the records
    clock.now = started + 10 * M
    await runner.run_once()
    assert await escalated(db) == []
    assert (await chain(db)).stopped == "acknowledged"


async def test_the_resolve_stops_the_chain(db: Database, pipeline: CompiledRules) -> None:
    clock = Clock()
    runner = EngineRunner(db, pipeline, clock=clock)
    await fire(db, clock)
    await run_for(runner, clock, 12 * M)
    assert await escalated(db) == ["secondary"]
    await resolve(db, clock)
    await run_for(runner, clock, 1 * timedelta(hours=1), every=30 * S)
    assert await escalated(db) == ["secondary"]
    assert (await chain(db)).stopped == "resolved"


@pytest.mark.parametrize("steps", [0, 1, 2])
async def test_the_receivers_a_chain_paged_are_told_the_resolve(
    db: Database, pipeline: CompiledRules, steps: int
) -> None:
    # Whoever was woken for the incident hears that it is over, with the route's resolved message; the
    # steps not taken page no one, and so tell no one.
    runner, clock, paged = await escalated_through(db, pipeline, steps)
    await resolve(db, clock)
    await run_for(runner, clock, 1 * timedelta(hours=1), every=30 * S)
    told = [receiver for receiver, reason in await sent(db) if reason == "resolved"]
    assert told == ["first", *paged]
    resolved = [r for r in await rows(db, OutboxRow) if r.reason == "resolved"]
    assert len({json.dumps(r.message, sort_keys=True) for r in resolved}) == 1  # the one message, to each
    assert resolved[0].message["status"] == "resolved"
    assert (await chain(db)).stopped == "resolved"


async def test_an_acknowledged_chain_still_tells_its_receivers_the_resolve_and_an_old_one_does_not(
    db: Database, pipeline: CompiledRules
) -> None:
    runner, clock, _ = await escalated_through(db, pipeline, 1)
    await acknowledge(db, clock, by="bo")
    await run_for(runner, clock, 5 * M, every=30 * S)
    await resolve(db, clock)
    await run_for(runner, clock, 10 * M, every=30 * S)
    assert [r for r, reason in await sent(db) if reason == "resolved"] == ["first", "secondary"]
    # The incident fires again (a new episode), as a warning this time: no chain (the policy covers
    # critical incidents); its resolve is the route's alone, the earlier chain paged no one for it.
    clock.now += timedelta(hours=1)
    again = {**node_down_labels("gpu-node-07"), "severity": "warning"}
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    for status in ("firing", "resolved"):
        ends_at = clock.now if status == "resolved" else None
        body = webhook([again], status=status, starts_at=clock.now - M, ends_at=ends_at)
        await ingestor.ingest(parse_webhook(body).batch)
        await run_for(runner, clock, 10 * M, every=30 * S)  # past the group interval
    assert [r for r, reason in await sent(db) if reason == "first"] == ["first", "first"]
    assert [r for r, reason in await sent(db) if reason == "resolved"] == ["first", "secondary", "first"]


async def test_a_warning_or_a_route_without_policy_never_escalates(db: Database, pipeline: CompiledRules) -> None:
    clock = Clock()
    runner = EngineRunner(db, pipeline, clock=clock)
    await fire(db, clock, {**node_down_labels("gpu-node-07"), "severity": "warning"})
    await run_for(runner, clock, timedelta(hours=1), every=30 * S)
    assert await sent(db) == [("first", "first")]
    assert await rows(db, EscalationRow) == []


async def test_a_restart_mid_chain_neither_repeats_nor_skips_a_step(db: Database, pipeline: CompiledRules) -> None:
    clock = Clock()
    a = EngineRunner(db, pipeline, clock=clock, holder="a")
    await fire(db, clock)
    await run_for(a, clock, 12 * M, every=5 * S)
    assert await escalated(db) == ["secondary"]
    # replica a dies; b takes the lease once it expired, knowing only what the store says
    clock.now += 20 * S
    b = EngineRunner(db, pipeline, clock=clock, holder="b")
    await run_for(b, clock, 30 * M, every=5 * S)
    assert await escalated(db) == ["secondary", "lead", "voice"]
    # and a, back, holds nothing to repeat
    await a.run_once()
    assert await escalated(db) == ["secondary", "lead", "voice"]


async def test_a_step_is_taken_when_due_even_if_the_restart_came_after_it_was_due(
    db: Database, pipeline: CompiledRules
) -> None:
    clock = Clock()
    a = EngineRunner(db, pipeline, clock=clock, holder="a")
    await fire(db, clock)
    await run_for(a, clock, 1 * M)
    started = (await chain(db)).started_at
    clock.now = started + 25 * M  # down through the first two steps' times
    b = EngineRunner(db, pipeline, clock=clock, holder="b")
    await b.run_once()
    await b.run_once()
    # every step missed is taken once, in order, rather than skipped
    assert await escalated(db) == ["secondary", "lead"]


async def test_a_silence_over_the_incident_stops_the_chain(db: Database, pipeline: CompiledRules) -> None:
    clock = Clock()
    runner = EngineRunner(db, pipeline, clock=clock)
    await fire(db, clock)
    await run_for(runner, clock, 12 * M)
    assert await escalated(db) == ["secondary"]
    async with db.write() as session:
        await actions.create_silence(
            session,
            matchers=['alertname="NodeDown"'],
            starts_at=clock.now,
            ends_at=clock.now + timedelta(hours=4),
            created_by="ana",
            comment="rack r12 power work",
            now=clock.now,
        )
        await session.commit()
    await run_for(runner, clock, timedelta(hours=1), every=30 * S)
    assert await escalated(db) == ["secondary"]
    row = await chain(db)
    assert (row.stopped, row.next_step) == ("silenced", 1)


async def test_a_step_the_store_shows_taken_is_not_taken_again(db: Database, pipeline: CompiledRules) -> None:
    """Under the lease this cannot happen; if it ever does (a holder that lost its lease unknowingly),
    the conditional update refuses the step, and the chain carries on from what the store says."""
    clock = Clock()
    runner = EngineRunner(db, pipeline, clock=clock)
    await fire(db, clock)
    await run_for(runner, clock, 1 * M)
    row = await chain(db)
    before = Chain(row.incident_key, row.policy, row.started_at, 0, row.next_at)
    after = Chain(row.incident_key, row.policy, row.started_at, 1, row.started_at + 20 * M)
    async with db.write() as session:  # another holder took step 1
        assert await escalations.save_step(session, before, after, {"event": "step", "step": 1}, clock.now)
        await session.commit()
    clock.now = row.started_at + 10 * M
    await runner.run_once()
    assert await escalated(db) == []
    await run_for(runner, clock, 11 * M, every=30 * S)
    assert await escalated(db) == ["lead"]


GPU_RULES = (
    RULES
    + """
aggregation:
  - {name: gpu-by-node, matchers: ['gpu!=""'], group_by: [alertname, node], group_wait: 30s}
"""
)


@pytest.mark.parametrize("chunk", [3, None])
async def test_a_chains_trail_events_beyond_a_chunk_are_written_after_the_pass(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int | None
) -> None:
    """A chain started on an incident of many alerts (a storm's thousands) is a trail event per alert:
    up to a chunk of them go in the pass's transaction, more are written after it, a chunk per
    transaction, as a storm's decisions are (they held the SQLite write lock, and every webhook, in it)."""
    if chunk is not None:
        monkeypatch.setattr(decisions_module, "DECISION_CHUNK", chunk)
    in_pass: list[int] = []
    write_events = escalation_module.write_events

    async def recorded(session, done):  # type: ignore[no-untyped-def]
        in_pass.append(len(done.events))
        await write_events(session, done)

    monkeypatch.setattr(passes_module, "write_events", recorded)
    (tmp_path / "rules.yml").write_text(GPU_RULES)
    clock = Clock()
    runner = EngineRunner(db, compile_rules(load_ruleset(tmp_path, {})), clock=clock)
    # bare-metal dcgm-exporter, as Prometheus sends it: scraped by IP, the node only in `Hostname`
    alerts = [dcgm_labels("10.0.7.7", "gpu-node-07", g, alertname="GPUHighTemp") for g in range(8)]
    await Ingestor(db, TouchBuffer(), clock=clock).ingest(parse_webhook(webhook(alerts)).batch)
    await run_for(runner, clock, 1 * M)
    assert (await chain(db)).policy == "critical-unacked"
    trail = [e for e in await rows(db, AlertEventRow) if e.kind == "escalation"]
    assert sorted(e.fingerprint for e in trail) == sorted({e.fingerprint for e in trail}), "one per alert"
    assert len(trail) == len(alerts)
    assert {e.detail["event"] for e in trail} == {"started"}
    written_with_the_pass = max(in_pass)
    assert written_with_the_pass == (0 if chunk is not None else len(alerts))
    assert len(runner._passes.pending) == 0

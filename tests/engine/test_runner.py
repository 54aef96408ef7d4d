"""Engine passes against real databases: decisions and outbox in the store, restarts, two replicas."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

import alertrouter.engine.cadence as cadence_module
import alertrouter.engine.decisions as decisions_module
import alertrouter.engine.passes as passes_module
from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.store import Database
from alertrouter.store.tables import AlertEventRow, AlertRow, IncidentRow, NotifyStateRow, OutboxRow
from support.counting import Commits
from support.courtesy import record_callers, watch_step
from support.passes import Clock, Passes, rows, run_for
from support.scenario import dcgm_labels, gpu_labels, node_down_labels, shipped_pipeline
from support.webhooks import webhook

S = timedelta(seconds=1)


async def test_node_incident_decisions_and_outbox_are_stored(db: Database) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    await ingestor.ingest(
        parse_webhook(webhook([gpu_labels("gpu-node-07", g, region="north") for g in range(8)])).batch
    )
    await run_for(runner, clock, timedelta(minutes=2))
    (incident,) = await rows(db, IncidentRow)
    assert incident.headline == "gpu-node-07: GPUHighTemp on 8/8 GPUs"
    assert (incident.kind, incident.status, incident.severity) == ("node", "firing", "warning")
    (outbox,) = await rows(db, OutboxRow)
    assert (outbox.receiver, outbox.reason, outbox.status) == ("ops-north", "first", "pending")
    assert outbox.message["headline"] == incident.headline
    assert len(outbox.message["alerts"]) == 8
    alerts = await rows(db, AlertRow)
    assert {a.decision for a in alerts} == {"aggregated"}
    assert {a.node for a in alerts} == {"gpu-node-07"}
    assert {a.incident_key for a in alerts} == {incident.key}
    assert alerts[0].decision_detail == {
        "routed_to": ["ops-north"],
        "next_send_at": "2026-11-21T08:30:30+00:00",
        "aggregation_rule": "gpu-by-node",
    }
    (state,) = await rows(db, NotifyStateRow)
    assert len(state.firing) == 8


async def test_restart_with_node_down_sends_no_gpu_page(db: Database) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    gpus = [gpu_labels("gpu-node-07", g, severity="critical", region="north") for g in range(8)]
    await ingestor.ingest(parse_webhook(webhook(gpus)).batch)
    clock.now += 10 * S
    await ingestor.ingest(parse_webhook(webhook([node_down_labels("gpu-node-07", region="north")])).batch)
    await run_for(EngineRunner(db, shipped_pipeline(), clock=clock, holder="a"), clock, timedelta(minutes=2))
    before = await rows(db, OutboxRow)
    assert [o.message["headline"] for o in before] == ["gpu-node-07: NodeDown"]
    # a new process: nothing in memory, the lease of the old one has expired
    clock.now += timedelta(minutes=1)
    await run_for(EngineRunner(db, shipped_pipeline(), clock=clock, holder="b"), clock, timedelta(minutes=25))
    told = await rows(db, OutboxRow)
    headlines = [o.message["headline"] for o in told if o.reason != "escalated"]
    assert set(headlines) == {"gpu-node-07: NodeDown"}
    assert len(headlines) == 3  # the first page, then repeats every 10 minutes, no GPU page
    # the shipped escalation policy's steps (tests/engine/test_escalation.py) are about NodeDown too
    assert {o.message["headline"] for o in told if o.reason == "escalated"} == {"gpu-node-07: NodeDown"}
    inhibited = [a for a in await rows(db, AlertRow) if a.decision == "inhibited"]
    assert len(inhibited) == 8
    assert inhibited[0].decision_detail["inhibit_rule"] == "node-down-mutes-node"


async def test_a_target_released_after_a_restart_waits_its_group_wait_from_the_release(db: Database) -> None:
    """NodeDown muted DCGMExporterDown; a new process reads that from the store, then the node comes back: the
    two resolves arrive seconds apart and DCGMExporterDown, released in between, is never told."""
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    down = node_down_labels("gpu-node-07")
    dcgm = {"alertname": "DCGMExporterDown", "instance": "gpu-node-07:9400", "job": "dcgm", "severity": "warning"}
    await ingestor.ingest(parse_webhook(webhook([down, dcgm])).batch)
    await run_for(EngineRunner(db, shipped_pipeline(), clock=clock, holder="a"), clock, timedelta(minutes=2))
    clock.now += timedelta(minutes=1)  # a new process, the old lease expired
    runner = EngineRunner(db, shipped_pipeline(), clock=clock, holder="b")
    await ingestor.ingest(parse_webhook(webhook([down], status="resolved")).batch)
    await run_for(runner, clock, 5 * S)
    await ingestor.ingest(parse_webhook(webhook([dcgm], status="resolved")).batch)
    await run_for(runner, clock, timedelta(minutes=10))
    told = [(o.message["headline"], o.reason) for o in await rows(db, OutboxRow)]
    assert told == [("gpu-node-07: NodeDown", "first"), ("gpu-node-07: NodeDown", "resolved")]


async def test_two_replicas_never_notify_twice(db: Database) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    a = EngineRunner(db, shipped_pipeline(), clock=clock, holder="replica-a")
    b = EngineRunner(db, shipped_pipeline(), clock=clock, holder="replica-b")
    await ingestor.ingest(parse_webhook(webhook([gpu_labels("gpu-node-01", 0, severity="critical")])).batch)
    ran = {"a": 0, "b": 0}
    end = clock.now + timedelta(minutes=25)
    while clock.now <= end:
        ran["a"] += (await a.run_once()) is not None
        ran["b"] += (await b.run_once()) is not None
        clock.now += 5 * S
    assert ran["a"] > 0
    assert ran["b"] == 0  # the lease is renewed by its holder

    async def told() -> tuple[list[str], list[str]]:
        outbox = await rows(db, OutboxRow)
        return [o.reason for o in outbox if o.reason != "escalated"], [
            o.receiver for o in outbox if o.reason == "escalated"
        ]

    # the route's messages, and the shipped escalation policy's steps at 10 and 20 minutes
    assert await told() == (["first", "repeat", "repeat"], ["oncall-secondary", "team-leader"])
    # the holder dies; after the lease runs out the other one takes over and carries on where it stopped
    clock.now += 20 * S
    await run_for(b, clock, timedelta(minutes=10))
    assert await told() == (
        ["first", "repeat", "repeat", "repeat"],
        ["oncall-secondary", "team-leader", "oncall-voice"],
    )


async def test_resolve_is_notified_and_incident_closed(db: Database) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    labels = [gpu_labels("gpu-node-03", g) for g in range(2)]
    await ingestor.ingest(parse_webhook(webhook(labels)).batch)
    await run_for(runner, clock, timedelta(minutes=1))
    # Alertmanager's resolved alert: endsAt is when it resolved.
    await ingestor.ingest(parse_webhook(webhook(labels, status="resolved", ends_at=clock.now)).batch)
    # Two GPUs of one exporter resolving together: held as stale for the shipped `stale.hold` (20m).
    await run_for(runner, clock, timedelta(minutes=21))
    assert [o.reason for o in await rows(db, OutboxRow)] == ["first", "resolved"]
    (incident,) = await rows(db, IncidentRow)
    assert incident.status == "resolved"
    assert {a.decision for a in await rows(db, AlertRow)} == {"resolved"}
    async with db.read() as s:
        assert await s.scalar(select(func.count()).select_from(OutboxRow)) == 2


async def test_alerts_handed_over_by_ingest_are_decided_as_if_read_back(db: Database) -> None:
    # The same store decided twice: by a runner the ingest hands its new alerts to, and by a fresh one
    # that reads everything from the store. The handoff must change nothing but the work done.
    clock = Clock()
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    ingestor = Ingestor(db, TouchBuffer(), clock=clock, on_committed=runner.committed)
    await runner.run_once()  # the first pass reads everything; the handoff serves the later ones
    clock.now += 5 * S
    fleet = [gpu_labels(f"gpu-node-{n:02d}", g, region="north") for n in range(3) for g in range(8)]
    await ingestor.ingest(parse_webhook(webhook(fleet)).batch)
    await ingestor.ingest(parse_webhook(webhook([node_down_labels("gpu-node-01", region="north")])).batch)
    assert len(runner._passes.live.handed) == len(fleet) + 1
    handed = await runner.run_once()
    assert runner._passes.live.handed == {}  # taken by the pass
    assert handed is not None

    fresh = await EngineRunner(db, shipped_pipeline(), clock=clock, holder=runner.holder).run_once()
    assert fresh is not None
    assert handed.decisions == fresh.decisions
    assert "inhibited" in {d.decision.value for d in handed.decisions.values()}  # node-01 GPUs, by its NodeDown


async def test_a_pass_evaluates_in_a_worker_thread_that_lets_the_event_loop_in(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The evaluation is pure CPU: it runs beside the event loop, pausing to let it in (`courtesy`)."""
    callers = record_callers(monkeypatch, passes_module)
    clock = Clock()
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    fleet = [dcgm_labels("10.0.7.7", "gpu-node-07", g, alertname="GPUHighTemp") for g in range(8)]
    await ingestor.ingest(parse_webhook(webhook(fleet)).batch)
    assert await runner.run_once() is not None
    assert len(callers) >= 8, "called before each alert, at least"
    assert threading.get_ident() not in callers, "never on the event loop's thread, which must not sleep"


async def two_hot_nodes(db: Database, clock: Clock) -> tuple[EngineRunner, Ingestor, list[dict[str, str]]]:
    """A runner that decided GPUHighTemp on the 8 GPUs of two nodes (dcgm-exporter, scraped by IP), its
    ingest, and the alerts' labels."""
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    hosts = {"10.0.7.7": "gpu-node-07", "10.0.7.8": "gpu-node-08"}
    fleet = [dcgm_labels(ip, host, g, alertname="GPUHighTemp") for ip, host in hosts.items() for g in range(8)]
    await ingestor.ingest(parse_webhook(webhook(fleet)).batch)
    assert await runner.run_once() is not None
    return runner, ingestor, fleet


async def resolve_in_turn(runner: EngineRunner, ingestor: Ingestor, alerts: list[dict[str, str]], clock: Clock) -> None:
    """Each of `alerts` resolved 5 s after the last, by its own webhook and pass."""
    for labels in alerts:
        clock.now += 5 * S
        await ingestor.ingest(parse_webhook(webhook([labels], status="resolved")).batch)
        assert await runner.run_once() is not None


async def test_a_big_passs_decision_changes_are_worked_out_beside_the_event_loop(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More decisions than a chunk (a storm's, every live alert's in a full pass: 280 ms at 108,000) are
    compared with what is stored after the commit, in a worker thread pausing as the evaluation does; a
    webhook's few before the commit, on the event loop (they go in the pass's own transaction)."""
    monkeypatch.setattr(decisions_module, "DECISION_CHUNK", 8)
    # (on the loop's thread, alerts decided, pauses offered)
    calls = watch_step(monkeypatch, passes_module, "decision_changes", lambda _result, decided, _now: len(decided))
    runner, ingestor, fleet = await two_hot_nodes(db, clock := Clock())
    assert calls == [(False, 16, 16)]  # a pause offered before each alert
    # the first pass after one that wrote both records tells both again: 16 decided
    await resolve_in_turn(runner, ingestor, fleet[:2], clock)
    assert calls[1:] == [(False, 16, 16), (True, 8, 0)]  # then node 07's incident alone: 8
    stored = [a.decision for a in await rows(db, AlertRow)]
    assert stored.count("held") == 14  # written from the worker thread's changes (first pass: all held)
    assert None not in stored
    assert "held" not in {a.decision for a in await rows(db, AlertRow) if a.status == "resolved"}


async def test_a_big_passs_incident_records_are_built_beside_the_event_loop(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass that evaluated more incidents than a chunk (a full pass's 30,000: 70 ms of building and
    comparing records) works out their records in a worker thread pausing as the evaluation does; a
    webhook's few on the event loop."""
    monkeypatch.setattr(decisions_module, "DECISION_CHUNK", 1)
    # (on the loop's thread, incidents evaluated, pauses offered)
    calls = watch_step(monkeypatch, passes_module, "record_changes", lambda _records, result: len(result.evaluated))
    runner, ingestor, fleet = await two_hot_nodes(db, clock := Clock())
    await resolve_in_turn(runner, ingestor, fleet[:2], clock)  # the first pass tells both records again
    assert calls == [(False, 2, 2), (False, 2, 2), (True, 1, 0)]  # a pause offered before each incident
    async with db.read() as session:
        assert await session.scalar(select(func.count()).select_from(IncidentRow)) == 2


@pytest.mark.parametrize(("chunk", "commits_made"), [(3, 1 + 3), (None, 1)])
async def test_a_passs_decisions_commit_with_it_or_in_short_transactions(
    db: Database, monkeypatch: pytest.MonkeyPatch, chunk: int | None, commits_made: int
) -> None:
    """Up to a chunk of changed decisions (a webhook's) go in the pass's own transaction: one commit. More
    (a storm's) are written after it, a chunk per transaction: the pass's, then 8 decisions in threes."""
    if chunk is not None:
        monkeypatch.setattr(decisions_module, "DECISION_CHUNK", chunk)
    clock = Clock()
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    await Ingestor(db, TouchBuffer(), clock=clock).ingest(
        parse_webhook(webhook([gpu_labels("gpu-node-07", g, region="north") for g in range(8)])).batch
    )
    commits = Commits(db)
    assert await runner.run_once() is not None
    assert commits.count == commits_made
    alerts = await rows(db, AlertRow)
    assert len(alerts) == 8
    assert all(a.decision is not None for a in alerts)
    async with db.read() as s:
        trail = await s.scalar(select(func.count()).select_from(AlertEventRow).where(AlertEventRow.kind == "decision"))
    assert trail == 8
    # remembered: the next pass has nothing to write
    commits.count = 0
    clock.now += 5 * S
    await runner.run_once()
    assert commits.count <= 1  # at most the lease renewal


@pytest.mark.parametrize(("chunk", "worked_out"), [(3, "after"), (None, "before")])
async def test_a_storms_decisions_are_worked_out_after_its_messages_are_handed_to_delivery(
    db: Database, monkeypatch: pytest.MonkeyPatch, chunk: int | None, worked_out: str
) -> None:
    """The pass that tells of an incident hands its messages to delivery once it has committed. When it
    decided more alerts than a chunk (a storm's ten thousand), their decisions are worked out only after
    that, so that a message is not kept waiting behind them; a webhook's few go into the pass's own
    transaction (`test_a_passs_decisions_commit_with_it_or_in_short_transactions`)."""
    if chunk is not None:
        monkeypatch.setattr(decisions_module, "DECISION_CHUNK", chunk)
    seen: list[str] = []
    working_out = decisions_module.decision_changes

    def noted(*args: Any, **kwargs: Any) -> decisions_module.DecisionChanges:
        seen.append("decisions")
        return working_out(*args, **kwargs)

    monkeypatch.setattr(passes_module, "decision_changes", noted)
    clock = Clock()
    runner = EngineRunner(db, shipped_pipeline(), clock=clock, on_intents=lambda: seen.append("delivery"))
    await Ingestor(db, TouchBuffer(), clock=clock).ingest(
        parse_webhook(webhook([gpu_labels("gpu-node-07", g, region="north") for g in range(8)])).batch
    )
    await run_for(runner, clock, timedelta(minutes=2))
    assert seen.count("delivery") == 1  # the node incident's first message
    told = seen.index("delivery")
    assert seen[told + 1 if worked_out == "after" else told - 1] == "decisions"
    assert len(await rows(db, OutboxRow)) == 1
    assert {a.decision for a in await rows(db, AlertRow)} == {"aggregated"}  # written either way


async def test_a_due_pass_waits_for_a_pause_in_ingest(db: Database) -> None:
    storing = True
    runner = EngineRunner(db, shipped_pipeline(), interval=timedelta(milliseconds=10))
    runner.ingest_quiet = lambda: 0.0 if storing else 1.0
    passes = Passes(runner)
    runner.start()
    try:
        runner.nudge()
        await asyncio.sleep(0.5)  # many intervals, all inside one burst of webhooks
        assert passes.count == 0
        storing = False
        await passes.wait()
    finally:
        await runner.stop()


async def test_a_pass_waits_for_ingest_only_so_long(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cadence_module, "INGEST_WAIT_MAX", 0.2)
    runner = EngineRunner(db, shipped_pipeline(), interval=timedelta(milliseconds=10))
    runner.ingest_quiet = lambda: 0.0  # webhooks without end
    passes = Passes(runner)
    runner.start()
    try:
        await passes.wait(minimum=2)
    finally:
        await runner.stop()
    assert runner.live_alerts() == {}  # the passes ran (on an empty store)


async def test_a_storm_that_ends_is_resolved_in_the_store_and_told_once(db: Database) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    down = [node_down_labels(f"gpu-node-{n:02d}", region="north", rack="r12") for n in range(8)]
    await ingestor.ingest(parse_webhook(webhook(down)).batch)
    await run_for(runner, clock, timedelta(minutes=2))
    (cluster,) = [i for i in await rows(db, IncidentRow) if i.kind == "cluster"]
    assert cluster.status == "firing"
    await ingestor.ingest(parse_webhook(webhook(down, status="resolved")).batch)
    # a restart in between: the new process knows the storm only from the store
    runner = EngineRunner(db, shipped_pipeline(), clock=clock, holder=runner.holder)
    await run_for(runner, clock, timedelta(minutes=10))
    incidents = await rows(db, IncidentRow)
    (cluster,) = [i for i in incidents if i.kind == "cluster"]
    assert (cluster.status, cluster.headline) == ("resolved", "NodeDown on 8 nodes in region north, rack r12")
    assert cluster.resolved_at is not None
    nodes = [i for i in incidents if i.kind == "node"]
    assert {(i.status, i.parent_key) for i in nodes} == {("resolved", cluster.key)}
    told = sorted((o.receiver, o.reason) for o in await rows(db, OutboxRow))
    assert told == [("critical-north", "first"), ("critical-north", "resolved")]

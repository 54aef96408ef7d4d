"""Stale is not resolved through the real runner and store (SQLite and PostgreSQL): a bare-metal node dies
(its GPU alerts resolve, NodeDown follows), the engine restarts in the middle, and comes back. Nothing but
the stored alerts decides staleness, so the new process keeps the GPUs stale, tells nothing again, and
tells their resolve only when the node is back."""

from __future__ import annotations

from datetime import timedelta

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.metrics import Metrics
from alertrouter.store import Database
from alertrouter.store.tables import AlertRow, IncidentRow, OutboxRow
from support.passes import Clock, rows, run_for
from support.scenario import dcgm_labels, node_exporter_down_labels, shipped_pipeline
from support.webhooks import webhook

S = timedelta(seconds=1)
MIN = timedelta(minutes=1)
HOT = [dcgm_labels("10.0.0.7", "gpu-node-07", g, alertname="GPUHighTemp", severity="warning") for g in (2, 5)]
DOWN = node_exporter_down_labels("10.0.0.7")


async def told(db: Database, alertname: str) -> list[str]:
    return [o.reason for o in await rows(db, OutboxRow) if f'alertname="{alertname}"' in o.incident_key]


async def test_a_restart_keeps_dead_gpus_stale_until_their_node_is_back(db: Database) -> None:
    clock, metrics = Clock(), Metrics()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)

    def runner() -> EngineRunner:
        return EngineRunner(db, shipped_pipeline(), clock=clock, metrics=metrics)

    engine = runner()
    hot_since = clock.now
    await ingestor.ingest(parse_webhook(webhook(HOT, starts_at=hot_since)).batch)
    await run_for(engine, clock, MIN)
    assert await told(db, "GPUHighTemp") == ["first"]

    dark = clock.now
    await ingestor.ingest(parse_webhook(webhook(HOT, status="resolved", starts_at=hot_since, ends_at=dark)).batch)
    await run_for(engine, clock, MIN)
    await ingestor.ingest(parse_webhook(webhook([DOWN], starts_at=dark + 30 * S)).batch)
    await run_for(engine, clock, MIN)
    assert await told(db, "NodeDown") == ["first"]
    gpus = [a for a in await rows(db, AlertRow) if a.labels["alertname"] == "GPUHighTemp"]
    assert {(a.decision, a.decision_detail["stale_reason"]) for a in gpus} == {("stale", "source_down")}
    assert metrics.alerts_stale._value.get() == 2
    assert metrics.stale.labels(reason="source_down")._value.get() == 2  # resolving, then stale

    engine = runner()  # a restart: everything it knows comes back from the store
    await run_for(engine, clock, 5 * MIN)  # NodeDown's repeat (critical: 10m) is not due yet
    assert await told(db, "GPUHighTemp") == ["first"]
    assert await told(db, "NodeDown") == ["first"]
    (incident,) = [i for i in await rows(db, IncidentRow) if i.labels.get("alertname") == "GPUHighTemp"]
    assert incident.status == "firing"
    assert incident.summary["stale"] == 2
    assert incident.summary["no_data_since"] == dark.isoformat()

    back = clock.now
    resolved = webhook([DOWN], status="resolved", starts_at=dark + 30 * S, ends_at=back)
    await ingestor.ingest(parse_webhook(resolved).batch)
    await run_for(engine, clock, MIN)
    assert await told(db, "NodeDown") == ["first", "resolved"]
    assert await told(db, "GPUHighTemp") == ["first"]  # `settle`: the GPUs may fire again
    await run_for(engine, clock, 2 * MIN)
    assert await told(db, "GPUHighTemp") == ["first", "resolved"]
    gpus = [a for a in await rows(db, AlertRow) if a.labels["alertname"] == "GPUHighTemp"]
    assert {a.decision for a in gpus} == {"resolved"}


async def test_a_node_dark_for_hours_keeps_its_gpus_stale_past_the_hour_resolved_alerts_are_kept(
    db: Database,
) -> None:
    """Resolved alerts leave the engine an hour after they changed; stale ones stay (in memory and in what a
    new process reads back), or their incident would be left open with no alert to close it."""
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    engine = EngineRunner(db, shipped_pipeline(), clock=clock)
    hot_since = clock.now
    await ingestor.ingest(parse_webhook(webhook(HOT, starts_at=hot_since)).batch)
    await run_for(engine, clock, MIN)
    dark = clock.now
    await ingestor.ingest(parse_webhook(webhook(HOT, status="resolved", starts_at=hot_since, ends_at=dark)).batch)
    await ingestor.ingest(parse_webhook(webhook([DOWN], starts_at=dark + 30 * S)).batch)
    await run_for(engine, clock, 2 * MIN)
    await run_for(engine, clock, timedelta(hours=2), every=5 * MIN)
    assert len([a for a in engine.live_alerts().values() if a.labels["alertname"] == "GPUHighTemp"]) == 2
    # another node's alert, stored now: what a new process reads after its first pass is what changed since
    other = dcgm_labels("10.0.0.1", "gpu-node-01", 0, alertname="GPUXidError")
    await ingestor.ingest(parse_webhook(webhook([other], starts_at=clock.now)).batch)
    engine = EngineRunner(db, shipped_pipeline(), clock=clock)  # a new process reads them back
    await run_for(engine, clock, MIN)
    assert len([a for a in engine.live_alerts().values() if a.labels["alertname"] == "GPUHighTemp"]) == 2
    assert await told(db, "GPUHighTemp") == ["first"]
    (incident,) = [i for i in await rows(db, IncidentRow) if i.labels.get("alertname") == "GPUHighTemp"]
    assert incident.status == "firing"
    back = clock.now
    resolved = webhook([DOWN], status="resolved", starts_at=dark + 30 * S, ends_at=back)
    await ingestor.ingest(parse_webhook(resolved).batch)
    await run_for(engine, clock, 3 * MIN)
    assert await told(db, "GPUHighTemp") == ["first", "resolved"]
    await run_for(engine, clock, timedelta(hours=1, minutes=5), every=5 * MIN)
    engine.nudge(force=True)  # an idle pass evicts nothing: the next pass that decides does
    await engine.run_once()
    assert not [a for a in engine.live_alerts().values() if a.labels["alertname"] == "GPUHighTemp"]


async def test_a_node_back_soon_after_a_repeat_is_told_back_before_its_gpus(db: Database) -> None:
    """node-exporter's `up{job="node-exporter"} == 0`: NodeDown repeats (critical, every 10m) and resolves 2.5
    minutes later, so its resolved message waits for the group interval (5m) after the repeat, past the GPUs'
    `settle`. The GPUs stay stale until it is told; the outbox holds the node's recovery first. Restarted in
    between: what the GPUs wait for is read from the stored incident record."""
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    engine = EngineRunner(db, shipped_pipeline(), clock=clock)
    down = node_exporter_down_labels("10.0.0.7", job="node-exporter")
    hot_since = clock.now
    await ingestor.ingest(parse_webhook(webhook(HOT, starts_at=hot_since)).batch)
    await run_for(engine, clock, MIN)
    dark = clock.now
    await ingestor.ingest(parse_webhook(webhook(HOT, status="resolved", starts_at=hot_since, ends_at=dark)).batch)
    await run_for(engine, clock, MIN)
    await ingestor.ingest(parse_webhook(webhook([down], starts_at=dark + 30 * S)).batch)
    await run_for(engine, clock, 11 * MIN)
    assert [r for r in await told(db, "NodeDown") if r != "escalated"] == ["first", "repeat"]
    (node_down,) = [i for i in await rows(db, IncidentRow) if i.labels.get("alertname") == "NodeDown"]
    (gpu,) = [i for i in await rows(db, IncidentRow) if i.labels.get("alertname") == "GPUHighTemp"]
    assert (gpu.summary["no_data_source"], gpu.summary["no_data_down"]) == (node_down.key, True)

    back = clock.now
    resolved = webhook([down], status="resolved", starts_at=dark + 30 * S, ends_at=back)
    await ingestor.ingest(parse_webhook(resolved).batch)
    await run_for(engine, clock, 3 * MIN)
    engine = EngineRunner(db, shipped_pipeline(), clock=clock)  # a restart while the GPUs wait
    await run_for(engine, clock, 10 * S)
    assert await told(db, "GPUHighTemp") == ["first"]  # `settle` is over; NodeDown's resolve is not told yet
    gpus = [a for a in await rows(db, AlertRow) if a.labels["alertname"] == "GPUHighTemp"]
    assert {(a.decision, a.decision_detail["stale_reason"]) for a in gpus} == {("stale", "returning")}
    await run_for(engine, clock, 3 * MIN)
    outbox = sorted(await rows(db, OutboxRow), key=lambda o: o.id)
    # NodeDown's to the on-call and to the secondary its escalation paged, then the GPUs', in one pass
    assert [(o.incident_key, o.receiver) for o in outbox if o.reason == "resolved"] == [
        (node_down.key, "oncall-core"),
        (node_down.key, "oncall-secondary"),
        (gpu.key, "ops"),
    ]
    assert len({o.created_at for o in outbox if o.reason == "resolved"}) == 1
    (gpu,) = [i for i in await rows(db, IncidentRow) if i.labels.get("alertname") == "GPUHighTemp"]
    assert gpu.status == "resolved"
    assert (gpu.summary["no_data_source"], gpu.summary["no_data_down"]) == (node_down.key, False)

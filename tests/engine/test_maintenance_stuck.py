"""A node in maintenance longer than `maintenance.stuck_after` is reported by `NodeMaintenanceStuck`,
once per episode, on both stores: raised through ingest, decided and told like any alert (the node's
own maintenance does not mute it), and resolved by itself once the window ends."""

from __future__ import annotations

from datetime import datetime, timedelta

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.maintenance import Maintenance
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.maintenance.stuck import STUCK_ALERTNAME, StuckWatch
from alertrouter.pipeline.nodes import Discovered
from alertrouter.store import Database
from alertrouter.store import maintenance as store
from alertrouter.store.tables import AlertRow, OutboxRow
from support.passes import T0, Clock, rows, run_for
from support.scenario import shipped_pipeline

H = timedelta(hours=1)
M = timedelta(minutes=1)


async def start(db: Database, node: str, at: datetime, hours: int) -> None:
    async with db.write() as session:
        await store.start_maintenance(
            session, nodes=[node], starts_at=at, ends_at=at + hours * H, reason="RMA 4711", by="alice", now=at
        )
        await session.commit()


async def test_a_stuck_window_is_reported_once_and_resolves_when_it_ends(db: Database) -> None:
    clock, touches = Clock(), TouchBuffer()
    ingestor = Ingestor(db, touches, clock=clock)
    watch = StuckWatch(db, ingestor.ingest, stuck_after=24 * H, clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    await start(db, "gpu-node-07", T0, 48)
    clock.now = T0 + 23 * H
    assert await watch.check_once() == []
    assert await rows(db, AlertRow) == []
    clock.now = T0 + 24 * H
    assert await watch.check_once() == ["gpu-node-07"]
    await run_for(runner, clock, 10 * M, every=M)
    for _ in range(3):  # checked again and again: the same episode, one alert
        assert await watch.check_once() == ["gpu-node-07"]
        clock.now += M
    (alert,) = await rows(db, AlertRow)
    assert alert.labels == {
        "alertname": STUCK_ALERTNAME,
        "severity": "warning",
        "maintenance_node": "gpu-node-07",
        "maintenance_source": "manual",
    }
    assert alert.starts_at == T0 + 24 * H
    assert alert.annotations["summary"] == "gpu-node-07 has been in maintenance for over 1d (RMA 4711)"
    assert alert.decision == "notify"
    told = await rows(db, OutboxRow)
    assert [o.reason for o in told] == ["first"]

    # The window ends: not re-sent, the alert expires (its endsAt passes) and resolves.
    async with db.write() as session:
        await store.end_maintenance(session, nodes=["gpu-node-07"], by="bob", now=clock.now)
        await session.commit()
    assert await watch.check_once() == []
    clock.now += 10 * M
    await Maintenance(db, touches, interval=M, retention=24 * H, clock=clock).run_once()
    (alert,) = await rows(db, AlertRow)
    assert alert.status == "resolved"


async def test_a_cordon_from_the_lookup_is_watched_too(db: Database) -> None:
    clock = Clock(T0 + 30 * H)
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    held = Discovered(maintenance={"gpu-node-08": ("cordoned", T0)})
    watch = StuckWatch(db, ingestor.ingest, stuck_after=24 * H, clock=clock, discovered=lambda: held)
    assert await watch.check_once() == ["gpu-node-08"]
    (alert,) = await rows(db, AlertRow)
    assert (alert.labels["maintenance_source"], alert.annotations["summary"]) == (
        "cluster",
        "gpu-node-08 has been in maintenance for over 1d (cordoned)",
    )

"""The engine lease at shutdown: given up, so another replica decides at its next pass (a rolling
update), not once the lease has run out; `alertrouter_engine_leader` says which replica holds it; and
when a leader reads it before a pass."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import event

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.metrics import Metrics
from alertrouter.store import Database
from support.passes import Clock
from support.scenario import dcgm_labels, shipped_pipeline
from support.webhooks import webhook

S = timedelta(seconds=1)


def leader(metrics: Metrics) -> float | None:
    return metrics.registry.get_sample_value("alertrouter_engine_leader")


async def test_a_stopped_leader_hands_the_lease_over_at_once(db: Database) -> None:
    clock = Clock()
    alert = dcgm_labels("10.0.0.7", "gpu-node-07", 3, xid="79")
    await Ingestor(db, TouchBuffer(), clock=clock).ingest(parse_webhook(webhook([alert])).batch)
    metrics_a, metrics_b = Metrics(), Metrics()
    a = EngineRunner(db, shipped_pipeline(), metrics_a, clock=clock, holder="replica-a")
    b = EngineRunner(db, shipped_pipeline(), metrics_b, clock=clock, holder="replica-b")
    assert await a.run_once() is not None
    assert leader(metrics_a) == 1
    assert await b.run_once() is None  # held by a, for its lease's 15 s
    a.start()
    await a.stop()
    assert leader(metrics_a) == 0
    assert await b.run_once() is not None  # the same instant: no wait for the lease to run out
    assert leader(metrics_b) == 1
    assert await a.run_once() is None  # and a, started again, does not take it back


async def test_a_leader_reads_the_lease_before_a_pass_only_once_its_renewal_is_a_third_of_the_lease_old(
    db: Database,
) -> None:
    """Within a third of the lease's time since its holder renewed it, no other replica can hold it: the
    pass goes straight to its work (one statement fewer per pass); later it reads the lease first again."""
    clock = Clock()
    reads: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "FROM leases" in statement:
            reads.append(statement)

    event.listen(db.engine.sync_engine, "before_cursor_execute", count)
    try:
        runner = EngineRunner(db, shipped_pipeline(), clock=clock, holder="replica-a")
        ingestor = Ingestor(db, TouchBuffer(), clock=clock, on_committed=runner.committed)
        await runner.run_once()  # not the leader yet: it looks first (and takes the lease, reading it again)
        assert reads
        reads.clear()
        for gpu in range(3):  # passes within 5 s (a third of the 15 s lease) of the last renewal
            clock.now += 1 * S
            labels = dcgm_labels("10.0.0.7", "gpu-node-07", gpu, xid="79")
            await ingestor.ingest(parse_webhook(webhook([labels])).batch)
            assert await runner.run_once() is not None
        assert reads == []
        clock.now += 6 * S  # the lease renewed by the last pass is now more than a third old
        await ingestor.ingest(parse_webhook(webhook([dcgm_labels("10.0.0.8", "gpu-node-08", 0)])).batch)
        assert await runner.run_once() is not None
        assert len(reads) == 1
        # Another replica that took the lease once it ran out is seen by a stale leader before any work.
        b = EngineRunner(db, shipped_pipeline(), clock=clock, holder="replica-b")
        clock.now += 16 * S
        assert await b.run_once() is not None
        assert await runner.run_once() is None
        assert len(reads) == 3  # b's first look, and a's
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", count)

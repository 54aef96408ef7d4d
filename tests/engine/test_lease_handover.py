"""The engine lease at shutdown: given up, so another replica decides at its next pass (a rolling
update), not once the lease has run out; `alertrouter_engine_leader` says which replica holds it."""

from __future__ import annotations

import json

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.metrics import Metrics
from alertrouter.store import Database
from support.passes import Clock
from support.scenario import dcgm_labels, shipped_pipeline


def leader(metrics: Metrics) -> float | None:
    return metrics.registry.get_sample_value("alertrouter_engine_leader")


async def test_a_stopped_leader_hands_the_lease_over_at_once(db: Database) -> None:
    clock = Clock()
    alert = dcgm_labels("10.0.0.7", "gpu-node-07", 3, xid="79")
    item = {"status": "firing", "labels": alert, "annotations": {}, "startsAt": "2026-01-01T00:00:00Z"}
    body = json.dumps({"version": "4", "status": "firing", "receiver": "alertrouter", "alerts": [item]})
    await Ingestor(db, TouchBuffer(), clock=clock).ingest(parse_webhook(body.encode()).batch)
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

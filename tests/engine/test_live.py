"""`LiveAlerts` as a restarted engine fills it from the store: each alert's stored decision kept as one
shared (decision, detail) pair per distinct one, not one per alert (100,000 live alerts hold a few
thousand distinct ones)."""

from __future__ import annotations

import json

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.store import Database
from alertrouter.store.tables import AlertRow
from support.passes import Clock, rows
from support.scenario import dcgm_labels, node_exporter_down_labels, shipped_pipeline
from support.webhooks import webhook


async def test_a_restarted_engine_holds_one_pair_per_distinct_stored_decision(db: Database) -> None:
    clock = Clock()
    hosts = {f"10.0.7.{n}": f"gpu-node-{n:02d}" for n in range(1, 4)}
    fleet = [dcgm_labels(ip, host, g, alertname="GPUHighTemp") for ip, host in hosts.items() for g in range(8)]
    fleet.append(node_exporter_down_labels("10.0.7.2"))  # its node's GPU alerts: inhibited, the others held
    await Ingestor(db, TouchBuffer(), clock=clock).ingest(parse_webhook(webhook(fleet)).batch)
    first = EngineRunner(db, shipped_pipeline(), clock=clock)
    assert await first.run_once() is not None
    stored = {
        (a.fingerprint, a.decision, json.dumps(a.decision_detail, sort_keys=True)) for a in await rows(db, AlertRow)
    }
    distinct = {(decision, detail) for _, decision, detail in stored}
    assert len(stored) == 25
    assert len(distinct) < len(stored)  # the fixture shares decisions, or the test proves nothing

    restarted = EngineRunner(db, shipped_pipeline(), clock=clock, holder=first.holder)  # the same replica
    assert await restarted.run_once() is not None
    held = restarted._passes.live.decisions
    assert {fp: (d, json.dumps(detail, sort_keys=True)) for fp, (d, detail) in held.items()} == {
        fp: (decision, detail) for fp, decision, detail in stored
    }
    assert len({id(pair) for pair in held.values()}) == len(distinct)

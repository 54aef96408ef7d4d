"""Where a pass's changed decisions are written: a webhook's few in the pass's own transaction (one
commit per pass), under a savepoint; should one row's values fail there, the savepoint alone rolls
back, the pass's incidents and messages still commit, the rows are written after it one by one, and the
alert whose row failed is quarantined. On both stores."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import timedelta
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
from alertrouter.store.tables import AlertEventRow, AlertRow, OutboxRow
from support.passes import Clock
from support.scenario import dcgm_labels, shipped_pipeline


def webhook(*labels: dict[str, str]) -> bytes:
    """An Alertmanager webhook (version 4) of these firing alerts."""
    alerts = [
        {
            "status": "firing",
            "labels": lb,
            "annotations": {},
            "startsAt": "2026-11-21T07:59:00Z",
            "endsAt": "0001-01-01T00:00:00Z",
        }
        for lb in labels
    ]
    return json.dumps({"version": "4", "status": "firing", "receiver": "alertrouter", "alerts": alerts}).encode()


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
    batch = parse_webhook(webhook(dcgm(7, 1), dcgm(7, 2), dcgm(8, 0))).batch
    bad = batch.alerts[0].fingerprint  # gpu-node-07/1
    await ingestor.ingest(batch)
    real = decisions_module.insert_events

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
    # one decision event per alert decided, and none of the refused row's left over
    decided = {"gpu-node-07/2": 1, "gpu-node-08/0": 1}
    assert await _events(db) == (decided if refused else {**decided, "gpu-node-07/1": 1})
    # the pass's messages still go out: both nodes' incidents after the shipped group wait
    clock.now += timedelta(minutes=1)
    await runner.run_once()
    async with db.read() as s:
        headlines = [o.message["headline"] for o in (await s.scalars(select(OutboxRow))).all()]
    assert any("gpu-node-07" in h for h in headlines)
    assert any("gpu-node-08" in h for h in headlines)

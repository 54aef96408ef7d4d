"""One alert that the engine cannot process must not stop it for everyone else: it is quarantined
(left out of every later pass, with its error shown), and the next critical alert is still notified
within one pass. On both stores."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, text

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.labelset import LabelSet
from alertrouter.metrics import Metrics
from alertrouter.pipeline.nodes import NodeIdentity
from alertrouter.pipeline.types import Decision
from alertrouter.process.loops import LoopHealth
from alertrouter.store import Database, queries
from alertrouter.store.tables import AlertEventRow, AlertRow, OutboxRow
from support.scenario import shipped_pipeline
from support.webhooks import webhook

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def dcgm(node: int, gpu: str, alertname: str = "GPUXidError", severity: str = "critical") -> dict[str, str]:
    """As dcgm-exporter's series reach Alertmanager (../shared/reference/gpu-alerts.md)."""
    return {
        "alertname": alertname,
        "instance": f"10.0.0.{node}:9400",
        "Hostname": f"gpu-node-{node:02d}",
        "gpu": gpu,
        "UUID": f"GPU-5c9f4d1a-8a8e-2b1c-9d3e-7f6a5b4c{node:02d}{gpu}",
        "pci_bus_id": "00000000:3B:00.0",
        "device": f"nvidia{gpu}",
        "modelName": "NVIDIA H100 80GB HBM3",
        "job": "dcgm-exporter",
        "severity": severity,
        "region": "north",
    }


@dataclasses.dataclass(frozen=True, slots=True)
class FragileNodes(NodeIdentity):
    """A fake stage with a bug on one label value, as the issue's `gpu="²"` was in the GPU grid."""

    def enrich(self, labels: Mapping[str, str]) -> LabelSet:
        if labels.get("gpu") == "²":
            int(labels["gpu"])  # raises ValueError, as str.isdigit() let it through
        return NodeIdentity.enrich(self, labels)


async def decisions(db: Database) -> dict[str, tuple[str | None, Any]]:
    async with db.read() as s:
        rows = (await s.execute(select(AlertRow.labels, AlertRow.decision, AlertRow.decision_detail))).all()
    return {f"{r.labels['Hostname']}/{r.labels['gpu']}": (r.decision, r.decision_detail) for r in rows}


async def quarantine_trail(db: Database, fp: str) -> list[tuple[datetime, datetime, dict[str, Any]]]:
    """The alert's trail events of its quarantine: (at, episode_starts_at, detail); read by column, so an
    alert row that cannot be read back does not stop the reading of its events."""
    async with db.read() as s:
        rows = (
            await s.execute(
                select(AlertEventRow.at, AlertEventRow.episode_starts_at, AlertEventRow.detail).where(
                    AlertEventRow.fingerprint == fp, AlertEventRow.kind == "decision"
                )
            )
        ).all()
    return [(at, began, detail) for at, began, detail in rows if detail.get("decision") == Decision.QUARANTINED]


async def headlines(db: Database) -> list[str]:
    async with db.read() as s:
        return [o.message["headline"] for o in (await s.scalars(select(OutboxRow).order_by(OutboxRow.id))).all()]


async def test_an_alert_whose_evaluation_fails_is_quarantined_and_the_next_critical_alert_notified(
    db: Database,
) -> None:
    clock, metrics = Clock(), Metrics()
    pipeline = dataclasses.replace(shipped_pipeline(), nodes=FragileNodes(**_fields(shipped_pipeline().nodes)))
    runner = EngineRunner(db, pipeline, metrics, clock=clock, loops=LoopHealth(metrics))
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    await ingestor.ingest(parse_webhook(webhook([dcgm(7, "²"), dcgm(7, "3")])).batch)
    await runner.run_once()
    stored = await decisions(db)
    assert stored["gpu-node-07/²"][0] == Decision.QUARANTINED
    assert "ValueError" in stored["gpu-node-07/²"][1]["error"]
    # The decision trail says so too (the incident page's trail, the history), with the alert's episode.
    fragile = parse_webhook(webhook([dcgm(7, "²")])).batch.alerts[0]
    ((at, began, detail),) = await quarantine_trail(db, fragile.fingerprint)
    assert (at, began) == (T0, fragile.starts_at)
    assert detail["error"] == stored["gpu-node-07/²"][1]["error"]
    async with db.read() as s:
        assert await queries.count_quarantined_alerts(s) == 1  # alertrouter_quarantined{kind="alert"}
    assert stored["gpu-node-07/3"][0] is not None
    assert stored["gpu-node-07/3"][0] != Decision.QUARANTINED
    # A critical alert sent afterwards is decided in the very next pass.
    clock.now += timedelta(seconds=1)
    await ingestor.ingest(parse_webhook(webhook([dcgm(9, "0")])).batch)
    await runner.run_once()
    assert (await decisions(db))["gpu-node-09/0"][0] in (Decision.HELD, Decision.NOTIFY)
    clock.now += timedelta(minutes=1)  # past the shipped group wait
    await runner.run_once()
    assert any("gpu-node-09" in h for h in await headlines(db))
    assert metrics.registry.get_sample_value("alertrouter_loop_errors_total", {"loop": "engine"}) == 1


def _fields(nodes: NodeIdentity) -> dict[str, Any]:
    return {f.name: getattr(nodes, f.name) for f in dataclasses.fields(nodes)}


@pytest.mark.parametrize("read", ["first pass", "incremental pass"])
async def test_a_row_the_driver_cannot_read_back_is_quarantined(db: Database, read: str) -> None:
    # Stored before the ingest boundary existed (year 10000, which asyncpg cannot read into Python), or
    # written by hand: every read of the live alerts failed, and the engine task died without a log line.
    # Met by the first pass's read through a session, or by a later pass's outside it (`store.reads_now`).
    clock = Clock()
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    await ingestor.ingest(parse_webhook(webhook([dcgm(7, "1"), dcgm(7, "2")])).batch)
    bad = parse_webhook(webhook([dcgm(7, "1")])).batch.alerts[0].fingerprint
    if read == "incremental pass":
        await ingestor.ingest(parse_webhook(webhook([dcgm(9, "0")])).batch)
        await runner.run_once()
        assert (await decisions(db))["gpu-node-07/1"][0] != Decision.QUARANTINED
    async with db.write() as s:
        # A change as any write makes one: `updated_at` moves too (a pass re-reads only rows whose did).
        await s.execute(
            text(
                "UPDATE alerts SET starts_at = '10000-12-31 23:59:59', updated_at = '2026-11-21 08:00:01' "
                "WHERE fingerprint = :fp"
            ),
            {"fp": bad},
        )
        await s.commit()
    await runner.run_once()
    stored = await decisions(db)
    assert stored["gpu-node-07/1"][0] == Decision.QUARANTINED
    assert stored["gpu-node-07/1"][1]["error"]
    # Its trail event cannot take the unreadable start: it takes the time of the quarantine (readable).
    ((at, began, detail),) = await quarantine_trail(db, bad)
    assert (at, began) == (T0, T0)
    assert detail["error"] == stored["gpu-node-07/1"][1]["error"]
    assert stored["gpu-node-07/2"][0] not in (None, Decision.QUARANTINED)
    # Later passes leave it out and keep working.
    clock.now += timedelta(seconds=5)
    await ingestor.ingest(parse_webhook(webhook([dcgm(8, "0")])).batch)
    await runner.run_once()
    assert (await decisions(db))["gpu-node-08/0"][0] in (Decision.HELD, Decision.NOTIFY)


async def test_names_and_keys_from_long_label_values_fit_their_columns(db: Database) -> None:
    # A Hostname past PostgreSQL's varchar(255) node column (and an incident key past 512) made every
    # pass fail for ever: "value too long for type character varying(255)".
    clock = Clock()
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    long_host = "gpu-node-" + "x" * 4000
    labels = [dcgm(7, "0") | {"Hostname": long_host}, dcgm(7, "1") | {"Hostname": long_host + "y"}]
    await ingestor.ingest(parse_webhook(webhook(labels)).batch)
    await runner.run_once()
    async with db.read() as s:
        rows = (await s.execute(select(AlertRow.node, AlertRow.incident_key, AlertRow.decision))).all()
    assert len(rows) == 2
    assert all(r.decision not in (None, Decision.QUARANTINED) for r in rows)
    assert all(r.node is not None and len(r.node) <= 255 and r.node.startswith("gpu-node-xxx") for r in rows)
    assert len({r.node for r in rows}) == 2  # cut, and still told apart
    assert all(r.incident_key is not None and len(r.incident_key) <= 512 for r in rows)

"""One row the store refuses must not stop a pass (issue 44): when an incident's or a learned alias's write
is refused for a reason of its own (not an outage), its alerts are quarantined (recorded, counted, shown
with the error, logged once with the traceback) and the rest of the pass commits; the next critical
alert is still told. The refusal is a trigger, as a constraint or a type the code does not know of would
refuse a row, on both stores."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, text

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.metrics import Metrics
from alertrouter.pipeline.types import Decision
from alertrouter.process.loops import LoopHealth
from alertrouter.store import Database, queries
from alertrouter.store.tables import AlertRow, NodeAliasRow, OutboxRow
from support.scenario import shipped_pipeline
from support.webhooks import webhook

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def dcgm(node: int, gpu: int, alertname: str = "GPUXidError") -> dict[str, str]:
    """As dcgm-exporter's series reach Alertmanager on bare metal (../shared/reference/gpu-alerts.md)."""
    return {
        "alertname": alertname,
        "instance": f"10.0.0.{node}:9400",
        "Hostname": f"gpu-node-{node:02d}",
        "gpu": str(gpu),
        "UUID": f"GPU-5c9f4d1a-8a8e-2b1c-9d3e-7f6a5b4c{node:02d}{gpu}",
        "pci_bus_id": "00000000:3B:00.0",
        "device": f"nvidia{gpu}",
        "modelName": "NVIDIA H100 80GB HBM3",
        "job": "dcgm-exporter",
        "Xid": "79",
        "severity": "critical",
        "region": "north",
    }


def _refusal(dialect: str, table: str, column: str, value: str) -> list[str]:
    """A trigger refusing rows whose `column` holds `value`, as a data error (not an outage)."""
    if dialect == "sqlite":
        return [
            f"CREATE TRIGGER refuse_poison BEFORE INSERT ON {table} WHEN NEW.{column} LIKE '%{value}%' "
            "BEGIN SELECT RAISE(ABORT, 'poisoned row'); END",
            f"CREATE TRIGGER refuse_poison_u BEFORE UPDATE ON {table} WHEN NEW.{column} LIKE '%{value}%' "
            "BEGIN SELECT RAISE(ABORT, 'poisoned row'); END",
        ]
    return [
        "CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        f"IF NEW.{column} LIKE '%{value}%' THEN RAISE EXCEPTION 'poisoned row' USING ERRCODE = '22023'; END IF; "
        "RETURN NEW; END $$",
        f"CREATE TRIGGER refuse_poison BEFORE INSERT OR UPDATE ON {table} "
        "FOR EACH ROW EXECUTE FUNCTION refuse_poison()",
    ]


def _lifted(dialect: str, table: str) -> list[str]:
    if dialect == "sqlite":
        return ["DROP TRIGGER IF EXISTS refuse_poison", "DROP TRIGGER IF EXISTS refuse_poison_u"]
    return [f"DROP TRIGGER IF EXISTS refuse_poison ON {table}", "DROP FUNCTION IF EXISTS refuse_poison()"]


@pytest.fixture
async def refuse(db: Database) -> AsyncIterator[object]:
    """`await refuse(table, column, value)`: the store refuses such rows until the test ends (the
    PostgreSQL database is shared by the session's tests: the trigger goes with the test)."""
    dialect = db.engine.dialect.name
    tables: list[str] = []

    async def install(table: str, column: str, value: str) -> None:
        tables.append(table)
        async with db.write() as s:
            for sql in _refusal(dialect, table, column, value):
                await s.execute(text(sql))
            await s.commit()

    yield install
    async with db.write() as s:
        for table in tables:
            for sql in _lifted(dialect, table):
                await s.execute(text(sql))
        await s.commit()


async def outcome(db: Database) -> tuple[dict[str, tuple[str | None, str]], list[str]]:
    """Each alert's decision and error by `Hostname/gpu`, and the headlines of every message intended."""
    async with db.read() as s:
        rows = (await s.execute(select(AlertRow.labels, AlertRow.decision, AlertRow.decision_detail))).all()
        heads = [o.message["headline"] for o in (await s.scalars(select(OutboxRow).order_by(OutboxRow.id))).all()]
    decided = {
        f"{r.labels.get('Hostname', r.labels.get('node'))}/{r.labels.get('gpu', '')}": (
            r.decision,
            (r.decision_detail or {}).get("error", ""),
        )
        for r in rows
    }
    return decided, heads


async def test_an_incident_the_store_refuses_quarantines_its_alerts_and_the_pass_commits(
    db: Database, refuse: object, caplog: pytest.LogCaptureFixture
) -> None:
    clock, metrics = Clock(), Metrics()
    runner = EngineRunner(db, shipped_pipeline(), metrics, clock=clock, loops=LoopHealth(metrics))
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    await refuse("incidents", "key", "gpu-node-66")  # type: ignore[operator]
    await ingestor.ingest(parse_webhook(webhook([dcgm(66, 0), dcgm(66, 1), dcgm(7, 0)])).batch)
    with caplog.at_level(logging.ERROR, logger="alertrouter.engine.unwritable"):
        await runner.run_once()
    decided, _ = await outcome(db)
    assert decided["gpu-node-66/0"][0] == decided["gpu-node-66/1"][0] == Decision.QUARANTINED
    assert decided["gpu-node-66/0"][1].startswith(
        'incident \'gpu-by-node{alertname="GPUXidError",node="gpu-node-66"}\' refused by the store: '
    )
    assert decided["gpu-node-66/0"][1].endswith("poisoned row")
    assert decided["gpu-node-07/0"][0] not in (None, Decision.QUARANTINED)
    refusals = [r for r in caplog.records if r.msg.startswith("%s refused by the store")]
    assert len(refusals) == 1
    assert refusals[0].exc_info is not None
    assert "gpu-node-66" in refusals[0].getMessage()
    async with db.read() as s:
        assert await queries.count_quarantined_alerts(s) == 2  # alertrouter_quarantined{kind="alert"}
    # Told after the group wait, and a critical alert that comes later too: the engine never stopped.
    clock.now += timedelta(minutes=1)
    await runner.run_once()
    clock.now += timedelta(seconds=5)
    await ingestor.ingest(parse_webhook(webhook([dcgm(9, 3)])).batch)
    await runner.run_once()
    clock.now += timedelta(minutes=1)
    await runner.run_once()
    _, heads = await outcome(db)
    assert any("gpu-node-07" in h for h in heads)
    assert any("gpu-node-09" in h for h in heads)
    assert not any("gpu-node-66" in h for h in heads)


async def test_an_alias_the_store_refuses_quarantines_the_alert_that_taught_it(db: Database, refuse: object) -> None:
    clock = Clock()
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    await refuse("node_aliases", "address", "10.0.0.66")  # type: ignore[operator]
    await ingestor.ingest(parse_webhook(webhook([dcgm(66, 0), dcgm(7, 0)])).batch)
    await runner.run_once()
    decided, _ = await outcome(db)
    assert decided["gpu-node-66/0"][0] == Decision.QUARANTINED
    assert "node alias '10.0.0.66' refused by the store" in decided["gpu-node-66/0"][1]
    assert decided["gpu-node-07/0"][0] not in (None, Decision.QUARANTINED)
    async with db.read() as s:
        learned = {r.address: r.node for r in (await s.scalars(select(NodeAliasRow))).all()}
    assert learned == {"10.0.0.7": "gpu-node-07"}  # the rest of the pass committed
    clock.now += timedelta(minutes=1)
    await runner.run_once()
    _, heads = await outcome(db)
    assert any("gpu-node-07" in h for h in heads)


async def test_a_refusal_no_item_explains_is_a_loop_error_not_an_outage(
    db: Database, refuse: object, caplog: pytest.LogCaptureFixture
) -> None:
    # The lease row refused: no alias or incident alone is to blame, so nothing is quarantined; the pass
    # fails as a bug does (counted in alertrouter_loop_errors_total, logged with its traceback), not as
    # an outage that a warning and a retry would hide while no pass completes.
    metrics = Metrics()
    runner = EngineRunner(
        db, shipped_pipeline(), metrics, loops=LoopHealth(metrics), interval=timedelta(milliseconds=20)
    )
    await refuse("leases", "name", "engine")  # type: ignore[operator]
    await Ingestor(db, TouchBuffer()).ingest(parse_webhook(webhook([dcgm(7, 0)])).batch)
    errors = {"loop": "engine"}
    with caplog.at_level(logging.ERROR, logger="alertrouter.process.loops"):
        runner.start()
        try:
            for _ in range(500):  # bounded: the first failed pass is what the test waits for
                if metrics.registry.get_sample_value("alertrouter_loop_errors_total", errors):
                    break
                await asyncio.sleep(0.02)
        finally:
            await runner.stop()
    assert metrics.registry.get_sample_value("alertrouter_loop_errors_total", errors)
    assert any(r.exc_info is not None and "poisoned row" in r.getMessage() for r in caplog.records)
    decided, _ = await outcome(db)
    assert Decision.QUARANTINED not in {d for d, _ in decided.values()}

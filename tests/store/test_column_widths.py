"""Every value the ingest boundary or the rules let through fits the column an engine or delivery write puts
it in (issue 44): a `severity` label of 33 characters or an IPv6 `instance` with a long zone id stopped
every engine pass on PostgreSQL, for good. The tables are walked, and the widest alert ingest accepts is
taken through a pass and a delivery on both stores."""

from __future__ import annotations

import random
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic import command
from sqlalchemy import String, select

from alertrouter.channels.registry import build_channels
from alertrouter.delivery.worker import DeliveryWorker
from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.limits import MAX_ALERTNAME, MAX_LABEL_VALUE
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.model import KEY_MAX, NAME_MAX
from alertrouter.pipeline.throttle import NotifyReason
from alertrouter.pipeline.types import Decision, Intent
from alertrouter.render.templates import Templates
from alertrouter.ruleset.schema import Ruleset
from alertrouter.store import Database
from alertrouter.store.incidents import insert_intents
from alertrouter.store.migrate import alembic_config
from alertrouter.store.tables import AlertRow, Base, DeliveryRow, IncidentRow, NodeAliasRow, OutboxRow
from support.fakes.dingtalk import FakeDingTalk
from support.scenario import shipped_pipeline
from support.webhooks import webhook

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)

# Columns whose values the code makes itself, never from an alert, a request or the rules: their width is
# that of what makes them. Any other width than NAME_MAX or KEY_MAX must be added here, with its reason.
MADE_HERE: dict[str, str] = {
    "alerts.fingerprint": "Alertmanager's fingerprint, 16 hex digits",
    "alerts.status": "AlertStatus",
    "alerts.resolved_by": "how an episode ended: endsAt, stale, ...",
    "alerts.decision": "Decision",
    "alert_episodes.fingerprint": "a fingerprint",
    "alert_episodes.resolved_by": "as alerts.resolved_by",
    "alert_events.fingerprint": "a fingerprint",
    "alert_events.kind": "the trail's event kinds",
    "raw_events.digest": "a SHA-256 in hex",
    "raw_events.source": "webhook | api_v2",
    "raw_events.status": "firing | resolved, checked at ingest",
    "incidents.kind": "IncidentKind",
    "incidents.status": "firing | resolved",
    "notify_state.last_reason": "NotifyReason",
    "outbox.reason": "NotifyReason",
    "outbox.status": "OutboxStatus",
    "leases.name": "the lease names the code uses",
    "leases.holder": "new_holder(): host, pid and a random part, cut",
    "deliveries.kind": "message kinds",
    "deliveries.status": "DeliveryStatus",
    "delivery_attempts.worker": "a holder",
    "delivery_attempts.outcome": "attempt outcomes",
    "channel_state.holder": "a holder",
    "silences.id": "a UUID",
    "maintenance.id": "a UUID",
    "maintenance.source": "manual (`pipeline.maintenance.MANUAL`)",
    "scheduled_runs.period": "an ISO week or a date",
    "scheduled_runs.status": "running | done | failed",
    "scheduled_runs.holder": "a holder",
    "used_tokens.nonce": "a random token of the signer",
    "used_tokens.action": "ack | silence",
    "secrets.name": "the secret names the code uses",
    "revoked_sessions.session_id": "a random token of the signer",
    "node_aliases.fingerprint": "a fingerprint",
    "node_aliases.held_fingerprint": "a fingerprint",
    "escalations.stopped": "why a chain stopped",
    "heartbeats.seen_via": "alert | http",
    "login_failures.scope": "account | address",
    "gpu_events.fingerprint": "a fingerprint",
    "job_hits.source": "label | lookup | pod-name",
    "job_hits.note": "what jobs.identity noted, cut to NOTE_MAX",
    "job_hits.cause": "hardware | application | empty",
}


def test_every_column_holding_a_name_has_a_width_the_boundary_keeps() -> None:
    # A new column of another width fails here until its width is made one that ingest, the rules and
    # `bounded` keep (NAME_MAX, KEY_MAX), or text, or it is listed above as made by the code.
    odd = []
    for table in Base.metadata.sorted_tables:
        for column in table.columns:
            where = f"{table.name}.{column.name}"
            if not isinstance(column.type, String) or column.type.length is None or where in MADE_HERE:
                continue
            if column.type.length not in (NAME_MAX, KEY_MAX):
                odd.append(f"{where} VARCHAR({column.type.length})")
    assert odd == []
    stale = [where for where in MADE_HERE if where.split(".")[0] not in Base.metadata.tables]
    assert stale == []


def test_the_boundary_is_the_columns_own() -> None:
    def width(column: Any) -> int | None:
        assert isinstance(column.type, String)
        return column.type.length

    assert (MAX_ALERTNAME, width(AlertRow.__table__.c.alertname)) == (NAME_MAX, NAME_MAX)
    assert width(IncidentRow.__table__.c.severity) is None  # a label value: any length ingest allows
    assert width(DeliveryRow.__table__.c.severity) is None


def widest(labels: dict[str, str]) -> dict[str, str]:
    """Every value as long as ingest lets through (CJK: three bytes each in UTF-8), alertname at its own
    limit; the names the engine keys by keep their head, so the alert still reads as what it is."""
    out = {}
    for name, value in labels.items():
        limit = MAX_ALERTNAME if name == "alertname" else MAX_LABEL_VALUE
        out[name] = (value + "-" + "华" * limit)[:limit]
    return out


def dcgm(node: int, gpu: int) -> dict[str, str]:
    """As dcgm-exporter's series reach Alertmanager (../shared/reference/gpu-alerts.md)."""
    return {
        "alertname": "GPUXidError",
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


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.mark.parametrize("severity", ["critical-" + "x" * 30, "critical-" + "华" * (MAX_LABEL_VALUE - 9)])
async def test_a_long_severity_is_decided_stored_and_the_next_alert_told(db: Database, severity: str) -> None:
    clock = Clock()
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    await ingestor.ingest(parse_webhook(webhook([dcgm(7, 0) | {"severity": severity}])).batch)
    await runner.run_once()
    clock.now += timedelta(minutes=1)  # past the shipped group wait
    await ingestor.ingest(parse_webhook(webhook([dcgm(9, 1)])).batch)
    await runner.run_once()
    clock.now += timedelta(minutes=1)
    await runner.run_once()
    async with db.read() as s:
        decided = {r.node: r.decision for r in (await s.execute(select(AlertRow.node, AlertRow.decision))).all()}
        incidents = {r.key: r.severity for r in (await s.scalars(select(IncidentRow))).all()}
        told = [o.message["headline"] for o in (await s.scalars(select(OutboxRow))).all()]
    assert decided["gpu-node-07"] not in (None, Decision.QUARANTINED)
    assert severity in incidents.values()  # stored as it came, not cut
    assert any("gpu-node-09" in h for h in told)


@pytest.mark.parametrize("zone", ["eth0", "z" * 60, "z" * 300])
async def test_an_ipv6_instance_with_a_zone_id_is_learned_or_left_and_nothing_stops(db: Database, zone: str) -> None:
    # node-exporter scraped over a link-local address: `instance="[fe80::1%eth0]:9100"`, with a node label.
    clock = Clock()
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    down = {"alertname": "NodeDown", "instance": f"[fe80::1%{zone}]:9100", "job": "node-exporter"}
    await ingestor.ingest(parse_webhook(webhook([down | {"node": "gpu-node-07", "severity": "warning"}])).batch)
    await runner.run_once()
    clock.now += timedelta(minutes=1)
    await ingestor.ingest(parse_webhook(webhook([dcgm(9, 1)])).batch)
    await runner.run_once()
    clock.now += timedelta(minutes=1)
    await runner.run_once()
    async with db.read() as s:
        learned = {r.address: r.node for r in (await s.scalars(select(NodeAliasRow))).all() if "%" in r.address}
        decided = [d for d in (await s.scalars(select(AlertRow.decision))).all()]
        told = [o.message["headline"] for o in (await s.scalars(select(OutboxRow))).all()]
    address = f"fe80::1%{zone}"
    # An address no longer than a name is learned; a longer one names no real node and teaches nothing.
    assert learned == ({address: "gpu-node-07"} if len(address) <= NAME_MAX else {})
    assert Decision.QUARANTINED not in decided
    assert None not in decided
    assert any("gpu-node-09" in h for h in told)


async def test_the_widest_alert_ingest_accepts_is_decided_and_told(db: Database) -> None:
    clock = Clock()
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    wide = widest(dcgm(7, 0)) | {"severity": "critical"}  # routed as a critical alert is
    wide_ann = {"summary": "摘" * MAX_LABEL_VALUE, "description": "x" * MAX_LABEL_VALUE}
    body = webhook([wide], annotations=wide_ann)
    await ingestor.ingest(parse_webhook(body).batch)
    await runner.run_once()
    clock.now += timedelta(minutes=1)
    await runner.run_once()
    async with db.read() as s:
        (decision,) = (await s.scalars(select(AlertRow.decision))).all()
        outbox = (await s.scalars(select(OutboxRow))).all()
    assert decision not in (None, Decision.QUARANTINED)
    assert "oncall-core" in {o.receiver for o in outbox}  # its region is no region the routes know


TOKEN = "dt-core-token-8c1e55a0"


async def test_a_message_of_a_long_severity_is_delivered(db: Database) -> None:
    robot = FakeDingTalk({TOKEN: None})
    robot.start()
    severity = "critical-" + "华" * (MAX_LABEL_VALUE - 9)
    ruleset = Ruleset.model_validate(
        {
            "channels": [{"name": "core", "type": "dingtalk", "url": f"{robot.url}/robot/send", "access_token": TOKEN}],
            "receivers": [{"name": "oncall", "channels": ["core"]}],
        }
    )
    labels = {"alertname": "GPUXidError", "node": "gpu-node-07", "gpu": "3", "severity": severity}
    snapshot: dict[str, Any] = {
        "incident": "rule/GPUXidError/gpu-node-07", "kind": "node", "reason": "first", "status": "firing",
        "severity": severity, "headline": "gpu-node-07: GPUXidError on 1/8 GPUs", "labels": labels,
        "summary": {}, "alerts": [], "opened_at": T0.isoformat(), "at": T0.isoformat(),
    }  # fmt: skip
    intent = Intent(snapshot["incident"], "oncall", NotifyReason("first"), MessageSnapshot.from_json(snapshot))
    try:
        async with db.write() as s:
            await insert_intents(s, [intent], T0)
            await s.commit()
        async with httpx.AsyncClient(trust_env=False) as client:
            channels = build_channels(ruleset, client=client, renderer=Templates())
            await DeliveryWorker(db, ruleset, channels, clock=Clock(), rng=random.Random(0)).run_once()
        async with db.read() as s:
            (row,) = (await s.scalars(select(DeliveryRow))).all()
        assert (row.status, row.severity) == ("sent", severity)
        (message,) = robot.messages(TOKEN)
        assert "gpu-node-07" in str(message)
        assert "GPUXidError" in str(message)
    finally:
        robot.stop()


def test_widening_on_sqlite_keeps_every_row_of_the_tables_that_reference_them(tmp_path: Path) -> None:
    # Rebuilding `deliveries` (what batch mode does on SQLite) would drop it, and the foreign key's cascade
    # would take every `delivery_attempts` row, the robots' rate budgets, with it.
    url = f"sqlite+aiosqlite:///{tmp_path / 'alertrouter.db'}"
    cfg = alembic_config(url)
    command.upgrade(cfg, "0018")
    with sqlite3.connect(tmp_path / "alertrouter.db") as conn:
        conn.execute(
            "INSERT INTO deliveries (id, receiver, channel, kind, severity, severity_rank, message, status, attempts, "
            "created_at, next_attempt_at, unexpected_failures) VALUES (1, 'oncall', 'core', 'node', 'critical', 0, "
            "'{}', 'sent', 1, '2026-11-21 08:00:00', '2026-11-21 08:00:00', 0)"
        )
        conn.execute(
            "INSERT INTO delivery_attempts (delivery_id, channel, worker, started_at, outcome) "
            "VALUES (1, 'core', 'w', '2026-11-21 08:00:00', 'sent')"
        )
    command.upgrade(cfg, "head")
    with sqlite3.connect(tmp_path / "alertrouter.db") as conn:
        assert conn.execute("SELECT count(*) FROM delivery_attempts").fetchone() == (1,)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'deliveries'").fetchone()
    assert "severity TEXT" in sql
    command.downgrade(cfg, "0018")
    with sqlite3.connect(tmp_path / "alertrouter.db") as conn:
        assert conn.execute("SELECT count(*) FROM delivery_attempts").fetchone() == (1,)
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'deliveries'").fetchone()
    assert "severity VARCHAR(32)" in sql

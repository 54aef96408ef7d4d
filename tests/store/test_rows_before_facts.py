"""Incident and outbox rows written before the engine held typed facts still read, and the engine writes
them as it did, on SQLite and PostgreSQL.

`tests/fixtures/engine_rows_before_facts.json` holds the rows the scenarios below left in the store when run
on the code before (`summary_dict` and the storm roll-up's dict): each scenario's incidents (key, kind,
status, headline, summary) and outbox messages, literal. A restarted engine reads those incident rows back
as facts that write the same JSON again; the scenarios run now leave the same rows.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import timedelta
from gettext import NullTranslations
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, select

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.message import phrases
from alertrouter.message.facts import EscalationNote, MemberFacts, NoData, NodeFacts, StormFacts, Tally
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.types import IncidentRecord, IncidentState
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.store import Database
from alertrouter.store.handles import incidents_t, outbox_t
from alertrouter.store.incidents import load_incidents, save_incidents
from alertrouter.store.tables import IncidentRow, OutboxRow
from support.passes import T0, Clock, rows, run_for
from support.scenario import dcgm_labels, gpu_labels, node_down_labels, node_exporter_down_labels, shipped_pipeline
from support.webhooks import webhook

S = timedelta(seconds=1)
MIN = timedelta(minutes=1)
FIXTURE: dict[str, Any] = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "engine_rows_before_facts.json").read_text(encoding="utf-8")
)["scenarios"]
ESCALATING = """
global: {language: en, timezone: UTC}
oncall:
  escalations:
    - name: critical-unacked
      steps:
        - {after: 10m, receivers: [secondary]}
        - {after: 20m, receivers: [lead]}
        - {after: 30m, receivers: [voice]}
route: {receiver: first, group_wait: 30s, repeat_interval: 4h, escalation: critical-unacked}
receivers: [{name: first}, {name: secondary}, {name: lead}, {name: voice}]
"""

Dump = Callable[[str], Awaitable[None]]


async def stored(db: Database) -> dict[str, Any]:
    """The scenario's rows as the fixture holds them."""
    incidents = [
        {"key": i.key, "kind": i.kind, "status": i.status, "headline": i.headline, "summary": i.summary}
        for i in await rows(db, IncidentRow)
    ]
    outbox = sorted(await rows(db, OutboxRow), key=lambda o: o.id)
    return {"incidents": incidents, "outbox": [o.message for o in outbox]}


def engine(db: Database, pipeline: CompiledRules | None = None) -> tuple[Clock, Ingestor, EngineRunner]:
    clock = Clock()
    runner = EngineRunner(db, pipeline or shipped_pipeline(), clock=clock)
    return clock, Ingestor(db, TouchBuffer(), clock=clock), runner


async def stale(db: Database, dump: Dump, _: Path) -> None:
    """A bare-metal node dies under two hot GPUs, and comes back."""
    clock, ingestor, runner = engine(db)
    hot = [dcgm_labels("10.0.0.7", "gpu-node-07", g, alertname="GPUHighTemp", severity="warning") for g in (2, 5)]
    down = node_exporter_down_labels("10.0.0.7")
    since = clock.now
    await ingestor.ingest(parse_webhook(webhook(hot, starts_at=since)).batch)
    await run_for(runner, clock, MIN)
    dark = clock.now
    await ingestor.ingest(parse_webhook(webhook(hot, status="resolved", starts_at=since, ends_at=dark)).batch)
    await run_for(runner, clock, MIN)
    await ingestor.ingest(parse_webhook(webhook([down], starts_at=dark + 30 * S)).batch)
    await run_for(runner, clock, MIN)
    await dump("stale_mid")
    back = webhook([down], status="resolved", starts_at=dark + 30 * S, ends_at=clock.now)
    await ingestor.ingest(parse_webhook(back).batch)
    await run_for(runner, clock, 6 * MIN)
    await dump("stale_end")


async def node_down_storm(db: Database, dump: Dump, _: Path) -> None:
    clock, ingestor, runner = engine(db)
    down = [node_down_labels(f"gpu-node-{n:02d}", region="north", rack="r12") for n in range(8)]
    await ingestor.ingest(parse_webhook(webhook(down)).batch)
    await run_for(runner, clock, 2 * MIN)
    await dump("storm_firing")
    await ingestor.ingest(parse_webhook(webhook(down, status="resolved")).batch)
    await run_for(runner, clock, 10 * MIN)
    await dump("storm_end")


async def escalation(db: Database, dump: Dump, tmp_path: Path) -> None:
    (tmp_path / "rules.yml").write_text(ESCALATING)
    clock, ingestor, runner = engine(db, compile_rules(load_ruleset(tmp_path, {})))
    await ingestor.ingest(parse_webhook(webhook([node_down_labels("gpu-node-07")])).batch)
    await run_for(runner, clock, 11 * MIN, every=30 * S)
    await dump("escalation")


async def gpus(db: Database, dump: Dump, _: Path) -> None:
    """Six hot GPUs of one node."""
    clock, ingestor, runner = engine(db)
    hot = [gpu_labels("gpu-node-07", g, region="north") for g in range(6)]
    await ingestor.ingest(parse_webhook(webhook(hot)).batch)
    await run_for(runner, clock, 2 * MIN)
    await dump("node")


async def gpu_storm(db: Database, dump: Dump, _: Path) -> None:
    """Hot GPUs on eight nodes of one rack: one to three each."""
    clock, ingestor, runner = engine(db)
    hot = [gpu_labels(f"gpu-node-{n:02d}", g, region="north", rack="r12") for n in range(8) for g in range(n % 3 + 1)]
    await ingestor.ingest(parse_webhook(webhook(hot)).batch)
    await run_for(runner, clock, 2 * MIN)
    await dump("gpu_storm")


def same(now: dict[str, Any], before: dict[str, Any], *, ordered: bool) -> None:
    """The rows alike (incidents by key, the outbox in order); on SQLite, each JSON object's keys in the
    same order too (PostgreSQL's JSONB keeps no order)."""
    now_incidents = sorted(now["incidents"], key=lambda i: i["key"])
    before_incidents = sorted(before["incidents"], key=lambda i: i["key"])
    assert now_incidents == before_incidents
    assert now["outbox"] == before["outbox"]
    if ordered:
        assert json.dumps(now_incidents) == json.dumps(before_incidents)
        assert json.dumps(now["outbox"]) == json.dumps(before["outbox"])


@pytest.mark.parametrize("scenario", [stale, node_down_storm, escalation, gpus, gpu_storm])
async def test_the_engine_writes_its_rows_as_before_its_facts_were_typed(
    db: Database, tmp_path: Path, scenario: Callable[[Database, Dump, Path], Awaitable[None]]
) -> None:
    seen: list[str] = []

    async def dump(name: str) -> None:
        same(await stored(db), FIXTURE[name], ordered=db.is_sqlite)
        seen.append(name)

    await scenario(db, dump, tmp_path)
    assert seen  # the scenario compared what it left


async def write_literally(db: Database, name: str) -> None:
    """A scenario's rows as the code before wrote them: the incident rows and outbox messages, verbatim."""
    fixture = FIXTURE[name]
    incident_rows = [
        {**i, "rule": "", "severity": "critical", "labels": {}, "opened_at": T0, "updated_at": T0}
        for i in fixture["incidents"]
    ]
    outbox_rows = [
        {
            "incident_key": m["incident"],
            "receiver": "oncall",
            "reason": m["reason"],
            "created_at": T0,
            "message": m,
            "status": "pending",
            "attempts": 0,
            "next_attempt_at": T0,
        }
        for m in fixture["outbox"]
    ]
    async with db.write() as session:
        await session.execute(incidents_t.insert(), incident_rows)
        await session.execute(outbox_t.insert(), outbox_rows)
        await session.commit()


@pytest.mark.parametrize("name", sorted(FIXTURE))
async def test_rows_written_before_read_back_as_facts_that_write_them_again(db: Database, name: str) -> None:
    await write_literally(db, name)
    async with db.read() as session:
        records, _ = await load_incidents(session, resolved_since=T0 - timedelta(hours=1))
    before = {i["key"]: i["summary"] for i in FIXTURE[name]["incidents"]}
    assert {k: r.summary.to_json() for k, r in records.items()} == before
    states = [
        IncidentState(
            key=r.key,
            kind=r.kind,
            rule=r.rule,
            firing=r.firing,
            severity=r.severity,
            headline=r.headline,
            labels=r.labels,
            summary=r.summary,
            parent=r.parent,
            opened_at=r.opened_at,
            active_since=r.active_since,
            resolved_at=r.resolved_at,
        )
        for r in records.values()
    ]
    async with db.write() as session:
        await save_incidents(session, states, T0 + MIN)
        await session.commit()
    again = {i["key"]: i["summary"] for i in (await stored(db))["incidents"]}
    assert again == before
    if db.is_sqlite:
        assert [json.dumps(again[k]) for k in sorted(again)] == [json.dumps(before[k]) for k in sorted(before)]
    async with db.read() as session:
        messages = [m for m in (await session.scalars(select(OutboxRow.message).order_by(OutboxRow.id))).all()]
    for message, written in zip(messages, FIXTURE[name]["outbox"], strict=True):
        snapshot = MessageSnapshot.from_json(message)
        assert snapshot.to_json() == written
        if db.is_sqlite:
            assert json.dumps(snapshot.to_json()) == json.dumps(written)
        assert phrases.headline(NullTranslations(), snapshot) == written["headline"]


async def read_back(db: Database, name: str) -> dict[str, IncidentRecord]:
    """The records a restarted engine holds of scenario `name`'s rows (alone in the store)."""
    async with db.write() as session:
        await session.execute(delete(incidents_t))
        await session.execute(delete(outbox_t))
        await session.commit()
    await write_literally(db, name)
    async with db.read() as session:
        return (await load_incidents(session, resolved_since=T0 - timedelta(hours=1)))[0]


async def test_the_facts_read_back_are_the_ones_stated(db: Database) -> None:
    """What a restarted engine holds of the rows before: the counts, why data was missing, a storm's
    members, an escalation step."""
    gpu = (await read_back(db, "stale_end"))['gpu-by-node{alertname="GPUHighTemp",node="gpu-node-07"}'].summary
    assert gpu == NodeFacts(
        headline="gpu-node-07: GPUHighTemp on 2/8 GPUs",
        where="gpu-node-07",
        alertname="GPUHighTemp",
        units=("2", "5"),
        units_total=8,
        unit_name="GPUs",
        tally=Tally(alerts=2, firing=0, eligible=0, muted=0, silenced=0),
        no_data=NoData('node{alertname="NodeDown",node="gpu-node-07"}', "NodeDown", "gpu-node-07", down=False),
    )
    records = await read_back(db, "gpu_storm")
    storm = records['gpu-by-node/cluster{alertname="GPUHighTemp",region="north"}'].summary
    assert isinstance(storm, StormFacts)
    assert (storm.nodes, storm.units, storm.scope) == (8, 15, (("region", "north"), ("rack", "r12")))
    assert storm.member_facts is not None
    assert storm.member_facts[2] == MemberFacts("gpu-node-02", 3, 8)
    await read_back(db, "escalation")
    async with db.read() as session:
        messages = (await session.scalars(select(OutboxRow.message).where(OutboxRow.reason == "escalated"))).all()
    (step,) = [MessageSnapshot.from_json(m).summary.escalation for m in messages]
    assert step == EscalationNote("critical-unacked", 1, 3, "10m", 600, ("secondary",))

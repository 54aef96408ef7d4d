"""Incremental engine passes against full ones through the real runner and store, on SQLite and on
PostgreSQL: two stores take the same random sequences of webhooks (real exporter label shapes),
silences, acknowledgements and clock steps (past the hour after which resolved alerts are forgotten);
one runner evaluates only what changed, the other everything every pass. The stored decisions,
incidents, notify states and outbox must be the same after every pass. The incremental runner is also
restarted now and then (a new process reads the store back): what it kept in memory must be what the
store holds."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.metrics import Metrics
from alertrouter.store import Database, actions
from alertrouter.store.migrate import upgrade
from alertrouter.store.tables import AlertRow, Base, IncidentRow, NotifyStateRow, OutboxRow, SilenceRow
from support import pg
from support.need import need
from support.passes import Clock, on_sqlite
from support.scenario import dcgm_labels, gpu_labels, node_exporter_down_labels, shipped_pipeline
from support.webhooks import Status, webhook

S = timedelta(seconds=1)
NODES = 8
SILENCES = [['node="gpu-node-01"'], ['alertname="GPUHighTemp"', 'region="south"'], ['severity="critical"']]


def _pool() -> list[dict[str, str]]:
    out = []
    for n in range(NODES):
        name, ip, region = f"gpu-node-{n:02d}", f"10.0.4.{n + 10}", "north" if n < NODES // 2 + 2 else "south"
        out += [gpu_labels(name, g, region=region) for g in range(2)]
        out.append(dcgm_labels(ip, name, 0, region=region))
        out.append(node_exporter_down_labels(ip, region=region))
    return out


POOL = _pool()


@pytest.fixture(scope="module")
def pg_pair() -> Iterator[tuple[str, str]]:
    problem = pg.available()
    need(problem is None, problem or "")
    names = (pg.create_database(), pg.create_database())
    try:
        for name in names:
            upgrade(pg.url_for(name))
        yield names
    finally:
        for name in names:
            pg.drop_database(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_urls(request: pytest.FixtureRequest, tmp_path: Path) -> list[str]:
    """Two migrated, empty stores of one kind."""
    urls = []
    if request.param == "sqlite":
        for side in ("incremental", "full"):
            url = f"sqlite+aiosqlite:///{tmp_path / side}.db"
            upgrade(url)
            urls.append(url)
    else:
        for name in request.getfixturevalue("pg_pair"):
            pg.truncate(name, [t.name for t in Base.metadata.sorted_tables])
            urls.append(pg.url_for(name))
    return urls


@pytest.fixture
async def stores(store_urls: list[str]) -> AsyncIterator[tuple[Database, Database]]:
    a, b = Database(store_urls[0]), Database(store_urls[1])
    try:
        yield a, b
    finally:
        await a.dispose()
        await b.dispose()


async def _state(db: Database) -> dict[str, Any]:
    async with db.read() as s:
        alerts = (await s.scalars(select(AlertRow).order_by(AlertRow.fingerprint))).all()
        incidents = (await s.scalars(select(IncidentRow).order_by(IncidentRow.key))).all()
        notify = (await s.scalars(select(NotifyStateRow))).all()
        outbox = (await s.scalars(select(OutboxRow).order_by(OutboxRow.id))).all()
    return {
        "decisions": [(a.fingerprint, a.decision, a.decision_detail, a.incident_key, a.node) for a in alerts],
        "incidents": [
            (
                i.key,
                i.kind,
                i.status,
                i.parent_key,
                i.severity,
                i.headline,
                i.summary,
                i.labels,
                i.opened_at,
                i.active_since,
                i.resolved_at,
                i.acknowledged_at is not None,
            )
            for i in incidents
        ],
        "notify": sorted((n.incident_key, n.receiver, n.last_sent_at, sorted(n.firing), n.repeats) for n in notify),
        "outbox": [(o.incident_key, o.receiver, o.reason, o.message) for o in outbox],
    }


async def _silence(db: Database, k: int, start: datetime) -> None:
    async with db.write() as s:
        s.add(
            SilenceRow(
                id=f"s{k}-{start:%H%M%S}",
                matchers=SILENCES[k],
                starts_at=start,
                ends_at=start + timedelta(minutes=8),
                created_by="test",
                comment="",
                created_at=start,
                updated_at=start,
            )
        )
        await s.commit()


async def _acknowledge(db: Database, k: int, now: datetime) -> None:
    async with db.write() as s:
        firing = (
            await s.scalars(
                select(IncidentRow)
                .where(IncidentRow.status == "firing", IncidentRow.acknowledged_at.is_(None))
                .order_by(IncidentRow.key)
            )
        ).all()
        if firing:
            await actions.acknowledge_incident(s, incident_id=firing[k % len(firing)].id, by="test", now=now)
            await s.commit()


@pytest.mark.parametrize("seed", range(4))
async def test_incremental_runner_stores_what_full_passes_store(stores: tuple[Database, Database], seed: int) -> None:
    rng = random.Random(seed)
    clock = Clock()
    dbs = stores
    ingest = [Ingestor(db, TouchBuffer(), clock=clock) for db in dbs]

    def runner(db: Database, incremental: bool) -> EngineRunner:
        return EngineRunner(db, shipped_pipeline(), clock=clock, holder="h", incremental=incremental)

    runners = [runner(dbs[0], True), runner(dbs[1], False)]
    told = 0
    for step in range(40):
        roll = rng.random()
        # A change is told apart by its `updated_at`: a real clock never gives two changes one instant.
        clock.now += timedelta(milliseconds=1)
        if roll < 0.35:
            labels = rng.sample(POOL, rng.randint(1, 8))
            status: Status = "firing" if rng.random() < 0.7 else "resolved"
            for ingestor in ingest:
                await ingestor.ingest(parse_webhook(webhook(labels, status=status)).batch)
        elif roll < 0.45:  # a storm in the north: GPUHighTemp on every node there
            labels = [x for x in POOL if x.get("region") == "north" and x["alertname"] == "GPUHighTemp"]
            for ingestor in ingest:
                await ingestor.ingest(parse_webhook(webhook(labels)).batch)
        elif roll < 0.53:
            k, start = rng.randrange(len(SILENCES)), clock.now + rng.choice([0, 60]) * S
            for db in dbs:
                await _silence(db, k, start)
        elif roll < 0.6:
            k = rng.randrange(20)
            for db in dbs:
                await _acknowledge(db, k, clock.now)
        elif roll < 0.66:
            # A restart: what it knew comes back from the store. Its first pass is never idle, so the
            # other runner is made to pass too (an idle pass decides nothing, which a fresh one would).
            runners[0] = runner(dbs[0], True)
            runners[1].nudge(force=True)
        else:
            clock.now += rng.choice([5, 20, 31, 65, 200, 700, 3700]) * S
        for r in runners:
            await r.run_once()
        a, b = await _state(dbs[0]), await _state(dbs[1])
        where = f"seed {seed}, step {step}, at {clock.now:%H:%M:%S}"
        for part in a:
            assert a[part] == b[part], f"{part} differ, {where}"
        told = len(a["outbox"])
    assert told > 0, "the sequence sent nothing: it compared nothing that matters"


async def test_a_webhook_about_one_node_evaluates_only_that_node(tmp_path: Path) -> None:
    """Three nodes overheating (too few for a storm); once settled, a webhook about one of them makes
    the next pass evaluate that node's incident alone, counted as an incremental pass."""
    metrics = Metrics()
    async with on_sqlite(tmp_path / "one.db", metrics=metrics) as (_, clock, ingestor, runner):
        nodes = [f"gpu-node-{n:02d}" for n in range(3)]
        await ingestor.ingest(parse_webhook(webhook([gpu_labels(n, 0, region="north") for n in nodes])).batch)
        first = await runner.run_once()
        assert first is not None
        assert len(first.evaluated) == 3
        # The next pass that evaluates anything looks again at the incidents whose records the last one
        # wrote (their notify states changed); a forced pass settles them.
        clock.now += 5 * S
        runner.nudge(force=True)
        settled = await runner.run_once()
        assert settled is not None
        assert len(settled.evaluated) == 3
        before = metrics.engine_passes.labels(scope="incremental")._value.get()
        clock.now += 5 * S
        await ingestor.ingest(parse_webhook(webhook([gpu_labels(nodes[1], 3, region="north")])).batch)
        result = await runner.run_once()
        assert result is not None
        assert result.evaluated == {'gpu-by-node{alertname="GPUHighTemp",node="gpu-node-01"}'}
        assert metrics.engine_passes.labels(scope="incremental")._value.get() == before + 1
        assert metrics.engine_passes.labels(scope="full")._value.get() == 1


async def test_a_record_the_engine_forgets_is_forgotten_by_its_evaluator_too(tmp_path: Path) -> None:
    """An incident resolved for longer than RECENT leaves the engine's records (as it leaves the store's
    read); the evaluator, which is told only of the records that changed, must let go of it as well,
    or every incident ever seen would stay in memory."""
    async with on_sqlite(tmp_path / "forget.db") as (db, clock, ingestor, runner):
        alert = gpu_labels("gpu-node-03", 0, region="north")
        await ingestor.ingest(parse_webhook(webhook([alert])).batch)
        await runner.run_once()
        key = 'gpu-by-node{alertname="GPUHighTemp",node="gpu-node-03"}'
        assert key in (runner._passes._book.records or {})
        clock.now += 30 * S
        resolved = webhook([alert], status="resolved", ends_at=clock.now)
        await ingestor.ingest(parse_webhook(resolved).batch)
        for _ in range(3):  # the resolve, told once the stale hold has passed
            clock.now += timedelta(minutes=3)
            runner.nudge(force=True)
            await runner.run_once()
        assert [i[2] for i in (await _state(db))["incidents"]] == ["resolved"]
        for _ in range(3):  # past the hour: the alert is forgotten, then its incident's record
            clock.now += timedelta(minutes=50)
            runner.nudge(force=True)
            await runner.run_once()
        assert key not in (runner._passes._book.records or {})
        assert key not in runner._passes._evaluator._seen

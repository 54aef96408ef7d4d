"""Maintenance windows through real engine passes on SQLite and PostgreSQL: a node's alerts decided
`maintenance` and never sent; what still fires when the window ends (or is ended) told at once; a
window named by the node's address meets alerts named by its hostname."""

from __future__ import annotations

from datetime import datetime, timedelta

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.store import Database
from alertrouter.store import maintenance as store
from alertrouter.store.tables import AlertRow, IncidentRow, OutboxRow
from support.passes import T0, Clock, rows, run_for
from support.scenario import dcgm_labels, gpu_labels, shipped_pipeline
from support.webhooks import Status, webhook

from .test_learned_nodes import with_topology

M = timedelta(minutes=1)
H = timedelta(hours=1)


async def start(db: Database, nodes: list[str], at: datetime, until: datetime) -> str:
    async with db.write() as session:
        (row, *_) = await store.start_maintenance(
            session, nodes=nodes, starts_at=at, ends_at=until, reason="RMA ticket 4711", by="alice", now=at
        )
        await session.commit()
        return row.id


async def end(db: Database, node: str, at: datetime) -> None:
    async with db.write() as session:
        assert await store.end_maintenance(session, nodes=[node], by="bob", now=at) == [node]
        await session.commit()


class Node07:
    """The shipped rules' engine and ingest on one clock, and the hot GPUs of gpu-node-07 (critical)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.clock = Clock()
        self.ingestor = Ingestor(db, TouchBuffer(), clock=self.clock)
        self.runner = EngineRunner(db, shipped_pipeline(), clock=self.clock)

    async def send(self, labels: list[dict[str, str]], status: Status = "firing") -> None:
        ends = self.clock.now if status == "resolved" else None
        body = webhook(labels, status=status, starts_at=T0, ends_at=ends)
        await self.ingestor.ingest(parse_webhook(body).batch)

    async def run(self, duration: timedelta) -> None:
        await run_for(self.runner, self.clock, duration)


HOT = [gpu_labels("gpu-node-07", g, severity="critical") for g in range(2)]


async def test_a_node_in_maintenance_is_shown_not_sent_until_the_window_ends(db: Database) -> None:
    node = Node07(db)
    window = await start(db, ["gpu-node-07"], T0, T0 + H)
    await node.send(HOT)
    await node.run(30 * M)
    alerts = await rows(db, AlertRow)
    assert {a.decision for a in alerts} == {"maintenance"}
    detail = alerts[0].decision_detail["maintenance"]
    assert (detail["id"], detail["node"], detail["reason"], detail["by"]) == (
        window,
        "gpu-node-07",
        "RMA ticket 4711",
        "alice",
    )
    assert detail["until"] == (T0 + H).isoformat()
    assert await rows(db, OutboxRow) == []
    (incident,) = await rows(db, IncidentRow)
    assert incident.status == "firing"
    # The window ends with no new alert arriving: the engine wakes for it and tells at once.
    node.clock.now = T0 + H
    await node.runner.run_once()
    assert {a.decision for a in await rows(db, AlertRow)} != {"maintenance"}
    told = await rows(db, OutboxRow)
    assert told
    assert {o.reason for o in told} == {"first"}


async def test_ending_a_window_early_tells_what_still_fires_at_once(db: Database) -> None:
    node = Node07(db)
    await node.send(HOT)
    await start(db, ["gpu-node-07"], T0, T0 + 4 * H)
    await node.run(20 * M)
    assert await rows(db, OutboxRow) == []
    await end(db, "gpu-node-07", node.clock.now)
    await node.runner.run_once()  # one pass, no group wait
    told = await rows(db, OutboxRow)
    assert told
    assert {o.reason for o in told} == {"first"}


async def test_a_resolve_during_maintenance_is_not_told(db: Database) -> None:
    node = Node07(db)
    await start(db, ["gpu-node-07"], T0, T0 + H)
    await node.send(HOT)
    await node.run(10 * M)
    await node.send(HOT, status="resolved")
    await node.run(10 * M)
    await end(db, "gpu-node-07", node.clock.now)
    await node.run(30 * M)
    assert await rows(db, OutboxRow) == []


async def test_a_window_on_the_address_meets_alerts_named_by_hostname(db: Database) -> None:
    node = Node07(db)
    xid = dcgm_labels("10.0.0.7", "gpu-node-07", 3, xid="79")
    await node.send([xid])
    await node.run(M)  # the alert teaches 10.0.0.7 = gpu-node-07
    sent = len(await rows(db, OutboxRow))
    await start(db, ["10.0.0.7"], node.clock.now, node.clock.now + H)
    await node.send([*HOT])
    await node.run(30 * M)
    decisions = {a.labels["gpu"]: a.decision for a in await rows(db, AlertRow) if a.labels.get("Hostname")}
    assert set(decisions.values()) == {"maintenance"}
    assert len(await rows(db, OutboxRow)) == sent  # nothing more; not even a repeat of the Xid


async def test_a_neighbour_s_message_names_the_node_in_maintenance_in_its_rack(db: Database) -> None:
    racks = {"gpu-node-07": {"rack": "r12"}, "gpu-node-08": {"rack": "r12"}, "gpu-node-09": {"rack": "r14"}}
    node = Node07(db)
    node.runner = EngineRunner(db, with_topology(shipped_pipeline(), topology=racks), clock=node.clock)
    await start(db, ["gpu-node-07"], T0, T0 + H)
    await node.send([gpu_labels(n, 0, severity="critical") for n in ("gpu-node-07", "gpu-node-08", "gpu-node-09")])
    await node.run(5 * M)
    told = {o.incident_key.split("node-")[-1][:2]: o.message["summary"] for o in await rows(db, OutboxRow)}
    assert sorted(told) == ["08", "09"]  # gpu-node-07 is in maintenance
    assert told["08"]["nearby_maintenance"] == [
        {"node": "gpu-node-07", "reason": "RMA ticket 4711", "until": (T0 + H).isoformat()}
    ]
    assert "nearby_maintenance" not in told["09"]  # another rack

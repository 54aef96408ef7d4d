"""Learned node aliases on a real store (SQLite and PostgreSQL): the rack case through ingest and the
engine, persistence across a restart and between replicas, expiry, configured aliases, conflicts."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.store import Database
from alertrouter.store.nodes import prune_node_aliases
from alertrouter.store.tables import AlertRow, IncidentRow, NodeAliasRow, NotifyStateRow, OutboxRow
from support.passes import Clock, rows, run_for
from support.scenario import dcgm_labels, node_exporter_down_labels, shipped_pipeline
from support.webhooks import Status, webhook

S = timedelta(seconds=1)
MIN = timedelta(minutes=1)
BY_IP, BY_NAME = 'node{alertname="NodeDown",node="10.0.0.7"}', 'node{alertname="NodeDown",node="gpu-node-07"}'
RACK = [(f"10.0.0.{n}", f"gpu-node-{n}") for n in range(100, 140)]


async def send(ingestor: Ingestor, clock: Clock, alerts: list[dict[str, str]], status: Status = "firing") -> None:
    ends_at = clock.now if status == "resolved" else None
    await ingestor.ingest(parse_webhook(webhook(alerts, status=status, ends_at=ends_at)).batch)


async def node_of(db: Database, alertname: str) -> set[str | None]:
    return {a.node for a in await rows(db, AlertRow) if a.alertname == alertname}


def with_topology(pipeline: CompiledRules, **changes: Any) -> CompiledRules:
    return dataclasses.replace(pipeline, nodes=dataclasses.replace(pipeline.nodes, **changes))


@pytest.mark.parametrize("node_down_first", [False, True], ids=["gpu-first", "nodedown-first"])
async def test_rack_power_loss_through_the_store_is_one_node_down_message(db: Database, node_down_first: bool) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    gpus = [dcgm_labels(ip, host, g, xid="48") for ip, host in RACK for g in range(8)]
    downs = [node_exporter_down_labels(ip) for ip, _ in RACK]
    first, second = (downs, gpus) if node_down_first else (gpus, downs)
    await send(ingestor, clock, first)
    await runner.run_once()
    clock.now += 25 * S
    await send(ingestor, clock, second)
    await runner.run_once()  # the pass that learns the names re-keys what was stored before them
    assert await node_of(db, "NodeDown") == {host for _, host in RACK}
    await run_for(runner, clock, 3 * MIN)
    outbox = await rows(db, OutboxRow)
    assert [(o.reason, o.message["headline"]) for o in outbox] == [("first", "NodeDown on 40 nodes")]
    assert {a.decision for a in await rows(db, AlertRow) if a.alertname == "GPUXidError"} == {"inhibited"}
    firing = [i for i in await rows(db, IncidentRow) if i.status == "firing"]
    assert not [i.key for i in firing if "10.0.0." in i.key]
    learned = {(r.address, r.node, r.learned_from) for r in await rows(db, NodeAliasRow)}
    assert learned == {(ip, host, "GPUXidError") for ip, host in RACK}


async def test_learned_aliases_survive_a_restart_and_a_lease_takeover(db: Database) -> None:
    """The GPU alerts that taught the alias are long gone (resolved, out of the engine's memory) when
    NodeDown comes: the name comes from the store, in a new process and in another replica."""
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    gpu = dcgm_labels("10.0.0.7", "gpu-node-07", 0, alertname="GPUHighTemp", severity="warning")
    a = EngineRunner(db, shipped_pipeline(), clock=clock, holder="replica-a")
    await send(ingestor, clock, [gpu])
    await a.run_once()
    clock.now += 5 * S
    await send(ingestor, clock, [gpu], status="resolved")
    await a.run_once()
    clock.now += 2 * 60 * MIN  # past the hour resolved alerts stay live
    restarted = EngineRunner(db, shipped_pipeline(), clock=clock, holder="replica-a")
    await send(ingestor, clock, [node_exporter_down_labels("10.0.0.7")])
    await restarted.run_once()
    assert await node_of(db, "NodeDown") == {"gpu-node-07"}
    # replica-a dies; replica-b takes over once its lease ran out and reads the aliases from the store
    clock.now += MIN
    b = EngineRunner(db, shipped_pipeline(), clock=clock, holder="replica-b")
    await send(ingestor, clock, [node_exporter_down_labels("10.0.0.7", alertname="NodeFilesystemReadOnly")])
    assert await b.run_once() is not None
    assert await node_of(db, "NodeFilesystemReadOnly") == {"gpu-node-07"}


async def test_an_alias_not_seen_for_its_ttl_expires_and_is_pruned(db: Database) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, with_topology(shipped_pipeline(), learned_ttl=90 * MIN), clock=clock)
    gpu = dcgm_labels("10.0.0.7", "gpu-node-07", 0, alertname="GPUHighTemp", severity="warning")
    await send(ingestor, clock, [gpu])
    await runner.run_once()
    clock.now += 5 * S
    await send(ingestor, clock, [gpu], status="resolved")
    await runner.run_once()
    clock.now += 80 * MIN  # the GPU alert is out of the engine's memory; the alias is still in force
    await send(ingestor, clock, [node_exporter_down_labels("10.0.0.7")])
    await runner.run_once()
    assert await node_of(db, "NodeDown") == {"gpu-node-07"}
    # no alert has claimed it since: at its expiry a pass re-keys the NodeDown back to its address
    (alias,) = await rows(db, NodeAliasRow)
    assert runner.wake_at is not None
    assert runner.wake_at <= alias.last_seen + 90 * MIN
    clock.now = alias.last_seen + 90 * MIN
    await runner.run_once()
    assert await node_of(db, "NodeDown") == {"10.0.0.7"}
    clock.now += MIN
    async with db.write() as s:  # housekeeping
        assert await prune_node_aliases(s, before=clock.now - 90 * MIN) == 1
        await s.commit()
    assert await rows(db, NodeAliasRow) == []


async def test_configured_aliases_win_over_learned_ones(db: Database) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    pipeline = with_topology(shipped_pipeline(), aliases={"10.0.0.7": "rack12-slot7"})
    runner = EngineRunner(db, pipeline, clock=clock)
    await send(ingestor, clock, [dcgm_labels("10.0.0.7", "gpu-node-07", 0), node_exporter_down_labels("10.0.0.7")])
    await runner.run_once()
    assert await node_of(db, "NodeDown") == {"rack12-slot7"}
    assert [(r.address, r.node) for r in await rows(db, NodeAliasRow)] == [("10.0.0.7", "gpu-node-07")]


async def test_a_conflict_goes_to_the_most_recent_claim_and_is_kept(db: Database) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    await send(ingestor, clock, [dcgm_labels("10.0.0.7", "gpu-node-07", 0)])
    await runner.run_once()
    clock.now += 10 * MIN  # the address now belongs to another machine, whose GPU alerts fire later
    later = [dcgm_labels("10.0.0.7", "gpu-node-70", gpu) for gpu in (0, 1)]
    await send(ingestor, clock, [*later, node_exporter_down_labels("10.0.0.7")])
    await runner.run_once()
    (alias,) = await rows(db, NodeAliasRow)
    assert (alias.node, alias.previous_node, alias.changed_at) == ("gpu-node-70", "gpu-node-07", clock.now)
    assert await node_of(db, "NodeDown") == {"gpu-node-70"}
    clock.now += 5 * S
    await runner.run_once()  # and it stays so: no flip back while both alerts fire
    (again,) = await rows(db, NodeAliasRow)
    assert (again.node, again.changed_at) == ("gpu-node-70", alias.changed_at)


@pytest.mark.parametrize("successor", ["replica-a", "replica-b"], ids=["restart", "takeover"])
async def test_a_node_down_decided_by_ip_before_a_restart_moves_to_the_name_learned_after(
    db: Database, successor: str
) -> None:
    """NodeDown was decided (and told) under its address; the engine restarts, or another replica takes
    the lease, before the GPU alert that names the node arrives. The new process places NodeDown under
    the name at once, so no pass sees it leave the address: the stored incident key says it did."""
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    first = EngineRunner(db, shipped_pipeline(), clock=clock, holder="replica-a")
    await send(ingestor, clock, [node_exporter_down_labels("10.0.0.7")])
    await run_for(first, clock, 2 * MIN)
    (told,) = await rows(db, OutboxRow)
    assert (told.reason, told.incident_key) == ("first", BY_IP)
    clock.now += MIN  # replica-a is gone; its lease has run out
    after = EngineRunner(db, shipped_pipeline(), clock=clock, holder=successor)
    await send(ingestor, clock, [dcgm_labels("10.0.0.7", "gpu-node-07", 0)])
    await run_for(after, clock, 2 * MIN)
    assert await node_of(db, "NodeDown") == {"gpu-node-07"}
    incidents = {i.key: i.status for i in await rows(db, IncidentRow)}
    assert incidents[BY_IP] == "resolved"  # not left firing with no alert
    assert incidents[BY_NAME] == "firing"
    # the move is quiet and carries on from what was told: no resolved message for the address, no
    # second first message under the name
    assert [(o.reason, o.incident_key) for o in await rows(db, OutboxRow)] == [("first", BY_IP)]


async def test_a_restart_during_a_storm_moves_nothing(db: Database) -> None:
    """Rolled-up alerts are stored under their storm's key, not their node's: a new process must not
    take that for a move (it would hand the storm's record of what was told to one of its nodes)."""
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    await send(ingestor, clock, [node_exporter_down_labels(ip) for ip, _ in RACK])
    await send(ingestor, clock, [dcgm_labels(ip, host, 0) for ip, host in RACK])
    await run_for(EngineRunner(db, shipped_pipeline(), clock=clock, holder="replica-a"), clock, 3 * MIN)
    assert {a.decision for a in await rows(db, AlertRow) if a.alertname == "NodeDown"} == {"rolled_up"}
    statuses = {i.key: i.status for i in await rows(db, IncidentRow)}
    told = sorted((n.incident_key, n.receiver, n.last_sent_at) for n in await rows(db, NotifyStateRow))
    assert [key for key, _, _ in told] == ['node/cluster{alertname="NodeDown",region=""}']
    sent = [(o.reason, o.incident_key) for o in await rows(db, OutboxRow)]
    clock.now += MIN
    await run_for(EngineRunner(db, shipped_pipeline(), clock=clock, holder="replica-a"), clock, 2 * MIN)
    assert {i.key: i.status for i in await rows(db, IncidentRow)} == statuses
    assert sorted((n.incident_key, n.receiver, n.last_sent_at) for n in await rows(db, NotifyStateRow)) == told
    assert [(o.reason, o.incident_key) for o in await rows(db, OutboxRow)] == sent

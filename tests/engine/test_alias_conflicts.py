"""One alert must not move a learned address to another node (issue 44), on both stores: a warning alert
carrying `instance="10.0.0.7:9100"` and `node="gpu-node-08"` while 10.0.0.7 is learned as gpu-node-07 is
held, so NodeDown stays on gpu-node-07 and mutes its GPU alerts, not gpu-node-08's. A second alert making
the same claim, or the Prometheus lookup naming the node, moves it; the held move survives a restart,
logged and counted once."""

from __future__ import annotations

import logging

import pytest

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.metrics import Metrics
from alertrouter.pipeline.nodes import NOTHING_DISCOVERED, Discovered
from alertrouter.store import Database
from alertrouter.store.tables import AlertRow, NodeAliasRow
from support.passes import Clock, rows, run_for
from support.scenario import dcgm_labels, node_exporter_down_labels, shipped_pipeline

from .test_discovered_nodes import Holder
from .test_learned_nodes import MIN, S, node_of, send

# A node-exporter alert (bare metal, scraped by address) whose target carries a `node` label naming
# another machine: a copy-pasted static target, a wrong relabelling.
ATTACK = {
    "alertname": "NodeFilesystemSpaceFillingUp",
    "instance": "10.0.0.7:9100",
    "job": "node",
    "device": "/dev/nvme0n1p2",
    "fstype": "ext4",
    "mountpoint": "/",
    "severity": "warning",
    "node": "gpu-node-08",
}
GPUS_07 = [dcgm_labels("10.0.0.7", "gpu-node-07", g) for g in (0, 1)]
GPUS_08 = [dcgm_labels("10.0.0.8", "gpu-node-08", g) for g in (0, 1)]


def value(metrics: Metrics, name: str) -> float | None:
    return metrics.registry.get_sample_value(name)


async def decisions(db: Database, hostname: str) -> set[str | None]:
    return {a.decision for a in await rows(db, AlertRow) if a.labels.get("Hostname") == hostname}


async def fingerprint_of(db: Database, alertname: str) -> str:
    (fp,) = [str(a.fingerprint) for a in await rows(db, AlertRow) if a.alertname == alertname]
    return fp


async def attacked(db: Database, clock: Clock, ingestor: Ingestor, runner: EngineRunner) -> None:
    """10.0.0.7 learned as gpu-node-07 from its dcgm-exporter alerts; gpu-node-08's GPUs alert too; ten
    minutes later the alert claiming 10.0.0.7 is gpu-node-08 fires (later than every other claim)."""
    await send(ingestor, clock, [*GPUS_07, *GPUS_08])
    await runner.run_once()
    clock.now += 10 * MIN
    await send(ingestor, clock, [ATTACK])
    await runner.run_once()


async def test_one_alert_does_not_move_node_down_to_another_node(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    clock, metrics = Clock(), Metrics()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), metrics, clock=clock)
    with caplog.at_level(logging.INFO, logger="alertrouter.engine.claims"):
        await attacked(db, clock, ingestor, runner)
        clock.now += 5 * S
        await send(ingestor, clock, [node_exporter_down_labels("10.0.0.7")])
        await run_for(runner, clock, 3 * MIN)
    assert await node_of(db, "NodeDown") == {"gpu-node-07"}
    assert await decisions(db, "gpu-node-07") == {"inhibited"}
    assert "inhibited" not in await decisions(db, "gpu-node-08")
    (alias,) = [r for r in await rows(db, NodeAliasRow) if r.address == "10.0.0.7"]
    attack = await fingerprint_of(db, "NodeFilesystemSpaceFillingUp")
    assert (alias.node, alias.previous_node, alias.learned_from) == ("gpu-node-07", None, "GPUXidError")
    assert (alias.held_node, alias.held_from, alias.held_fingerprint) == (
        "gpu-node-08",
        "NodeFilesystemSpaceFillingUp",
        attack,
    )
    assert alias.held_since == clock.now - 3 * MIN - 10 * S  # the attack's pass, kept since
    # logged once over 37 passes, counted once, and held now
    said = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "alertrouter.engine.claims"]
    assert said == [
        (
            "WARNING",
            f"address 10.0.0.7 stays node gpu-node-07: only NodeFilesystemSpaceFillingUp {attack} claims it is "
            "gpu-node-08; held until another alert or the Prometheus lookup says so too",
        )
    ]
    assert value(metrics, "alertrouter_node_alias_conflicts_total") == 1
    assert value(metrics, "alertrouter_node_alias_held") == 1


@pytest.mark.parametrize("successor", ["replica-a", "replica-b"], ids=["restart", "takeover"])
async def test_a_held_move_is_held_again_after_a_restart_not_logged_or_counted_again(
    db: Database, caplog: pytest.LogCaptureFixture, successor: str
) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    await attacked(
        db, clock, ingestor, EngineRunner(db, shipped_pipeline(), Metrics(), clock=clock, holder="replica-a")
    )
    (before,) = [r for r in await rows(db, NodeAliasRow) if r.address == "10.0.0.7"]
    clock.now += MIN  # replica-a is gone; its lease has run out
    metrics = Metrics()
    after = EngineRunner(db, shipped_pipeline(), metrics, clock=clock, holder=successor)
    await send(ingestor, clock, [node_exporter_down_labels("10.0.0.7")])
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="alertrouter.engine.claims"):
        await run_for(after, clock, MIN)
    assert await node_of(db, "NodeDown") == {"gpu-node-07"}
    (alias,) = [r for r in await rows(db, NodeAliasRow) if r.address == "10.0.0.7"]
    assert (alias.node, alias.held_node, alias.held_since) == ("gpu-node-07", "gpu-node-08", before.held_since)
    assert [r.getMessage() for r in caplog.records if r.name == "alertrouter.engine.claims"] == []
    assert value(metrics, "alertrouter_node_alias_conflicts_total") == 0
    assert value(metrics, "alertrouter_node_alias_held") == 1


async def test_a_second_alert_agreeing_moves_the_address(db: Database, caplog: pytest.LogCaptureFixture) -> None:
    """The address really was given to gpu-node-08: its dcgm-exporter, scraped at 10.0.0.7, says so too."""
    clock, metrics = Clock(), Metrics()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), metrics, clock=clock)
    await attacked(db, clock, ingestor, runner)
    await send(ingestor, clock, [node_exporter_down_labels("10.0.0.7")])
    await runner.run_once()
    assert await node_of(db, "NodeDown") == {"gpu-node-07"}
    clock.now += MIN
    await send(ingestor, clock, [dcgm_labels("10.0.0.7", "gpu-node-08", 3)])
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="alertrouter.engine.claims"):
        await runner.run_once()
    (alias,) = [r for r in await rows(db, NodeAliasRow) if r.address == "10.0.0.7"]
    assert (alias.node, alias.previous_node, alias.changed_at) == ("gpu-node-08", "gpu-node-07", clock.now)
    assert (alias.held_node, alias.held_fingerprint, alias.held_since) == (None, None, None)
    assert await node_of(db, "NodeDown") == {"gpu-node-08"}
    said = [r.getMessage() for r in caplog.records if r.name == "alertrouter.engine.claims"]
    assert said == [
        f"address 10.0.0.7 now names node gpu-node-08 (was gpu-node-07): claimed by GPUXidError {alias.fingerprint}"
    ]
    assert (
        value(metrics, "alertrouter_node_alias_conflicts_total"),
        value(metrics, "alertrouter_node_alias_held"),
    ) == (1, 0)


async def test_the_lookup_naming_the_node_moves_the_address(db: Database) -> None:
    clock, holder = Clock(), Holder()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock, discovered=holder)
    await attacked(db, clock, ingestor, runner)
    holder.snapshot = Discovered(names={"10.0.0.7": "gpu-node-09"})  # says another name: nothing moves
    clock.now += 5 * S
    await runner.run_once()
    (alias,) = [r for r in await rows(db, NodeAliasRow) if r.address == "10.0.0.7"]
    assert alias.node == "gpu-node-07"
    assert alias.held_node == "gpu-node-08"
    holder.snapshot = Discovered(names={"10.0.0.7": "gpu-node-08"})  # node_uname_info at 10.0.0.7 agrees
    clock.now += 5 * S
    await runner.run_once()
    (alias,) = [r for r in await rows(db, NodeAliasRow) if r.address == "10.0.0.7"]
    assert (alias.node, alias.previous_node, alias.held_node) == ("gpu-node-08", "gpu-node-07", None)
    # the lookup loses the name later (its series went stale): the learned alias names it now
    holder.snapshot = NOTHING_DISCOVERED
    clock.now += 5 * S
    await send(ingestor, clock, [node_exporter_down_labels("10.0.0.7")])
    await runner.run_once()
    assert await node_of(db, "NodeDown") == {"gpu-node-08"}


async def test_a_held_move_is_let_go_when_its_alert_is_gone(db: Database, caplog: pytest.LogCaptureFixture) -> None:
    clock, metrics = Clock(), Metrics()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), metrics, clock=clock)
    await attacked(db, clock, ingestor, runner)
    (alias,) = [r for r in await rows(db, NodeAliasRow) if r.address == "10.0.0.7"]
    assert alias.node == "gpu-node-07"
    clock.now += 5 * S
    await send(ingestor, clock, [ATTACK], status="resolved")
    await runner.run_once()
    clock.now += 2 * 60 * MIN  # past the hour resolved alerts stay live: the engine forgets it
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="alertrouter.engine.claims"):
        await runner.run_once()
    (alias,) = [r for r in await rows(db, NodeAliasRow) if r.address == "10.0.0.7"]
    assert (alias.node, alias.held_node, alias.held_from) == ("gpu-node-07", None, None)
    said = [r.getMessage() for r in caplog.records if r.name == "alertrouter.engine.claims"]
    assert said == ["address 10.0.0.7 stays node gpu-node-07: the move to gpu-node-08 is no longer held"]
    assert value(metrics, "alertrouter_node_alias_held") == 0

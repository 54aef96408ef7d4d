"""A fleet whose dcgm-exporters all say `Hostname="localhost"`, through ingest, the engine and a real store
(SQLite and PostgreSQL): each alert is stored on its own node, and an Xid 48 on one node is its own message."""

from __future__ import annotations

from datetime import timedelta

import pytest

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.store import Database
from alertrouter.store.tables import AlertRow, NodeAliasRow, OutboxRow
from support.passes import Clock, rows, run_for
from support.scenario import dcgm_labels, k8s_dcgm_labels, shipped_pipeline
from support.webhooks import webhook

S = timedelta(seconds=1)
MIN = timedelta(minutes=1)
FLEET = [f"10.0.0.{n}" for n in range(100, 140)]


def bare(n: int, gpu: int, alertname: str, **extra: str) -> dict[str, str]:
    return dcgm_labels(FLEET[n], "localhost", gpu, alertname=alertname, **extra)


def k8s(n: int, gpu: int, alertname: str, **extra: str) -> dict[str, str]:
    """An older GPU Operator chart: `Hostname` the pod's name, `kubernetes_node` from relabelling."""
    labels = k8s_dcgm_labels(f"gpu-node-{n:03d}", f"10.244.{n}.9", gpu, alertname=alertname, **extra)
    pod = f"nvidia-dcgm-exporter-{n}x7kq"
    del labels["node"]
    return {**labels, "Hostname": pod, "pod": pod, "kubernetes_node": f"gpu-node-{n:03d}"}


SHAPES = {"bare-metal": (bare, FLEET), "kubernetes": (k8s, [f"gpu-node-{n:03d}" for n in range(40)])}


@pytest.mark.parametrize("shape", SHAPES)
async def test_a_localhost_fleet_is_stored_node_by_node_and_its_ecc_error_is_told(db: Database, shape: str) -> None:
    labels, names = SHAPES[shape]
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    hot = [labels(n, g, "GPUHighTemp", severity="warning") for n in range(40) for g in range(8)]
    hot += [labels(n, g, "GPUXidError", xid="13", severity="critical") for n in (1, 2) for g in range(8)]
    await ingestor.ingest(parse_webhook(webhook(hot)).batch)
    await run_for(runner, clock, 2 * MIN)
    stored = await rows(db, AlertRow)
    assert {a.node for a in stored} == set(names)
    assert not await rows(db, NodeAliasRow)  # `localhost` and pods teach nothing
    told = len(await rows(db, OutboxRow))
    xid = labels(17, 3, "GPUXidError", xid="48", severity="critical")
    await ingestor.ingest(parse_webhook(webhook([xid])).batch)
    await run_for(runner, clock, 2 * MIN)
    outbox = await rows(db, OutboxRow)
    assert [(o.receiver, o.reason, o.message["headline"]) for o in outbox[told:]] == [
        ("oncall-core", "first", f"{names[17]}: GPUXidError on 1/8 GPUs"),
    ]
    assert not [o for o in outbox if "localhost" in o.message["headline"]]

"""Nodes the cluster has cordoned or tainted, read by the node lookup (over `httpx.MockTransport`) and
acted on by the engine: their alerts are decided `maintenance`; an uncordon is told at once; a Prometheus
that is down keeps the last state for `keep_for`, then lets it go."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta

import httpx

from alertrouter.discovery.cordons import CORDON_QUERY, TAINT_QUERY, MaintenanceReads, maintenance_of
from alertrouter.discovery.prometheus import PrometheusLookup
from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.ruleset.maintenance import MaintenanceConfig, parse_taint, taint_rules
from alertrouter.ruleset.topology import PrometheusLookupConfig
from alertrouter.store import Database
from alertrouter.store.tables import AlertRow, OutboxRow
from support.passes import T0, Clock, rows, run_for
from support.promql import answer_bytes
from support.scenario import gpu_labels, shipped_pipeline
from support.webhooks import webhook

M = timedelta(minutes=1)
DEFAULTS = MaintenanceReads(True, taint_rules(MaintenanceConfig()))
# kube-state-metrics as the lookup's queries cut it: gpu-node-07 quarantined by NVSentinel (cordoned and
# tainted), gpu-node-08 drained by hand, gpu-node-09 tainted by something not configured.
CORDONED = [{"node": "gpu-node-07"}, {"node": "gpu-node-08"}]
TAINTED = [
    {"node": "gpu-node-07", "key": "nvidia.com/gpu-xid-error", "value": "true", "effect": "NoSchedule"},
    {"node": "gpu-node-09", "key": "dedicated", "value": "training", "effect": "NoSchedule"},
]


def vector(rows: Sequence[Mapping[str, str]]) -> bytes:
    result = [{"metric": dict(r), "value": [1764316800.0, "1"]} for r in rows]
    return httpx.Response(200, json={"status": "success", "data": {"resultType": "vector", "result": result}}).content


class Cluster:
    """A Prometheus with kube-state-metrics: the node-name fixtures, and cordons and taints the test changes."""

    def __init__(self) -> None:
        self.cordoned: list[dict[str, str]] = list(CORDONED)
        self.tainted: list[dict[str, str]] = list(TAINTED)
        self.down = False

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if self.down:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        query = request.url.params["query"]
        if query == CORDON_QUERY:
            return httpx.Response(200, content=vector(self.cordoned))
        if query == TAINT_QUERY:
            return httpx.Response(200, content=vector(self.tainted))
        return httpx.Response(200, content=answer_bytes(query))


def lookup_of(cluster: Cluster, clock: Clock, reads: MaintenanceReads | None = DEFAULTS) -> PrometheusLookup:
    client = httpx.AsyncClient(transport=httpx.MockTransport(cluster))
    config = PrometheusLookupConfig(url="http://prometheus:9090")
    return PrometheusLookup(config, keep_for=timedelta(minutes=30), client=client, clock=clock, maintenance=reads)


def test_a_taint_says_more_than_the_cordon_beside_it() -> None:
    assert maintenance_of(DEFAULTS, CORDONED, TAINTED) == {
        "gpu-node-07": "taint nvidia.com/gpu-xid-error",
        "gpu-node-08": "cordoned",
    }
    only_taints = MaintenanceReads(False, (parse_taint("dedicated=training:NoSchedule"),))
    assert maintenance_of(only_taints, CORDONED, TAINTED) == {"gpu-node-09": "taint dedicated"}


async def test_the_lookup_keeps_the_state_while_prometheus_is_down_then_lets_it_go() -> None:
    clock, cluster = Clock(), Cluster()
    lookup = lookup_of(cluster, clock)
    assert await lookup.refresh()
    assert dict(lookup.snapshot().maintenance) == {
        "gpu-node-07": ("taint nvidia.com/gpu-xid-error", T0),
        "gpu-node-08": ("cordoned", T0),
    }
    cluster.down, clock.now = True, T0 + 20 * M
    assert not await lookup.refresh()
    assert set(lookup.snapshot().maintenance) == {"gpu-node-07", "gpu-node-08"}
    assert set(lookup.problems) >= {"kube_node_spec_unschedulable"}
    clock.now = T0 + 31 * M  # keep_for after the last answer
    await lookup.refresh()
    assert dict(lookup.snapshot().maintenance) == {}


async def test_without_the_reads_nothing_more_is_asked() -> None:
    asked: list[str] = []
    cluster = Cluster()

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.params["query"])
        return cluster(request)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    lookup = PrometheusLookup(PrometheusLookupConfig(url="http://p:9090"), keep_for=M, client=client, clock=Clock())
    await lookup.refresh()
    assert CORDON_QUERY not in asked
    assert lookup.snapshot().maintenance == {}


async def test_a_cordoned_node_is_in_maintenance_and_its_uncordon_is_told_at_once(db: Database) -> None:
    clock, cluster = Clock(), Cluster()
    lookup = lookup_of(cluster, clock)
    await lookup.refresh()
    runner = EngineRunner(db, shipped_pipeline(), clock=clock, discovered=lookup.snapshot)
    hot = [gpu_labels("gpu-node-08", g, severity="critical") for g in range(2)]
    await Ingestor(db, TouchBuffer(), clock=clock).ingest(parse_webhook(webhook(hot, starts_at=T0)).batch)
    await run_for(runner, clock, 20 * M)
    alerts = await rows(db, AlertRow)
    assert {a.decision for a in alerts} == {"maintenance"}
    detail = alerts[0].decision_detail["maintenance"]
    assert (detail["reason"], detail["source"], detail["since"]) == ("cordoned", "cluster", T0.isoformat())
    assert "until" not in detail  # while the cluster says so
    assert await rows(db, OutboxRow) == []

    cluster.cordoned = [{"node": "gpu-node-07"}]  # kubectl uncordon gpu-node-08
    assert await lookup.refresh()
    await runner.run_once()
    told = await rows(db, OutboxRow)
    assert told
    assert {o.reason for o in told} == {"first"}

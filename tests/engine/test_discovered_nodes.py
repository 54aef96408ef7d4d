"""The engine runner with the Prometheus lookup, on a real store: a new snapshot makes a pass re-key the
stored alerts (the pass is not skipped as idle), configured > discovered > learned, and a Prometheus
that fails changes nothing for the passes."""

from __future__ import annotations

import httpx

from alertrouter.discovery.prometheus import PrometheusLookup
from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.pipeline.nodes import NOTHING_DISCOVERED, Discovered
from alertrouter.ruleset.topology import PrometheusLookupConfig
from alertrouter.store import Database
from alertrouter.store.tables import AlertRow, IncidentRow
from support.passes import Clock, rows
from support.promql import answer_bytes
from support.scenario import dcgm_labels, node_exporter_down_labels, shipped_pipeline

from .test_learned_nodes import S, send, with_topology

FOUND = Discovered(names={"10.0.0.7": "gpu-node-07"}, topology={"gpu-node-07": {"region": "north"}})


class Holder:
    """Stands for the lookup: the snapshot the runner reads at each pass."""

    def __init__(self) -> None:
        self.snapshot = NOTHING_DISCOVERED

    def __call__(self) -> Discovered:
        return self.snapshot


async def labels_of(db: Database, alertname: str) -> list[tuple[str | None, str | None]]:
    """Each stored alert's node, and the region of the firing incident it is in (the stored alert keeps
    its own labels; the enriched ones are what the incidents are made of)."""
    incidents = {i.key: i for i in await rows(db, IncidentRow) if i.status == "firing"}
    out = []
    for a in await rows(db, AlertRow):
        if a.alertname == alertname:
            incident = incidents.get(a.incident_key) if a.incident_key else None
            out.append((a.node, incident.labels.get("region") if incident is not None else None))
    return out


async def test_a_new_snapshot_re_keys_stored_alerts_in_the_next_pass(db: Database) -> None:
    clock, holder = Clock(), Holder()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock, discovered=holder)
    await send(ingestor, clock, [node_exporter_down_labels("10.0.0.7")])
    await runner.run_once()
    assert await labels_of(db, "NodeDown") == [("10.0.0.7", None)]
    clock.now += 5 * S
    await runner.run_once()  # nothing changed: an idle pass
    holder.snapshot = FOUND  # the lookup's refresh found the name (and nudges the engine)
    clock.now += 5 * S
    await runner.run_once()
    nodes = {a.node for a in await rows(db, AlertRow)}
    assert nodes == {"gpu-node-07"}


async def test_configured_beats_discovered_beats_learned_through_the_engine(db: Database) -> None:
    clock, holder = Clock(), Holder()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    # bare-metal dcgm-exporter teaches 10.0.0.7 = "gpu-node-07-old" (a stale Hostname, say)
    await send(ingestor, clock, [dcgm_labels("10.0.0.7", "gpu-node-07-old", 0), node_exporter_down_labels("10.0.0.7")])
    learned_only = EngineRunner(db, shipped_pipeline(), clock=clock, holder="a")
    await learned_only.run_once()
    assert {n for n, _ in await labels_of(db, "NodeDown")} == {"gpu-node-07-old"}
    holder.snapshot = FOUND
    clock.now += 5 * S
    with_lookup = EngineRunner(db, shipped_pipeline(), clock=clock, holder="a", discovered=holder)
    await with_lookup.run_once()
    assert await labels_of(db, "NodeDown") == [("gpu-node-07", "north")]
    clock.now += 5 * S
    configured = with_topology(shipped_pipeline(), aliases={"10.0.0.7": "gpu07"})
    await EngineRunner(db, configured, clock=clock, holder="a", discovered=holder).run_once()
    assert {n for n, _ in await labels_of(db, "NodeDown")} == {"gpu07"}


async def test_a_failing_prometheus_leaves_passes_running_on_the_last_answer(db: Database) -> None:
    clock = Clock()
    failing = False

    def prometheus(request: httpx.Request) -> httpx.Response:
        if failing:
            return httpx.Response(500, text="internal server error")
        return httpx.Response(200, content=answer_bytes(request.url.params["query"]))

    config = PrometheusLookupConfig(url="http://prometheus:9090")
    client = httpx.AsyncClient(transport=httpx.MockTransport(prometheus))
    lookup = PrometheusLookup(config, keep_for=config.refresh * 60, client=client, clock=clock)
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock, discovered=lookup.snapshot)
    lookup.on_change = runner.nudge
    await lookup.refresh()
    failing = True
    clock.now += 60 * S
    await lookup.refresh()
    await send(ingestor, clock, [node_exporter_down_labels("10.0.0.7")])
    assert await runner.run_once() is not None
    assert await labels_of(db, "NodeDown") == [("gpu-node-07", "north")]
    assert lookup.problems["kube_pod_info"].problem == "http_status"
    await client.aclose()

"""The engine keeps the jobs hit by the live alerts in `job_hits`, on a real store: a storm over 40 nodes
running 3 jobs is 3 rows, more nodes hit update them, and they resolve when the nodes recover or when the
lookup no longer has the job (a pass runs for that alone)."""

from __future__ import annotations

from typing import Any

from alertrouter.engine.jobs import JobWatch
from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.jobs.impact import ImpactRules
from alertrouter.jobs.pods import NO_PODS, PodIndex
from alertrouter.labels import parse_matchers
from alertrouter.metrics import Metrics
from alertrouter.pipeline.nodes import Discovered
from alertrouter.store import Database
from alertrouter.store.tables import JobHitRow
from support.jobs import cluster
from support.passes import Clock, rows
from support.scenario import node_exporter_down_labels, shipped_pipeline

from .test_learned_nodes import S, send, with_topology

RULES = ImpactRules(node_down=tuple(parse_matchers('alertname="NodeDown"')))
NAMES = Discovered(names={f"10.0.1.{n}": f"gpu-node-{n:02d}" for n in range(40)})


class Pods:
    """Stands for the lookup's pods."""

    def __init__(self, index: PodIndex) -> None:
        self.index = index

    def __call__(self) -> PodIndex:
        return self.index


def down(nodes: range) -> list[dict[str, str]]:
    return [node_exporter_down_labels(f"10.0.1.{n}") for n in nodes]


async def incidents(db: Database) -> dict[str, list[str]]:
    return {r.name: r.incidents for r in await rows(db, JobHitRow) if r.resolved_at is None}


async def hits(db: Database) -> list[tuple[str, str, int, int, bool]]:
    return sorted(
        (r.namespace, r.name, r.down_count, r.gpus_lost, r.resolved_at is None) for r in await rows(db, JobHitRow)
    )


async def test_a_storm_over_40_nodes_running_3_jobs_is_3_rows_updated_then_resolved(db: Database) -> None:
    clock, pods, metrics = Clock(), Pods(cluster()), Metrics()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    watch = JobWatch(RULES, pods)
    runner = EngineRunner(db, shipped_pipeline(), metrics, clock=clock, discovered=lambda: NAMES, jobs=watch)
    await send(ingestor, clock, down(range(10)))
    await runner.run_once()
    assert await hits(db) == [("ml-train", "llm-pretrain", 10, 80, True)]
    assert metrics.registry.get_sample_value("alertrouter_jobs_hit") == 1
    clock.now += 5 * S
    await send(ingestor, clock, down(range(10, 40)))
    await runner.run_once()
    assert await hits(db) == [
        ("eval", "nightly", 5, 40, True),
        ("ml-train", "llm-pretrain", 20, 160, True),
        ("vc", "sweep", 15, 120, True),
    ]
    assert metrics.registry.get_sample_value("alertrouter_jobs_hit") == 3
    # the storm's one incident (40 nodes down), not 40: each job names it
    assert await incidents(db) == {
        "nightly": ['node/cluster{alertname="NodeDown",region=""}'],
        "llm-pretrain": ['node/cluster{alertname="NodeDown",region=""}'],
        "sweep": ['node/cluster{alertname="NodeDown",region=""}'],
    }
    clock.now += 5 * S
    await send(ingestor, clock, down(range(20, 40)), status="resolved")
    await runner.run_once()
    assert await hits(db) == [
        ("eval", "nightly", 5, 40, False),
        ("ml-train", "llm-pretrain", 20, 160, True),
        ("vc", "sweep", 15, 120, False),
    ]


async def test_a_job_gone_from_the_lookup_is_resolved_by_a_pass_of_its_own(db: Database) -> None:
    clock, pods = Clock(), Pods(cluster())
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock, discovered=lambda: NAMES, jobs=JobWatch(RULES, pods))
    await send(ingestor, clock, down(range(2)))
    await runner.run_once()
    clock.now += 5 * S
    await runner.run_once()  # idle
    assert await hits(db) == [("ml-train", "llm-pretrain", 2, 16, True)]
    pods.index = NO_PODS  # the PyTorchJob was deleted: its pods are gone
    clock.now += 5 * S
    await runner.run_once()
    assert await hits(db) == [("ml-train", "llm-pretrain", 2, 16, False)]


async def test_without_the_jobs_rules_nothing_is_kept(db: Database) -> None:
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    await send(ingestor, clock, down(range(3)))
    pipeline = with_topology(shipped_pipeline())
    await EngineRunner(db, pipeline, clock=clock, discovered=lambda: NAMES).run_once()
    assert await hits(db) == []


def disk_full(n: int) -> dict[str, str]:
    return {"alertname": "DiskFull", "instance": f"10.0.1.{n}:9100", "severity": "warning"}


async def test_a_quiet_fleet_writes_nothing_after_the_first_step(db: Database) -> None:
    clock, lease_writes = Clock(), []
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    watch = JobWatch(RULES, Pods(cluster()))
    runner = EngineRunner(db, shipped_pipeline(), clock=clock, discovered=lambda: NAMES, jobs=watch)
    await send(ingestor, clock, [disk_full(1)])
    await runner.run_once()
    lease = runner._passes.lease
    under = lease.under

    async def counted(now: Any, work: Any) -> bool:
        lease_writes.append(work)
        return await under(now, work)

    lease.under = counted  # type: ignore[method-assign]
    for n in range(3):
        clock.now += 5 * S
        await send(
            ingestor, clock, [{"alertname": "DiskFull", "instance": f"10.0.1.{n + 2}:9100", "severity": "warning"}]
        )
        await runner.run_once()
    assert [w for w in lease_writes if w is not None and "JobWatch" in w.__qualname__] == []
    assert await hits(db) == []

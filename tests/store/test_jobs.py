"""`job_hits` on both stores: a job hit opens one row, more of its nodes hit update it (its GPU-seconds summed),
figures unchanged write nothing, and a job no longer hit is resolved and read back as of the last week."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from alertrouter.engine.jobs import hit_values
from alertrouter.jobs.identity import Job
from alertrouter.jobs.impact import JobImpact
from alertrouter.store import Database
from alertrouter.store import jobs as store

T0 = datetime(2026, 12, 8, 3, 12, tzinfo=UTC)
LLM = Job("ml-train", "llm-pretrain", "lookup", "kube_pod_owner PyTorchJob")


def impact(down: int, job: Job = LLM) -> JobImpact:
    nodes = tuple(f"gpu-node-{n:02d}" for n in range(down))
    return JobImpact(job, T0, nodes, down, nodes, down, down * 8, down, job_nodes=32)


GREW: list[bool] = []


async def save(db: Database, impacts: dict[str, JobImpact], now: datetime) -> list[tuple[str, str, int]]:
    async with db.write() as session:
        changes = await store.save_hits(session, {k: hit_values(i) for k, i in impacts.items()}, now)
        await session.commit()
    GREW[:] = [c.grew for c in changes]
    return [(c.kind, f"{c.row.namespace}/{c.row.name}", c.row.down_count) for c in changes]


async def test_a_job_hit_opens_updates_and_resolves_one_row(db: Database) -> None:
    key = "ml-train/llm-pretrain"
    assert await save(db, {key: impact(1)}, T0) == [("opened", key, 1)]
    assert await save(db, {key: impact(1)}, T0 + timedelta(minutes=1)) == []  # nothing changed: nothing written
    assert await save(db, {key: impact(3)}, T0 + timedelta(minutes=30)) == [("updated", key, 3)]
    assert GREW == [True]  # more GPUs lost than ever: told as an update
    assert await save(db, {key: impact(2)}, T0 + timedelta(minutes=31)) == [("updated", key, 2)]
    assert GREW == [False]  # fewer: written, not told
    assert await save(db, {key: impact(3)}, T0 + timedelta(minutes=32)) == [("updated", key, 3)]
    assert GREW == [False]  # as many as at its worst: not told again
    async with db.read() as session:
        (row,) = (await store.open_hits(session)).values()
        assert (row.down_count, row.gpus_lost, row.peak_gpus_lost, row.job_nodes) == (3, 24, 24, 32)
        assert row.nodes_down == ["gpu-node-00", "gpu-node-01", "gpu-node-02"]
        assert row.gpu_seconds == 8 * 30 * 60 + 24 * 60 + 16 * 60  # 8 GPUs for 30 minutes, 24 for 1, 16 for 1
    assert await save(db, {}, T0 + timedelta(hours=1)) == [("resolved", key, 3)]
    async with db.read() as session:
        assert await store.open_hits(session) == {}
        (row,) = await store.recent_hits(session, T0 - timedelta(days=7))
        assert row.resolved_at == T0 + timedelta(hours=1)
        assert row.gpu_seconds == 8 * 30 * 60 + 24 * 60 + 16 * 60 + 24 * 28 * 60
        assert await store.recent_hits(session, T0 + timedelta(hours=2)) == []


async def test_a_job_hit_again_opens_a_new_row_and_the_open_ones_come_first(db: Database) -> None:
    other = Job("", "884213", "label", "hpc_job")
    await save(db, {"ml-train/llm-pretrain": impact(1)}, T0)
    await save(db, {}, T0 + timedelta(minutes=10))
    assert await save(
        db, {"ml-train/llm-pretrain": impact(2), "884213": impact(1, other)}, T0 + timedelta(hours=1)
    ) == [
        ("opened", "/884213", 1),
        ("opened", "ml-train/llm-pretrain", 2),
    ]
    async with db.read() as session:
        rows = await store.recent_hits(session, T0 - timedelta(days=7))
    assert [(r.name, r.resolved_at is None) for r in rows] == [  # open ones by since, then as written
        ("884213", True),
        ("llm-pretrain", True),
        ("llm-pretrain", False),
    ]

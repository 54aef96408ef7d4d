"""The digest's jobs section: per job, its interruptions in the week, the GPU-hours it lost within the week and
the share hardware and the application caused, from `job_hits` as the engine writes them (`save_hits`), on
SQLite and PostgreSQL; in both languages; no section without the `jobs:` rules.

Week 2026-W47 in Asia/Shanghai: 2026-11-15T16:00Z to 2026-11-22T16:00Z.
  ml-train/llm-pretrain  Tue 17 Nov 00:00-02:00Z, 3 nodes down (24 GPUs): 48 GPU-hours, hardware;
                         Thu 19 Nov 00:00-04:00Z, Xid 13 on 2 GPUs: 8 GPU-hours, the application's
  vc/sweep               Sun 15 Nov 12:00-20:00Z, 1 node down (8 GPUs): 64 GPU-hours, half of them in the week
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from alertrouter.digest.send import DigestRunner
from alertrouter.engine.jobs import hit_values
from alertrouter.jobs.identity import Job
from alertrouter.jobs.impact import JobImpact
from alertrouter.render.templates import Templates
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.ruleset.schedule import zone
from alertrouter.store import Database
from alertrouter.store.jobs import save_hits

REPO = Path(__file__).resolve().parents[2]
WEEK = "2026-W47"
LLM = Job("ml-train", "llm-pretrain", "lookup", "kube_pod_owner PyTorchJob")
SWEEP = Job("vc", "sweep", "lookup", "kube_pod_labels label_volcano_sh_job_name")


def t(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


async def episode(db: Database, job: Job, start: str, hours: int, gpus: int, cause: str) -> None:
    at = t(start)
    impact = JobImpact(job, at, ("gpu-node-01",), 1, (), 0, gpus, 1, cause=cause)
    for now, impacts in ((at, {job.key: hit_values(impact)}), (at + timedelta(hours=hours), {})):
        async with db.write() as session:
            await save_hits(session, impacts, now)
            await session.commit()


async def runner(db: Database, rules: Path = REPO / "rules") -> DigestRunner:
    await episode(db, LLM, "2026-11-17T00:00", 2, 24, "hardware")
    await episode(db, LLM, "2026-11-19T00:00", 4, 2, "application")
    await episode(db, SWEEP, "2026-11-15T12:00", 8, 8, "hardware")
    ruleset = load_ruleset(rules, {})
    now = lambda: t("2026-11-23T03:00")  # noqa: E731
    return DigestRunner(db, ruleset, compile_rules(ruleset), templates=Templates(), holder="test", clock=now)


async def test_per_job_interruptions_gpu_hours_and_causes(db: Database) -> None:
    digest = await runner(db)
    stats = await digest.stats(digest.targets["weekly-digest"], WEEK, zone("Asia/Shanghai"))
    assert stats.jobs is not None
    assert [
        (j.key, j.interruptions, j.gpu_hours, round(j.hardware, 3), round(j.application, 3)) for j in stats.jobs
    ] == [
        ("ml-train/llm-pretrain", 2, 56.0, round(48 / 56, 3), round(8 / 56, 3)),
        ("vc/sweep", 0, 32.0, 1.0, 0.0),  # opened before the week: its half within the week, no interruption in it
    ]


async def test_the_section_in_english_and_chinese(db: Database) -> None:
    digest = await runner(db)
    target = digest.targets["weekly-digest"]
    _, en = await digest.build(target, WEEK, language="en")
    lines = en.text.splitlines()
    first = lines.index("JOBS HIT (GPU-hours lost, and the share hardware and the application caused)")
    assert lines[first + 1 : first + 3] == [
        "  ml-train/llm-pretrain: interrupted 2 times, 56.0 GPU-hours lost, hardware 86%, application 14%",
        "  vc/sweep: interrupted 0 times, 32.0 GPU-hours lost, hardware 100%, application 0%",
    ]
    assert '<tr data-job="ml-train/llm-pretrain">' in en.html
    _, zh = await digest.build(target, WEEK, language="zh-CN")
    assert "  ml-train/llm-pretrain：中断 2 次，损失 56.0 GPU 小时，硬件 86%，应用 14%" in zh.text.splitlines()
    assert "受影响的作业" in zh.html


async def test_without_the_jobs_rules_no_section(db: Database, tmp_path: Path) -> None:
    for path in sorted((REPO / "rules").glob("*.yml")):
        if path.name != "jobs.yml":
            (tmp_path / path.name).write_text(path.read_text())
    digest = await runner(db, tmp_path)
    _, en = await digest.build(digest.targets["weekly-digest"], WEEK, language="en")
    assert "JOBS HIT" not in en.text
    assert 'id="jobs"' not in en.html

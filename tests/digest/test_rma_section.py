"""The digest's RMA candidates come from each GPU's own history and the `rma:` rules (the API's source),
evaluated as of the week's end, against a week seeded through the real ingest and engine on SQLite and
PostgreSQL; listed with the rule, the reason and the evidence in both languages.

Week 2026-W47 in Asia/Shanghai: 2026-11-15T16:00Z to 2026-11-22T16:00Z; its last day is Sunday 22 Nov.
  GPU-lemon   gpu-node-31 GPU 2: Xid 48 Thu 1 Oct (beyond the rules' 30 days: not even read), Wed 11 Nov
              (eleven days before the last day), again Sun 22 Nov -> dbe-repeated, the last two as evidence
  GPU-remap   gpu-node-36 GPU 7: GPURowRemapFailure (no Xid) Fri 20 Nov -> row-remap-failure, once
  GPU-mover   Xid 79 on gpu-node-33 GPU 6 Thu 5 Nov, then (moved) on gpu-node-34 GPU 1 Thu 19 Nov
              -> fallen-off-bus-repeated, the evidence at both places
  GPU-once    gpu-node-32 GPU 0: Xid 48 Tue 17 Nov, again Mon 23 Nov (the next week) -> not, by the week's end
  GPU-old     gpu-node-35 GPU 4: Xid 48 Mon 2 and Fri 6 Nov, nothing in the week -> a candidate (the API
              lists it) but not this week's news: not listed
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from alertrouter.digest.period import week_bounds
from alertrouter.digest.rma import gpu_match
from alertrouter.digest.send import DigestRunner
from alertrouter.digest.types import DigestStats
from alertrouter.gpu.report import report
from alertrouter.gpu.rma import DEFAULT_RULES
from alertrouter.render.templates import Templates
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.ruleset.schedule import zone
from alertrouter.store import Database
from alertrouter.store import gpus as gpu_store
from alertrouter.store.digest import read_week
from support.digestweek import WeekDriver

REPO = Path(__file__).resolve().parents[2]
WEEK = "2026-W47"


def t(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def gpu(uuid: str, node: str, slot: int, alertname: str = "GPUXidError", **extra: str) -> dict[str, str]:
    """An alert of dcgm-exporter's series as the shipped Prometheus rules make it."""
    return {
        "alertname": alertname,
        "Hostname": node,
        "instance": f"{node}:9400",
        "job": "nvidia-dcgm-exporter",
        "gpu": str(slot),
        "UUID": uuid,
        "device": f"nvidia{slot}",
        "modelName": "NVIDIA H100 80GB HBM3",
        "severity": "critical",
        **extra,
    }


LEMON = gpu("GPU-lemon", "gpu-node-31", 2, xid="48", err_code="48", serial="1650923004521")
REMAP = gpu("GPU-remap", "gpu-node-36", 7, "GPURowRemapFailure")
MOVER_BEFORE = gpu("GPU-mover", "gpu-node-33", 6, "GPUFallenOffBus", xid="79")
MOVER_AFTER = gpu("GPU-mover", "gpu-node-34", 1, "GPUFallenOffBus", xid="79")
ONCE = gpu("GPU-once", "gpu-node-32", 0, xid="48")
OLD = gpu("GPU-old", "gpu-node-35", 4, xid="48")


async def seed(db: Database) -> DigestRunner:
    ruleset = load_ruleset(REPO / "rules", {})
    pipeline = compile_rules(ruleset)
    week = WeekDriver(db, pipeline, t("2026-10-01T00:00"))

    async def episode(at: str, until: str, alert: dict[str, str]) -> None:
        week.at(t(at))
        await week.fire([alert])
        await week.settle()
        week.at(t(until))
        await week.resolve([alert])
        await week.settle()

    await episode("2026-10-01T02:00", "2026-10-01T03:00", LEMON)
    await episode("2026-11-02T01:00", "2026-11-02T02:00", OLD)
    await episode("2026-11-05T04:00", "2026-11-05T05:00", MOVER_BEFORE)
    await episode("2026-11-06T01:00", "2026-11-06T02:00", OLD)
    await episode("2026-11-11T02:00", "2026-11-11T03:00", LEMON)
    await episode("2026-11-17T03:00", "2026-11-17T04:00", ONCE)
    await episode("2026-11-19T04:00", "2026-11-19T05:00", MOVER_AFTER)
    await episode("2026-11-20T06:00", "2026-11-20T07:00", REMAP)
    await episode("2026-11-22T02:00", "2026-11-22T03:00", LEMON)
    await episode("2026-11-23T01:00", "2026-11-23T02:00", ONCE)  # the next week
    return DigestRunner(
        db, ruleset, pipeline, templates=Templates(), holder="test", clock=lambda: t("2026-11-23T03:00")
    )


@pytest.fixture
async def seeded(db: Database) -> tuple[DigestRunner, DigestStats]:
    runner = await seed(db)
    target = runner.targets["weekly-digest"]
    return runner, await runner.stats(target, WEEK, zone("Asia/Shanghai"))


async def test_candidates_by_the_rma_rules_as_of_the_weeks_end(seeded: tuple[DigestRunner, DigestStats]) -> None:
    _, stats = seeded
    # the latest evidence first; GPU-once (its second Xid 48 is next week's) and GPU-old (nothing new) are not
    assert [(c.uuid, c.rule, c.node, c.slot, c.serial) for c in stats.rma] == [
        ("GPU-lemon", "dbe-repeated", "gpu-node-31", "2", "1650923004521"),
        ("GPU-remap", "row-remap-failure", "gpu-node-36", "7", None),
        ("GPU-mover", "fallen-off-bus-repeated", "gpu-node-34", "1", None),
    ]
    assert [[(e.at, e.xid, e.alertname, e.node, e.slot) for e in c.evidence] for c in stats.rma] == [
        [
            (t("2026-11-11T02:00"), 48, "GPUXidError", "gpu-node-31", "2"),
            (t("2026-11-22T02:00"), 48, "GPUXidError", "gpu-node-31", "2"),
        ],
        [(t("2026-11-20T06:00"), None, "GPURowRemapFailure", "gpu-node-36", "7")],
        [  # one board, seen at two places: its history follows its UUID
            (t("2026-11-05T04:00"), 79, "GPUFallenOffBus", "gpu-node-33", "6"),
            (t("2026-11-19T04:00"), 79, "GPUFallenOffBus", "gpu-node-34", "1"),
        ],
    ]


async def test_the_same_verdicts_as_the_api(db: Database, seeded: tuple[DigestRunner, DigestStats]) -> None:
    """What `GET /api/v1/gpus?rma=true` reads (`web.gpus.read_reports`): every GPU and its whole history,
    now. The digest's candidates are among them, by the same rule; the API has two more: GPU-once (its
    second Xid 48 came after the week) and GPU-old (nothing new in the week)."""
    _, stats = seeded
    async with db.read() as session:
        rows, events, _ = await gpu_store.read_gpus(session, limit=100, offset=0)
    api = {r.uuid: r.verdict.rule for row in rows if (r := report(row, events.get(row.uuid, []))).verdict.candidate}
    assert api == {
        "GPU-lemon": "dbe-repeated",
        "GPU-mover": "fallen-off-bus-repeated",
        "GPU-once": "dbe-repeated",
        "GPU-old": "dbe-repeated",
        "GPU-remap": "row-remap-failure",
    }
    assert {c.uuid: c.rule for c in stats.rma} == {k: v for k, v in api.items() if k not in ("GPU-once", "GPU-old")}


async def test_the_store_reads_the_history_the_rules_need(
    db: Database, seeded: tuple[DigestRunner, DigestStats]
) -> None:
    start, end = week_bounds(WEEK, zone("Asia/Shanghai"))
    async with db.read() as session:
        week = await read_week(session, start=start, end=end, gpus=gpu_match(DEFAULT_RULES))
    # GPUs with an event a rule names in the week (not GPU-old), their events from 30 days before it to its end
    assert {g.uuid: [(e.at, e.node, e.slot) for e in g.events] for g in week.gpus} == {
        "GPU-lemon": [(t("2026-11-11T02:00"), "gpu-node-31", "2"), (t("2026-11-22T02:00"), "gpu-node-31", "2")],
        "GPU-mover": [(t("2026-11-05T04:00"), "gpu-node-33", "6"), (t("2026-11-19T04:00"), "gpu-node-34", "1")],
        "GPU-once": [(t("2026-11-17T03:00"), "gpu-node-32", "0")],
        "GPU-remap": [(t("2026-11-20T06:00"), "gpu-node-36", "7")],
    }
    assert [(g.serial, g.model) for g in week.gpus] == [
        ("1650923004521", "NVIDIA H100 80GB HBM3"),  # GPU-lemon: its serial exported
        *[(None, "NVIDIA H100 80GB HBM3")] * 3,
    ]
    async with db.read() as session:  # without `gpus`, none: the other readers of the week are unchanged
        assert (await read_week(session, start=start, end=end)).gpus == []


async def test_the_section_in_english(seeded: tuple[DigestRunner, DigestStats]) -> None:
    runner, _ = seeded
    _, rendered = await runner.build(runner.targets["weekly-digest"], WEEK, language="en")
    lines = rendered.text.splitlines()
    first = lines.index("RMA CANDIDATES (by the RMA rules, with evidence this week)")
    # local times (Asia/Shanghai, +8 h), NVIDIA's meaning of each Xid, or the alert's name
    assert lines[first + 1 : first + 11] == [
        "  GPU-lemon (gpu-node-31 GPU 2): XID 48 twice in 11 days (rule dbe-repeated)",
        "    NVIDIA H100 80GB HBM3, serial 1650923004521",
        "    Wed 11 Nov 10:00  XID 48 Double Bit ECC Error on gpu-node-31 GPU 2",
        "    Sun 22 Nov 10:00  XID 48 Double Bit ECC Error on gpu-node-31 GPU 2",
        "  GPU-remap (gpu-node-36 GPU 7): GPURowRemapFailure once (rule row-remap-failure)",
        "    NVIDIA H100 80GB HBM3",
        "    Fri 20 Nov 14:00  GPURowRemapFailure on gpu-node-36 GPU 7",
        "  GPU-mover (gpu-node-34 GPU 1): XID 79 twice in 14 days (rule fallen-off-bus-repeated)",
        "    NVIDIA H100 80GB HBM3",
        "    Thu 05 Nov 12:00  XID 79 GPU has fallen off the bus on gpu-node-33 GPU 6",
    ]
    assert lines[first + 11] == "    Thu 19 Nov 12:00  XID 79 GPU has fallen off the bus on gpu-node-34 GPU 1"
    assert lines[first + 12].startswith("  RMA candidate: a GPU, by its UUID wherever it was seen, that one of the RMA")
    assert "Events after the week do not count." in lines[first + 12]
    html = rendered.html
    assert 'data-uuid="GPU-lemon" data-rule="dbe-repeated"' in html
    assert "(gpu-node-31 GPU 2): XID 48 twice in 11 days (rule dbe-repeated)" in html
    assert "Double Bit ECC Error, gpu-node-31 GPU 2" in html
    assert "GPU-once" not in html
    assert "GPU-old" not in html


async def test_the_section_in_chinese(seeded: tuple[DigestRunner, DigestStats]) -> None:
    runner, _ = seeded
    _, rendered = await runner.build(runner.targets["weekly-digest"], WEEK, language="zh-CN")
    lines = rendered.text.splitlines()
    first = lines.index("RMA 候选（按 RMA 规则判定，本周有证据）")
    assert lines[first + 1 : first + 4] == [
        "  GPU-lemon（gpu-node-31 GPU 2）：11 天内 XID 48 共 2 次（规则 dbe-repeated）",
        "    NVIDIA H100 80GB HBM3，序列号 1650923004521",
        "    11月11日 周三 10:00  XID 48 双比特 ECC 错误，gpu-node-31 GPU 2",
    ]
    assert "  GPU-remap（gpu-node-36 GPU 7）：GPURowRemapFailure 1 次（规则 row-remap-failure）" in lines
    assert "    11月20日 周五 14:00  GPURowRemapFailure，gpu-node-36 GPU 7" in lines
    assert "    11月5日 周四 12:00  XID 79 GPU 已从总线掉线，gpu-node-33 GPU 6" in lines
    assert "  GPU-mover（gpu-node-34 GPU 1）：14 天内 XID 79 共 2 次（规则 fallen-off-bus-repeated）" in lines
    assert any(line.startswith("  RMA 候选：按 UUID 识别的 GPU") and "本周之后的事件不计入" in line for line in lines)
    html = rendered.html
    assert "RMA 候选：按 RMA 规则判定，本周有证据" in html
    assert "（gpu-node-31 GPU 2）：11 天内 XID 48 共 2 次（规则 dbe-repeated）" in html
    assert "双比特 ECC 错误，gpu-node-31 GPU 2" in html

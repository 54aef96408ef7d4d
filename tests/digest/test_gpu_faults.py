"""The digest's GPU faults against a week seeded through the real ingest and engine (manual clock), on
SQLite and PostgreSQL: per node the mean time between GPU faults, and the RMA candidates the `rma:` rules
make of the GPUs' history (tests/digest/test_rma_section.py has more of those). Every expected number is
worked out by hand from the scenario below.

Week 2026-W47 in Asia/Shanghai: 2026-11-15T16:00Z to 2026-11-22T16:00Z, 168 hours.

gpu-node-07 (dcgm-exporter 4.x labels, shipped rules: `xid` and `err_code`):
  GPU 3  XID 79  Mon 11-16 02:00Z-03:00Z, again Thu 11-19 06:00Z-07:00Z   -> 2 faults; RMA: fallen-off-bus-repeated
  GPU 5  XID 13  Tue 11-17 02:00Z, again Wed 11-18 02:00Z                -> 2 faults, no RMA rule names 13
  GPU 1  XID 94  Fri 11-20 02:00Z (still firing at the end)              -> 1 fault: not repeated
  => 5 faults, GPUs 1, 3, 5, XIDs 13, 79, 94, MTBF 168 h / 5 = 33.6 h
gpu-node-09:
  GPU 0  XID 48  Mon 11-16 05:00Z, under two alert names at once (the shipped GPUXidError and a rule of
         one's own with only dcgm-exporter's `err_code`): one fault
  GPU 0  XID 63  Tue 11-17 05:00Z                                         -> no RMA rule names 63
         RMA: the two alerts of Xid 48 are one fault to the rules too (the same Xid starting at the same
         moment), so dbe-repeated (2 Xid 48 within 30 days) does not make it a candidate
  (GPU 0  XID 79  Tue 11-10, the week before: not counted)
  => 2 faults, GPU 0, XIDs 48, 63, MTBF 168 h / 2 = 84.0 h
gpu-node-11: GPUHighTemp (no XID) and an alert whose `xid` is garbage: no fault.
gpu-node-07 GPU 3 XID 79 again Mon 11-23 00:00Z: the next week, not counted.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from alertrouter.digest.send import DigestRunner, digest_targets
from alertrouter.digest.types import DigestStats
from alertrouter.render.templates import Templates
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.ruleset.schedule import zone
from alertrouter.store import Database
from support.digestweek import WeekDriver

REPO = Path(__file__).resolve().parents[2]
WEEK = "2026-W47"


def t(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def xid(node: str, gpu: int, code: str, alertname: str = "GPUXidError", **extra: str) -> dict[str, str]:
    labels = {
        "alertname": alertname,
        "Hostname": node,
        "node": node,
        "instance": f"10.0.0.{node[-2:]}:9400",
        "job": "nvidia-dcgm-exporter",
        "gpu": str(gpu),
        "UUID": f"GPU-{node}-{gpu}-4f1c",
        "device": f"nvidia{gpu}",
        "modelName": "NVIDIA H100 80GB HBM3",
        "severity": "critical",
        "err_code": code,
        "err_msg": "from dcgm-exporter",
        **extra,
    }
    return labels


N7_G3 = xid("gpu-node-07", 3, "79", "GPUFallenOffBus", xid="79")
N7_G5 = xid("gpu-node-07", 5, "13", xid="13")
N7_G1 = xid("gpu-node-07", 1, "94", xid="94")
N9_48 = xid("gpu-node-09", 0, "48", xid="48")
N9_48_OWN = xid("gpu-node-09", 0, "48", "DcgmXidSeen")  # no `xid` label: err_code only
N9_63 = xid("gpu-node-09", 0, "63", xid="63")
N9_79 = xid("gpu-node-09", 0, "79", "GPUFallenOffBus", xid="79")
HOT = {"alertname": "GPUHighTemp", "node": "gpu-node-11", "gpu": "2", "UUID": "GPU-n11-2", "severity": "warning"}
GARBAGE = xid("gpu-node-11", 4, "not-a-number", xid="<b>79</b>")


async def seed(db: Database) -> DigestRunner:
    ruleset = load_ruleset(REPO / "rules", {})
    pipeline = compile_rules(ruleset)
    week = WeekDriver(db, pipeline, t("2026-11-10T02:00"))

    async def fire(at: str, *labels: dict[str, str]) -> None:
        week.at(t(at))
        await week.fire(list(labels))
        await week.settle()

    async def resolve(at: str, *labels: dict[str, str]) -> None:
        week.at(t(at))
        await week.resolve(list(labels))
        await week.settle()

    await fire("2026-11-10T02:00", N9_79)  # the week before
    await resolve("2026-11-10T03:00", N9_79)
    await fire("2026-11-16T02:00", N7_G3)
    await resolve("2026-11-16T03:00", N7_G3)
    await fire("2026-11-16T05:00", N9_48, N9_48_OWN)
    await resolve("2026-11-16T05:10", N9_48, N9_48_OWN)
    await fire("2026-11-17T02:00", N7_G5)
    await resolve("2026-11-17T02:30", N7_G5)
    await fire("2026-11-17T05:00", N9_63)
    await resolve("2026-11-17T05:10", N9_63)
    await fire("2026-11-18T02:00", N7_G5)
    await resolve("2026-11-18T02:30", N7_G5)
    await fire("2026-11-18T08:00", HOT, GARBAGE)
    await resolve("2026-11-18T09:00", HOT, GARBAGE)
    await fire("2026-11-19T06:00", N7_G3)
    await resolve("2026-11-19T07:00", N7_G3)
    await fire("2026-11-20T02:00", N7_G1)
    await fire("2026-11-23T00:00", N7_G3)  # the next week
    return DigestRunner(
        db, ruleset, pipeline, templates=Templates(), holder="test", clock=lambda: t("2026-11-23T01:00")
    )


@pytest.fixture
async def seeded(db: Database) -> tuple[DigestRunner, DigestStats]:
    runner = await seed(db)
    (target,) = digest_targets(load_ruleset(REPO / "rules", {}))
    return runner, await runner.stats(target, WEEK, zone("Asia/Shanghai"))


async def test_mean_time_between_gpu_faults_per_node(seeded: tuple[DigestRunner, DigestStats]) -> None:
    _, stats = seeded
    assert [(n.node, n.faults, n.gpus, n.codes, n.mtbf) for n in stats.gpu_faults] == [
        ("gpu-node-07", 5, ["1", "3", "5"], [13, 79, 94], timedelta(hours=33, minutes=36)),
        ("gpu-node-09", 2, ["0"], [48, 63], timedelta(hours=84)),
    ]


async def test_rma_candidates_with_their_evidence(seeded: tuple[DigestRunner, DigestStats]) -> None:
    _, stats = seeded
    assert [(r.uuid, r.node, r.slot, r.rule) for r in stats.rma] == [
        ("GPU-gpu-node-07-3-4f1c", "gpu-node-07", "3", "fallen-off-bus-repeated"),
    ]
    assert [[(e.at, e.xid, e.alertname, e.node, e.slot) for e in r.evidence] for r in stats.rma] == [
        [  # not the Xid 79 of the next week: the rules judge the history as of the week's end
            (t("2026-11-16T02:00"), 79, "GPUFallenOffBus", "gpu-node-07", "3"),
            (t("2026-11-19T06:00"), 79, "GPUFallenOffBus", "gpu-node-07", "3"),
        ],
    ]


async def test_the_digest_shows_both_in_both_languages(seeded: tuple[DigestRunner, DigestStats]) -> None:
    runner, _ = seeded
    target = runner.targets["weekly-digest"]
    _, english = await runner.build(target, WEEK, language="en")
    text = english.text
    assert "gpu-node-07: 5 faults, GPU 1, 3, 5, XID 13, 79, 94, MTBF 33.6 h" in text
    assert "gpu-node-09: 2 faults, GPU 0, XID 48, 63, MTBF 84.0 h" in text
    assert "GPU-gpu-node-07-3-4f1c (gpu-node-07 GPU 3): XID 79 twice in 3 days (rule fallen-off-bus-repeated)" in text
    # local times (Asia/Shanghai, +8h) and NVIDIA's meaning of each code
    assert "Mon 16 Nov 10:00  XID 79 GPU has fallen off the bus on gpu-node-07 GPU 3" in text
    assert "Thu 19 Nov 14:00  XID 79 GPU has fallen off the bus on gpu-node-07 GPU 3" in text
    assert "GPU-gpu-node-09-0-4f1c" not in text  # one Xid 48 told by two rules is not a repeat
    assert "the period's 168 hours divided by the node's faults" in text
    assert "by the end of the week, as the GPU API and the command line judge it" in text
    assert 'id="rma"' in english.html
    assert "GPU has fallen off the bus" in english.html
    _, chinese = await runner.build(target, WEEK, language="zh-CN")
    assert "gpu-node-07：5 次故障，GPU 1, 3, 5，XID 13, 79, 94，平均故障间隔 33.6 小时" in chinese.text
    assert "XID 79 GPU 已从总线掉线，gpu-node-07 GPU 3" in chinese.text
    assert "RMA 候选（按 RMA 规则判定，本周有证据）" in chinese.text
    assert "3 天内 XID 79 共 2 次（规则 fallen-off-bus-repeated）" in chinese.text

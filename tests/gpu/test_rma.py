"""The RMA rules over a GPU's events: the shipped defaults (NVIDIA's guidance) as a table of histories."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from alertrouter.gpu.events import GpuEvent
from alertrouter.gpu.rma import DEFAULT_RULES, RmaRule, evaluate, relevant

T0 = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)


def xid(code: int, days: float, alertname: str = "GPUXidError") -> GpuEvent:
    return GpuEvent(alertname=alertname, at=T0 + timedelta(days=days), xid=code)


@pytest.mark.parametrize(
    ("events", "rule", "reason"),
    [
        ([xid(48, 0), xid(48, 11)], "dbe-repeated", "Xid 48 twice in 11 days (rule dbe-repeated)"),
        ([xid(48, 11), xid(48, 0)], "dbe-repeated", "Xid 48 twice in 11 days (rule dbe-repeated)"),  # any order
        ([xid(48, 0), xid(48, 29.9)], "dbe-repeated", "Xid 48 twice in 29 days (rule dbe-repeated)"),
        (
            [xid(48, 0), xid(48, 40), xid(48, 41), xid(48, 42)],
            "dbe-repeated",
            "Xid 48 3 times in 2 days (rule dbe-repeated)",  # the latest window's events
        ),
        ([xid(64, 3)], "row-remap-failure", "Xid 64 once (rule row-remap-failure)"),
        (
            [GpuEvent(alertname="GPURowRemapFailure", at=T0)],
            "row-remap-failure",
            "GPURowRemapFailure once (rule row-remap-failure)",
        ),
        (
            [xid(79, 0, "GPUFallenOffBus"), xid(79, 0.25, "GPUFallenOffBus")],
            "fallen-off-bus-repeated",
            "Xid 79 twice in 6 hours (rule fallen-off-bus-repeated)",
        ),
        (
            [GpuEvent(alertname="GPURetiredPagesDBELimit", at=T0)],
            "retired-pages-limit",
            "GPURetiredPagesDBELimit once (rule retired-pages-limit)",
        ),
        (
            [GpuEvent(alertname="GPUUncorrectableRemappedRows", at=T0 + timedelta(days=d)) for d in (0, 4)],
            "uncorrectable-remaps-repeated",
            "GPUUncorrectableRemappedRows twice in 4 days (rule uncorrectable-remaps-repeated)",
        ),
        (
            [xid(48, 0), xid(48, 1), xid(64, 2)],
            "dbe-repeated",  # the first rule met gives the evidence; every rule met is in the reason
            "Xid 48 twice in 1 day (rule dbe-repeated); Xid 64 once (rule row-remap-failure)",
        ),
    ],
)
def test_candidates(events: list[GpuEvent], rule: str, reason: str) -> None:
    verdict = evaluate(events)
    assert (verdict.candidate, verdict.rule, verdict.reason) == (True, rule, reason)
    assert verdict.evidence
    assert all(e in events for e in verdict.evidence)


@pytest.mark.parametrize(
    "events",
    [
        [],
        [xid(48, 0)],  # one DBE: a reset remaps the row
        [xid(48, 0), xid(48, 31)],  # further apart than the window
        [xid(79, 0, "GPUFallenOffBus")],
        [xid(13, d) for d in range(10)],  # application faults, however many
        [xid(31, 0), xid(43, 0), xid(45, 0)],
        [GpuEvent(alertname="GPUHighTemp", at=T0), GpuEvent(alertname="GPUHighTemp", at=T0)],
        [GpuEvent(alertname="GPUUncorrectableRemappedRows", at=T0)],  # one is repaired by the GPU
        [GpuEvent(alertname="GPURowRemapPending", at=T0)] * 3,  # a reset applies it
        [xid(48, 0), xid(48, 0, "DcgmXidSeen")],  # one fault, told by the shipped rule and a site's own
    ],
)
def test_not_candidates(events: list[GpuEvent]) -> None:
    verdict = evaluate(events)
    assert (verdict.candidate, verdict.rule, verdict.evidence, verdict.reason) == (False, None, (), "")


def test_evidence_of_the_rule() -> None:
    verdict = evaluate([xid(13, 0), xid(48, 1), xid(48, 12)])
    assert verdict.evidence == (xid(48, 1), xid(48, 12))
    assert verdict.window == timedelta(days=30)


def test_a_configured_rule_by_alertname_or_xid() -> None:
    rule = RmaRule("nvlink", 3, timedelta(days=7), xids=frozenset({74}), alertnames=frozenset({"GPUNVLinkDown"}))
    events = [xid(74, 0), GpuEvent(alertname="GPUNVLinkDown", at=T0 + timedelta(days=1)), xid(74, 2)]
    verdict = evaluate(events, [rule])
    assert (verdict.rule, verdict.reason) == ("nvlink", "Xid 74 / GPUNVLinkDown 3 times in 2 days (rule nvlink)")
    assert not evaluate(events[:2], [rule]).candidate
    assert not evaluate(events, []).candidate


def test_relevant_alertnames() -> None:
    assert relevant(DEFAULT_RULES) == {
        "GPURowRemapFailure",
        "GPUFallenOffBus",
        "GPURetiredPagesDBELimit",
        "GPURetiredPagesLimit",
        "GPUUncorrectableRemappedRows",
    }

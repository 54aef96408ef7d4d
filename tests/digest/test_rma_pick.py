"""Which GPUs the digest lists as RMA candidates (`digest.rma`): the `rma:` rules over each GPU's history as
of the week's end, listed when the evidence includes an event of the week. Pure: histories built here."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from alertrouter.digest.rma import gpu_match, rma_candidates
from alertrouter.digest.types import GpuEventFact, GpuHistory
from alertrouter.gpu.rma import DEFAULT_RULES, RmaRule

START, END = datetime(2026, 11, 15, 16, tzinfo=UTC), datetime(2026, 11, 22, 16, tzinfo=UTC)


def ev(day: int, xid: int | None = 48, alertname: str = "GPUXidError", node: str = "n1") -> GpuEventFact:
    return GpuEventFact(datetime(2026, 11, 1, 2, tzinfo=UTC) + timedelta(days=day - 1), xid, alertname, node, "0")


def history(uuid: str, *events: GpuEventFact) -> GpuHistory:
    return GpuHistory(uuid, None, None, events)


@pytest.mark.parametrize(
    ("events", "listed"),
    [
        ([ev(11), ev(22)], ("dbe-repeated", [11, 22])),  # one before the week, one in it
        ([ev(17)], None),  # once
        ([ev(17), ev(23)], None),  # the second is the next week's: not as of this week's end
        ([ev(2), ev(6)], None),  # a candidate, but nothing new this week
        ([ev(2), ev(6), ev(20)], ("dbe-repeated", [2, 6, 20])),  # failed again: its whole window
        ([ev(10), ev(19, xid=13)], None),  # Xid 13 is no rule's
        ([ev(2), ev(6), ev(19, xid=None, alertname="GPURowRemapFailure")], ("row-remap-failure", [19])),
        ([ev(10, xid=79, node="n1"), ev(18, xid=79, node="n2")], ("fallen-off-bus-repeated", [10, 18])),
    ],
    ids=["11 days", "once", "after the week", "old", "again", "other xid", "older hit of another rule", "moved"],
)
def test_listed_when_the_evidence_reaches_into_the_week(
    events: list[GpuEventFact], listed: tuple[str, list[int]] | None
) -> None:
    found = rma_candidates([history("GPU-a", *events)], DEFAULT_RULES, start=START, end=END)
    got = [(c.rule, [e.at.day for e in c.evidence]) for c in found]
    assert got == ([listed] if listed else [])


def test_a_moved_gpu_is_where_its_latest_evidence_was_seen() -> None:
    (found,) = rma_candidates(
        [history("GPU-a", ev(10, xid=79, node="n1"), ev(18, xid=79, node="n2"))], DEFAULT_RULES, start=START, end=END
    )
    assert (found.node, [e.node for e in found.evidence], found.xids, found.alertnames) == (
        "n2",
        ["n1", "n2"],
        (79,),
        (),
    )


def test_the_latest_evidence_first() -> None:
    gpus = [history(f"GPU-{i:03d}", ev(16), ev(16 + i % 6, node=f"n{i % 2}")) for i in range(12)]
    found = rma_candidates(gpus, DEFAULT_RULES, start=START, end=END)
    assert [(c.evidence[-1].at.day, c.node, c.uuid) for c in found[:3]] == [
        (21, "n1", "GPU-005"),
        (21, "n1", "GPU-011"),
        (20, "n0", "GPU-004"),
    ]


def test_the_rules_say_which_gpus_are_read() -> None:
    rules = (
        RmaRule("a", 2, timedelta(days=30), xids=frozenset({48})),
        RmaRule("b", 1, timedelta(days=45), alertnames=frozenset({"GPURowRemapFailure"})),
    )
    match = gpu_match(rules)
    assert (match.xids, match.alertnames, match.lookback) == (
        frozenset({48}),
        frozenset({"GPURowRemapFailure"}),
        timedelta(days=45),
    )
    assert rma_candidates([history("GPU-a", ev(11), ev(22))], (), start=START, end=END) == []  # rules: []

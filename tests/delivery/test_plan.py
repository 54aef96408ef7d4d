"""The delivery loop's pure decisions: kinds, backoff, batches under a budget."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from alertrouter.channels.base import MessageKind
from alertrouter.delivery.plan import Batch, backoff, message_kind, plan_batches
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.pipeline.aggregate import severity_rank


@pytest.mark.parametrize(
    ("snapshot", "kind"),
    [
        ({"status": "firing", "kind": "node", "reason": "first"}, MessageKind.FIRING),
        ({"status": "firing", "kind": "node", "reason": "grew"}, MessageKind.UPDATE),
        ({"status": "firing", "kind": "node", "reason": "repeat"}, MessageKind.UPDATE),
        ({"status": "resolved", "kind": "node", "reason": "resolved"}, MessageKind.RESOLVED),
        ({"status": "firing", "kind": "cluster", "reason": "first"}, MessageKind.CLUSTER),
        ({"status": "resolved", "kind": "cluster", "reason": "resolved"}, MessageKind.RESOLVED),
    ],
)
def test_message_kind(snapshot: dict[str, str], kind: MessageKind) -> None:
    assert message_kind(MessageSnapshot.from_json(snapshot)) is kind


def test_severity_rank_puts_unknown_last() -> None:
    order = ["critical", "warning", "info"]
    assert [severity_rank(s, order) for s in ("critical", "info", "page")] == [0, 2, 3]


def test_backoff_doubles_within_jitter_and_caps() -> None:
    rng = random.Random(7)
    initial, cap = timedelta(seconds=5), timedelta(minutes=5)
    for attempt in range(1, 12):
        wait = backoff(attempt, initial=initial, maximum=cap, rng=rng).total_seconds()
        full = min(300.0, 5.0 * 2 ** (attempt - 1))
        assert full / 2 <= wait <= full


def test_backoff_jitter_spreads_retries() -> None:
    rng = random.Random(1)
    waits = {backoff(3, initial=timedelta(seconds=5), maximum=timedelta(minutes=5), rng=rng) for _ in range(20)}
    assert len(waits) > 10


@pytest.mark.parametrize(
    ("pending", "budget", "after_block", "expected"),
    [
        ([], 20, False, []),
        ([1, 2, 3], 20, False, [Batch((1,)), Batch((2,)), Batch((3,))]),
        ([1, 2, 3], 3, False, [Batch((1,)), Batch((2,)), Batch((3,))]),
        ([1, 2, 3, 4], 3, False, [Batch((1, 2, 3, 4))]),  # short budget: one coalesced message
        ([1, 2, 3], 0, False, []),  # no budget left: wait for the window
        ([1, 2, 3], -2, False, []),
        ([1, 2], 20, True, [Batch((1, 2))]),  # just reopened after a block: the backlog in one
        ([5], 20, True, [Batch((5,))]),
        ([1, 2, 3], None, False, [Batch((1,)), Batch((2,)), Batch((3,))]),  # no limit (email)
    ],
)
def test_plan_batches(pending: list[int], budget: int | None, after_block: bool, expected: list[Batch]) -> None:
    assert plan_batches(pending, budget=budget, coalesce_backlog=after_block) == expected


@pytest.mark.parametrize(
    ("pending", "budget", "after_block", "alone", "expected"),
    [
        ([1, 2, 3], 20, False, {2}, [Batch((1,)), Batch((2,)), Batch((3,))]),  # fits: all alone anyway
        ([1, 2, 3, 4], 3, False, {2}, [Batch((1, 3, 4)), Batch((2,))]),  # never coalesced with the others
        ([1, 2, 3, 4], 2, False, {2, 3}, [Batch((1, 4)), Batch((2,))]),  # within the budget, the others first
        ([1, 2, 3, 4], 1, False, {1, 2, 3, 4}, [Batch((1,))]),  # worst first
        ([1, 2], 20, True, {1}, [Batch((2,)), Batch((1,))]),
    ],
)
def test_plan_batches_sends_failed_ones_alone(
    pending: list[int], budget: int, after_block: bool, alone: set[int], expected: list[Batch]
) -> None:
    assert plan_batches(pending, budget=budget, coalesce_backlog=after_block, alone=alone) == expected

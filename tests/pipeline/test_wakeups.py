"""`Wakeups`: one wake-up time per incident, the earliest found without a scan, outdated requests
recognised rather than searched for."""

from __future__ import annotations

from datetime import timedelta

from alertrouter.pipeline.wakeups import Wakeups
from support.scenario import T0

S = timedelta(seconds=1)


def test_due_gives_the_keys_whose_time_has_come_once() -> None:
    w = Wakeups()
    w.wake_at("gpu-node-07", T0 + 10 * S)
    w.wake_at("gpu-node-08", T0 + 30 * S)
    assert w.due(T0 + 9 * S) == (set(), False)
    assert w.due(T0 + 10 * S) == ({"gpu-node-07"}, False)  # at the time itself, not only after it
    assert w.due(T0 + 20 * S) == (set(), False)  # taken: not due again
    assert w.earliest() == T0 + 30 * S


def test_a_new_time_replaces_the_old_one_either_way() -> None:
    w = Wakeups()
    w.wake_at("gpu-node-07", T0 + 10 * S)
    w.wake_at("gpu-node-07", T0 + 60 * S)  # later: the group wait became a repeat interval
    assert w.earliest() == T0 + 60 * S
    assert w.due(T0 + 30 * S) == (set(), False)
    w.wake_at("gpu-node-07", T0 + 40 * S)  # sooner again
    assert w.due(T0 + 45 * S) == ({"gpu-node-07"}, False)
    assert w.earliest() is None  # the outdated request for +60 s is not a wake-up


def test_none_cancels_and_a_time_asked_for_again_counts() -> None:
    w = Wakeups()
    w.wake_at("gpu-node-07", T0 + 10 * S)
    w.wake_at("gpu-node-07", None)
    assert w.earliest() is None
    assert w.due(T0 + 10 * S) == (set(), False)
    w.wake_at("gpu-node-07", T0 + 10 * S)  # set, cleared, set again: in the heap twice, due once
    w.wake_at("gpu-node-07", None)
    w.wake_at("gpu-node-07", T0 + 10 * S)
    assert w.due(T0 + 10 * S) == ({"gpu-node-07"}, False)


def test_more_than_most_due_are_all_left_for_a_later_pass() -> None:
    w = Wakeups()
    for n in range(3):
        w.wake_at(f"gpu-node-{n:02d}", T0 + (n + 1) * S)
    assert w.due(T0 + 5 * S, most=2) == (set(), True)
    assert w.earliest() == T0 + 1 * S  # still asked for, at their own times
    assert w.due(T0 + 5 * S, most=3) == ({"gpu-node-00", "gpu-node-01", "gpu-node-02"}, False)
    assert w.earliest() is None

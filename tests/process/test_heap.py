"""The collector settings `serve` applies once started."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from alertrouter.process.heap import GEN0_THRESHOLD, settle_heap, time_collections


@pytest.fixture(autouse=True)
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def tracked(obj: object) -> bool:
    """In a generation the collector walks (frozen objects are in none of them)."""
    return any(o is obj for o in gc.get_objects())


def test_what_startup_built_leaves_the_collectors_view() -> None:
    built_at_startup = [["rules"]]
    assert tracked(built_at_startup)
    settle_heap()
    assert not tracked(built_at_startup)
    assert built_at_startup == [["rules"]]  # frozen, not freed
    assert gc.get_threshold()[0] == GEN0_THRESHOLD
    assert GEN0_THRESHOLD > 700  # CPython's default


def test_cycles_made_after_settling_are_still_collected() -> None:
    settle_heap()

    class Node:
        other: object

    a, b = Node(), Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    del a, b
    gc.collect()
    assert gone() is None


def test_each_collection_is_timed_under_its_generation() -> None:
    seen: list[tuple[int, float]] = []
    observe = [lambda s, g=g: seen.append((g, s)) for g in range(3)]
    callback = time_collections(observe)
    try:
        gc.collect(0)
        gc.collect(2)
    finally:
        gc.callbacks.remove(callback)
    assert [g for g, _ in seen] == [0, 2]
    assert all(0 <= s < 60 for _, s in seen)
    gc.collect(1)
    assert len(seen) == 2  # removed: no more observations

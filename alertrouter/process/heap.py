"""The cyclic garbage collector, set for a long-running server that keeps many objects alive."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["GEN0_THRESHOLD", "freeze_held", "settle_heap", "time_collections"]

GEN0_THRESHOLD = 10_000  # allocations between young collections (CPython's default: 700)


def settle_heap() -> None:
    """Once startup is done: move everything it built (modules, schemas, rules, compiled SQL) out of
    the collector's view, and collect young objects in larger, rarer batches.

    The engine holds every live alert and a storm allocates hundreds of thousands of small objects.
    With the defaults, a storm of new alerts triggered several full collections (seen with
    `gc.callbacks`), during which no webhook was answered; after this, far fewer and shorter ones
    (the figures are in tests/bench/results/history/). Nothing here stops garbage from being collected: frozen
    objects stay alive as long as they are referenced, and cycles among new objects are found as
    before.
    """
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GEN0_THRESHOLD, gen1, gen2)


def freeze_held() -> None:
    """After the engine's full pass, or one that found many more live alerts than the last time: move
    what the process holds then (every live alert, incident and decision, as the pass left them) out of
    the collector's view, as `settle_heap` did with startup's.

    With 100,000 live alerts that is 1.8 million objects, and each full collection walked all of
    them: 0.85 s during which nothing else ran, webhooks included. The engine's objects hold no
    reference cycles; they are freed when dropped, frozen or not. No collection first (it would be
    that 0.85 s): a cycle already unreachable at this moment stays in memory.
    """
    gc.freeze()


def time_collections(observe: Sequence[Callable[[float], None]]) -> Callable[[str, dict[str, Any]], None]:
    """Time each collection from now on: `observe[generation](seconds)` as it ends (`gc.callbacks`).
    Returns the callback, for `gc.callbacks.remove`. A collection runs in whichever thread allocated
    and holds the interpreter throughout, so one clock reading each side is its pause."""
    started = 0.0

    def callback(phase: str, info: dict[str, Any]) -> None:
        nonlocal started
        if phase == "start":
            started = time.perf_counter()
        else:
            observe[info["generation"]](time.perf_counter() - started)

    gc.callbacks.append(callback)
    return callback

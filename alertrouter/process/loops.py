"""Liveness of the background loops (engine, delivery, maintenance, scheduler): each reports its
completed passes and its failures here; `/readyz` and `/metrics` read it.

A loop never dies of an exception: it reports it with `failed` and carries on. The first occurrence
of a distinct error is logged with its traceback, repeats as one line with a count, so a failure that
recurs every second is visible without flooding the log. A loop that completes no pass for longer
than its allowance (a stuck transaction, a wedged vendor call) makes the process not ready.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from alertrouter.metrics import Metrics

__all__ = ["STALL_INTERVALS", "LoopHealth"]

log = logging.getLogger(__name__)

STALL_INTERVALS = 30  # a loop that completed no pass for this many of its intervals is stalled ...
STALL_FLOOR = 60.0  # ... and never sooner than this many seconds (a storm's pass may take seconds)
_DISTINCT_ERRORS = 256  # error signatures remembered per loop (for "logged once")


@dataclass(slots=True)
class _Loop:
    allowance: float
    last_pass: float
    errors: dict[str, int]


class LoopHealth:
    """What each registered loop last did; one per runtime."""

    def __init__(self, metrics: Metrics | None = None, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._metrics = metrics
        self._clock = clock
        self._loops: dict[str, _Loop] = {}

    def register(self, name: str, *, interval: float, intervals: int = STALL_INTERVALS) -> None:
        """Start watching `name`; it counts as having passed now (a loop that never passes is stalled
        after its allowance)."""
        allowance = max(STALL_FLOOR, interval * intervals)
        self._loops[name] = _Loop(allowance=allowance, last_pass=self._clock(), errors={})
        if self._metrics is not None:
            self._metrics.loop_errors.labels(loop=name)  # the series exists from the start, at 0
            self._metrics.loop_last_pass.labels(loop=name).set(time.time())

    def passed(self, name: str) -> None:
        loop = self._loops.get(name)
        if loop is not None:
            loop.last_pass = self._clock()
            loop.errors.clear()
        if self._metrics is not None:
            self._metrics.loop_last_pass.labels(loop=name).set(time.time())

    def failed(self, name: str, exc: BaseException, *, what: str = "pass") -> None:
        """Count and log an exception the loop survived: with its traceback the first time this error
        is seen since the loop last passed, as a line with a count after that."""
        if self._metrics is not None:
            self._metrics.loop_errors.labels(loop=name).inc()
        loop = self._loops.get(name)
        signature = f"{type(exc).__qualname__}: {exc}"[:500]
        seen = 0
        if loop is not None:
            seen = loop.errors.get(signature, 0)
            if seen or len(loop.errors) < _DISTINCT_ERRORS:
                loop.errors[signature] = seen + 1
        if seen == 0:
            log.error("%s %s failed, will retry: %s", name, what, signature, exc_info=exc)
        else:
            log.warning("%s %s failed again (%d times), will retry: %s", name, what, seen + 1, signature)

    def stalled(self) -> dict[str, float]:
        """Loops past their allowance, with the seconds since their last completed pass."""
        now = self._clock()
        out = {}
        for name, loop in self._loops.items():
            idle = now - loop.last_pass
            stalled = idle > loop.allowance
            if self._metrics is not None:
                self._metrics.loop_stalled.labels(loop=name).set(1 if stalled else 0)
            if stalled:
                out[name] = round(idle, 1)
        return out

"""A computing thread's courtesy to the event loop: it lets the interpreter go every few milliseconds.

CPython runs one thread's Python at a time. The engine evaluates a pass in a worker thread so that the
event loop keeps answering webhooks and pages meanwhile, but the event loop lets the interpreter go at
every wait (for the network, for the store's thread) and then waits to get it back; a thread that
computes without pause keeps it until CPython makes it let go, after the switch interval. A console
page or a webhook makes a dozen such trips, the store's thread one per row it reads, so during a
storm's pass each trip waited a whole switch interval, and pages and small webhooks queued behind the
pass (`tests/bench/bench_convoy.py` measures it; its runs are in tests/bench/results/history/).

A shorter switch interval was tried and hands the computing thread more of the interpreter, not the
loop. This is the other way round: only the computing thread gives the interpreter up, by a short
sleep every `every` seconds of its work, which lets any thread waiting for it run at once. When
another thread has work, it runs until it waits again or its own switch interval ends; when none
has, the pause costs only the sleep and its timer slack.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["Courtesy"]

EVERY = 0.002  # seconds of work between pauses: a waiting thread waits at most about this long
PAUSE = 0.00001  # seconds asked of the sleep (the kernel's timer slack, 0.05 ms by default, comes on top)
REST = 0.05  # no call for this long after a pause was due: the thread rested, and starts afresh


class Courtesy:
    """Call it often from a computing thread's loops (each call is a clock read); every `every` seconds
    it sleeps `pause`, so that a thread waiting for the interpreter takes it. The first call after a
    rest (a new pass: the thread has only just taken the interpreter from an idle event loop) does not
    pause but starts the period. Not for the event loop's own thread, which must never sleep. One per
    computing thread: it keeps that thread's clock."""

    def __init__(
        self,
        every: float = EVERY,
        pause: float = PAUSE,
        *,
        clock: Callable[[], float] = time.perf_counter,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._every = every
        self._pause = pause
        self._clock = clock
        self._sleep = sleep
        self._due = 0.0  # when the next pause is due (long past: the first call starts the period)
        self.pauses = 0  # how many times it let the interpreter go

    def __call__(self) -> None:
        now = self._clock()
        if now < self._due:
            return
        if now > self._due + REST:
            self._due = now + self._every
            return
        self._sleep(self._pause)
        self.pauses += 1
        self._due = self._clock() + self._every

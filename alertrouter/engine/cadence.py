"""When the engine's next pass may start: at once for a newly firing alert, at the tick for the rest.

A pass decides what was stored since the last one. Most stored changes (a resolve, new annotations, an
acknowledgement) lose nothing by waiting for the next tick (`interval`, 1 s), and during a burst of
webhooks one pass then covers many of them. A newly firing alert is what someone waits for: its pass
may start `min_gap` after the previous one started, and, inside a burst, no sooner after the previous
one ended than that pass took, so back-to-back passes never take more than half of the interpreter
from ingest (a commit that came alone has no burst behind it to leave the interpreter to). So
may the pass right behind one that left the wake-ups that had come (`due`): a newly firing alert's
pass leaves them when they are many (a storm's hold-downs ending together), and they are no less due.

Whether the pass also waits for a pause in ingest (`after_ingest_burst`) depends on
`lone`: a commit that came after a quiet spell is not part of a burst and is decided at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from alertrouter.model import AlertStatus

__all__ = ["INGEST_QUIET", "Cadence", "after_ingest_burst", "firing", "hold_back"]

INGEST_QUIET = 0.05  # seconds without a webhook being stored before a due pass starts ...
INGEST_WAIT_MAX = 3.0  # ... waiting at most this long for it
LONE_POLL = 0.001  # a lone commit's pass waits for its own payload's answer, looking this often


def firing(rows: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any of these newly stored alert rows is firing (a new alert can arrive resolved)."""
    return any(row["status"] == AlertStatus.FIRING.value for row in rows)


class Cadence:
    """The timings of passes and commits, on `clock` (seconds, monotonic), and what they make due."""

    def __init__(
        self,
        *,
        interval: float,
        min_gap: float,
        quiet: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval = interval
        self.min_gap = min_gap
        self.quiet = quiet  # commits closer than this to the previous one are a burst
        self._clock = clock
        self.urgent = False  # a newly firing alert was stored since the last pass started
        self.due = False  # the last pass left wake-ups that had come (a newly firing alert's went first)
        self.firing_commits = 0  # commits that stored a newly firing alert, so far
        self.lone = False  # the last commit came `quiet` or more after the one before it
        self._last_commit = -math.inf
        self._started = -math.inf
        self._ended = -math.inf

    def committed(self, *, new_firing: bool) -> None:
        """Ingest committed a change (`new_firing`: with a newly firing alert)."""
        now = self._clock()
        self.lone = now - self._last_commit >= self.quiet
        self._last_commit = now
        self.urgent = self.urgent or new_firing
        self.firing_commits += new_firing

    def next_start(self) -> float:
        """The earliest time the next pass may start, by what is pending."""
        if self.urgent or self.due:
            # After a pass of T, as long again for ingest; unless the last commit came alone: no burst
            # is waiting for the interpreter, and a newly firing alert would wait for nothing.
            took = 0.0 if self.urgent and self.lone else max(0.0, self._ended - self._started)
            return max(self._started + self.min_gap, self._ended + took)
        return self._started + self.interval

    def wait(self) -> float:
        """Seconds until the next pass may start (0 if it may start now)."""
        return max(0.0, self.next_start() - self._clock())

    def start(self) -> bool:
        """A pass starts: it takes what is pending. Returns whether that was urgent."""
        urgent = self.urgent
        self.urgent = self.due = False
        self._started = self._clock()
        self._ended = max(self._ended, self._started)  # until it ends, it is as if it just had
        return urgent

    def end(self) -> None:
        self._ended = self._clock()


async def hold_back(cadence: Cadence, nudged: asyncio.Event, *, stopping: Callable[[], bool]) -> None:
    """Until the cadence lets the next pass start; a newly firing alert stored meanwhile (`nudged`) may
    bring that moment forward."""
    while not stopping() and (wait := cadence.wait()) > 0:
        nudged.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(nudged.wait(), wait)


async def after_ingest_burst(
    cadence: Cadence, ingest_quiet: Callable[[], float], *, stopping: Callable[[], bool]
) -> None:
    """While webhooks are being stored (`ingest_quiet`: seconds since the last answer, 0 while one is
    being stored), wait for a pause (at most INGEST_WAIT_MAX) before a pass.

    A pass over a storm is hundreds of milliseconds of Python, and it shares the interpreter lock
    with the ingest: run in the middle of a burst, it held every webhook answer back for as long
    as it ran. An answer is what Alertmanager waits for (and retries on timeout), while a decision
    made a moment later loses nothing; and a storm evaluated whole is summarised whole.

    A lone commit of a newly firing alert after a quiet spell is no burst: its pass waits only
    until no payload is being stored (its own answer), for at most INGEST_QUIET, and then as above.
    Should another commit land meanwhile, right behind it, the lone commit was the first of a
    burst after all: its pass waits for the pause like the rest (started at the first payload, it
    took the burst's interpreter for as long as it ran over what had been stored by then).
    """
    if cadence.urgent and cadence.lone:
        for _ in range(round(INGEST_QUIET / LONE_POLL)):
            if stopping():
                return
            if not cadence.lone:  # a commit right behind it
                break
            if ingest_quiet() > 0.0:
                return
            await asyncio.sleep(LONE_POLL)
    deadline = time.monotonic() + INGEST_WAIT_MAX
    while not stopping() and (quiet := ingest_quiet()) < INGEST_QUIET:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        await asyncio.sleep(min(left, INGEST_QUIET - quiet))

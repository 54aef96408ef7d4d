"""What every cluster-in-a-box test module shares: its pytest marks, and its scenario run on a box of its own.

A test module names its scenario `SCENARIO = Scenario(box=..., run=...)` and takes the outcome in a module
fixture from `boxes.outcome(SCENARIO)`. The session's `boxes` (tests/cluster/conftest.py) starts the
scenarios of every selected module together, at most `AT_ONCE` boxes at a time, the first time one is asked
for: a scenario's timeline is mostly waiting (group_wait, hold_down, lease expiry, Prometheus' `for:` and
scrape ticks, all real time), so scenarios that run side by side cost little more than the longest of them,
where one after another they cost the sum. Each still has its own box (processes, ports, database, fleet,
fakes): scenarios never see each other, and a box stays up until its module's tests are done with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import pytest

from cluster.box import PROMETHEUS, ClusterBox
from support import pg
from support.need import need
from support.procs import ALERTMANAGER

__all__ = ["AT_ONCE", "MARKS", "Boxes", "Scenario", "need_the_chain"]

T = TypeVar("T")

# Boxes running at once. Each box is five processes and mostly idle; more at once on a 2-core machine would
# stretch the scrape and evaluation ticks the timelines poll for.
AT_ONCE = 4

MARKS = [
    pytest.mark.e2e,
    pytest.mark.alertmanager,
    pytest.mark.postgres,
    # the SMTP fake takes AUTH after STARTTLS; aiosmtpd warns about its own settings regardless
    pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS:UserWarning"),
]


@dataclass(frozen=True, eq=False)
class Scenario(Generic[T]):
    """One timeline and the box it runs on: `box()` builds the box (no process started yet), `run` drives
    the timeline on the started box and returns what the module's tests assert on."""

    box: Callable[[], ClusterBox]
    run: Callable[[ClusterBox], T]


class _Job(Generic[T]):
    """One scenario on its box, in a thread of its own that holds one of the `slots` while the box starts
    and the timeline runs. Boxes start one at a time (`starting`): a start is the CPU-heavy part (two
    `alertrouter serve` importing and migrating), and starts side by side on two cores outlast the replicas'
    readiness wait. The box is stopped by `close`: after the module's tests, when the scenario fails, or at
    the session's end (a box still starting stops once started)."""

    def __init__(self, scenario: Scenario[T], slots: threading.Semaphore, starting: threading.Lock) -> None:
        self.scenario = scenario
        self.outcome: Future[T] = Future()
        self.tails = ""  # every process's log tail, when the scenario failed
        self._slots = slots
        self._starting = starting
        self._lock = threading.Lock()
        self._box: ClusterBox | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="cluster-box", daemon=False)
        self._thread.start()

    def _run(self) -> None:
        with self._slots:
            if self._closed or not self.outcome.set_running_or_notify_cancel():
                return
            try:
                box = self.scenario.box()
                with self._starting:
                    box.__enter__()
                with self._lock:
                    self._box = box
                    closed = self._closed
                if closed:
                    raise RuntimeError("the session ended before the scenario ran")
                self.outcome.set_result(self.scenario.run(box))
            except BaseException as exc:  # pytest.fail and skip are BaseExceptions: the module fixture raises any
                with self._lock:
                    started = self._box
                self.tails = started.log_tails() if started is not None else ""
                self.close()
                self.outcome.set_exception(exc)

    def close(self) -> None:
        """Stop the box (every process, the database dropped); again is a no-op."""
        with self._lock:
            self._closed = True
            box, self._box = self._box, None
        if box is not None:
            box.__exit__(None, None, None)
        self.outcome.cancel()  # not started yet: never will

    def join(self) -> None:
        self._thread.join()


def need_the_chain() -> None:
    """Skip (fail under CI) unless Prometheus, Alertmanager and PostgreSQL are there."""
    need(PROMETHEUS is not None, "prometheus is not installed (run: bash .ci/setup)")
    need(ALERTMANAGER is not None, "prometheus-alertmanager is not installed (run: bash .ci/setup)")
    problem = pg.available()
    need(problem is None, problem or "")


class Boxes:
    """The session's scenarios, started together; `outcome` hands one to its module."""

    def __init__(self, at_once: int = AT_ONCE) -> None:
        self._slots = threading.Semaphore(at_once)
        self._starting = threading.Lock()
        self._jobs: dict[Scenario[Any], _Job[Any]] = {}

    def start(self, scenarios: Iterable[Scenario[Any]]) -> None:
        """Start each scenario not started yet, in the order given (the order their modules run in)."""
        for scenario in scenarios:
            if scenario not in self._jobs:
                self._jobs[scenario] = _Job(scenario, self._slots, self._starting)

    @contextmanager
    def outcome(self, scenario: Scenario[T]) -> Iterator[T]:
        """`scenario`'s outcome, its box running until the block ends; a failed scenario's exception is raised
        here, with every process's log tail printed (pytest shows it with the failure). The caller has
        checked `need_the_chain()` (the session's `boxes` fixture does)."""
        self.start([scenario])
        job: _Job[T] = self._jobs[scenario]
        try:
            try:
                found = job.outcome.result()
            except BaseException:
                print(job.tails)
                raise
            yield found
        finally:
            job.close()

    def close(self) -> None:
        """Stop every box still up and let no queued scenario start, then wait for every thread: a scenario
        running on a box stopped under it fails at its next look, and a box that finished starting meanwhile
        is stopped by its own thread."""
        for job in self._jobs.values():
            job.close()
        for job in self._jobs.values():
            job.join()

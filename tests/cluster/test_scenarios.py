"""How the session runs its scenario modules (scenarios.py): together, never more than `at_once` boxes at a
time, each box up until its module is done, a failed scenario raised with the log tails. Stand-in boxes that
start no process: what is checked is the order of starts, runs and stops."""

from __future__ import annotations

import threading
import time

import pytest

from cluster.box import ClusterBox
from cluster.scenarios import Boxes, Scenario

WAIT = 30.0  # a bounded wait for another thread, never a timing assertion


class StandIn(ClusterBox):
    """A box whose start and stop are recorded in `events` instead of starting processes."""

    def __init__(self, name: str, events: list[str]) -> None:
        super().__init__(nodes=1)
        self.name, self.events = name, events

    def _start(self) -> None:
        self.events.append(f"start {self.name}")
        self._stack.callback(self.events.append, f"stop {self.name}")

    def log_tails(self, chars: int = 4000) -> str:
        return f"----- {self.name}'s log tail -----"


def test_scenarios_run_side_by_side() -> None:
    """Two scenarios that each wait for the other: they finish only if both run at once."""
    both = threading.Barrier(2, timeout=WAIT)
    events: list[str] = []

    def meet(box: ClusterBox) -> int:
        return both.wait()

    first = Scenario(box=lambda: StandIn("first", events), run=meet)
    second = Scenario(box=lambda: StandIn("second", events), run=meet)
    boxes = Boxes(at_once=2)
    boxes.start([first, second])
    try:
        with boxes.outcome(first) as a, boxes.outcome(second) as b:
            assert {a, b} == {0, 1}
    finally:
        boxes.close()
    assert sorted(events) == ["start first", "start second", "stop first", "stop second"]


def test_no_more_scenarios_at_once_than_allowed_and_each_box_up_until_its_module_is_done() -> None:
    events: list[str] = []

    def run(box: ClusterBox) -> str:
        assert isinstance(box, StandIn)
        events.append(f"ran {box.name}")
        return box.name

    scenarios = [Scenario(box=lambda n=n: StandIn(n, events), run=run) for n in ("a", "b", "c")]  # type: ignore[misc]
    boxes = Boxes(at_once=1)
    boxes.start(scenarios)
    try:
        for scenario, name in zip(scenarios, ("a", "b", "c"), strict=True):
            with boxes.outcome(scenario) as found:
                assert found == name
                assert f"stop {name}" not in events  # its box up while its module's tests read it
            assert f"stop {name}" in events
    finally:
        boxes.close()
    # one at a time: a box starts once the scenario before it has run
    started_and_ran = [e for e in events if not e.startswith("stop")]
    assert started_and_ran == ["start a", "ran a", "start b", "ran b", "start c", "ran c"]


def test_a_failed_scenario_is_raised_to_its_module_with_the_log_tails_and_its_box_stopped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    events: list[str] = []

    def fails(box: ClusterBox) -> None:
        raise AssertionError("gave up after 120s waiting for every expected message at the fakes")

    broken = Scenario(box=lambda: StandIn("broken", events), run=fails)
    boxes = Boxes()
    try:
        with pytest.raises(AssertionError, match="every expected message at the fakes"), boxes.outcome(broken):
            pass
    finally:
        boxes.close()
    assert "----- broken's log tail -----" in capsys.readouterr().out
    assert events == ["start broken", "stop broken"]


def test_the_session_end_stops_every_box_and_starts_no_queued_one() -> None:
    events: list[str] = []
    running = threading.Event()

    def until_stopped(box: ClusterBox) -> None:
        """A scenario still waiting on its box when the session ends: its next look fails."""
        running.set()
        for _ in range(int(WAIT / 0.05)):
            if "stop first" in events:
                raise RuntimeError("connection refused")
            time.sleep(0.05)

    first = Scenario(box=lambda: StandIn("first", events), run=until_stopped)
    queued = Scenario(box=lambda: StandIn("queued", events), run=until_stopped)
    boxes = Boxes(at_once=1)
    boxes.start([first, queued])
    assert running.wait(WAIT)
    boxes.close()  # returns once every thread has ended
    assert events == ["start first", "stop first"]

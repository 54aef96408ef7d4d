"""LoopHealth: failures counted and logged once with a traceback, stalled loops named."""

from __future__ import annotations

import logging

import pytest

from alertrouter.metrics import Metrics
from alertrouter.process.loops import STALL_FLOOR, LoopHealth


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def sample(metrics: Metrics, name: str, loop: str) -> float | None:
    return metrics.registry.get_sample_value(name, {"loop": loop})


def test_a_loop_that_keeps_passing_is_never_stalled() -> None:
    clock, metrics = Clock(), Metrics()
    health = LoopHealth(metrics, clock=clock)
    health.register("engine", interval=1.0)
    for _ in range(10):
        clock.now += STALL_FLOOR / 2
        health.passed("engine")
        assert health.stalled() == {}
    assert sample(metrics, "alertrouter_loop_stalled", "engine") == 0


def test_a_loop_without_a_pass_past_its_allowance_is_stalled() -> None:
    clock, metrics = Clock(), Metrics()
    health = LoopHealth(metrics, clock=clock)
    health.register("engine", interval=1.0)
    health.register("maintenance", interval=5.0)  # allowance 150 s, above the floor
    clock.now += STALL_FLOOR + 1
    assert health.stalled() == {"engine": STALL_FLOOR + 1}
    assert sample(metrics, "alertrouter_loop_stalled", "engine") == 1
    assert sample(metrics, "alertrouter_loop_stalled", "maintenance") == 0
    clock.now += 100
    assert set(health.stalled()) == {"engine", "maintenance"}
    health.passed("engine")
    assert set(health.stalled()) == {"maintenance"}


def test_errors_are_counted_and_logged_with_traceback_once_per_distinct_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics = Metrics()
    health = LoopHealth(metrics, clock=Clock())
    health.register("delivery", interval=1.0)
    assert sample(metrics, "alertrouter_loop_errors_total", "delivery") == 0
    caplog.set_level(logging.WARNING, logger="alertrouter.process.loops")
    for _ in range(3):
        try:
            int("²")
        except ValueError as exc:
            health.failed("delivery", exc)
    health.failed("delivery", KeyError("x"))
    assert sample(metrics, "alertrouter_loop_errors_total", "delivery") == 4
    with_traceback = [r for r in caplog.records if r.exc_info]
    assert [r.exc_info[0] for r in with_traceback if r.exc_info] == [ValueError, KeyError]
    assert any("failed again (3 times)" in r.getMessage() for r in caplog.records)
    # After a good pass the same error is news again: it gets its traceback.
    health.passed("delivery")
    caplog.clear()
    health.failed("delivery", ValueError("invalid literal for int() with base 10: '²'"))
    assert [r.exc_info is not None for r in caplog.records] == [True]

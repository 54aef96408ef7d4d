"""When engine passes run: at once for a newly firing alert, at the tick for other changes, after the
pause in a burst. The rule on a clock the test sets; the loop by counting its passes (no timings)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

import pytest

import alertrouter.engine.cadence as cadence_module
from alertrouter.engine.cadence import INGEST_QUIET, Cadence, firing
from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.pipeline.types import Decision
from alertrouter.store import Database
from alertrouter.store.tables import AlertRow
from support.passes import Clock, Passes, rows
from support.scenario import dcgm_labels, node_exporter_down_labels, shipped_pipeline
from support.webhooks import Status, webhook

HOUR = timedelta(hours=1)


class Monotonic:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def cadence(clock: Monotonic) -> Cadence:
    return Cadence(interval=1.0, min_gap=0.05, quiet=INGEST_QUIET, clock=clock)


def after_pass(clock: Monotonic, took: float) -> Cadence:
    """A cadence whose last pass started at 1000.0 and took `took` seconds; the clock at its end."""
    c = cadence(clock)
    c.start()
    clock.now += took
    c.end()
    return c


def test_the_first_pass_may_start_at_once() -> None:
    clock = Monotonic()
    c = cadence(clock)
    assert c.wait() == 0.0
    c.committed(new_firing=True)
    assert c.wait() == 0.0


@pytest.mark.parametrize(
    ("took", "new_firing", "burst", "next_start"),
    [
        # another change (a resolve, new annotations): at the tick, `interval` after the last start
        (0.01, False, False, 1001.0),
        (0.3, False, True, 1001.0),
        # a newly firing alert: `min_gap` after the last start ...
        (0.01, True, False, 1000.05),
        (0.01, True, True, 1000.05),
        # ... and inside a burst, after a pass that took longer, no sooner after its end than it took
        (0.3, True, True, 1000.6),
        # ... but one that came alone (nothing waits for the interpreter) at once after that pass
        (0.3, True, False, 1000.3),
    ],
)
def test_a_newly_firing_alert_makes_the_next_pass_due_sooner(
    took: float, new_firing: bool, burst: bool, next_start: float
) -> None:
    clock = Monotonic()
    c = after_pass(clock, took)
    if burst:  # a webhook stored right before this one
        c.committed(new_firing=False)
        clock.now += INGEST_QUIET / 5
    c.committed(new_firing=new_firing)
    assert c.lone is not burst
    assert c.next_start() == pytest.approx(next_start)


def test_a_pass_takes_the_urgency_and_a_commit_during_it_brings_it_back() -> None:
    clock = Monotonic()
    c = cadence(clock)
    c.committed(new_firing=True)
    assert c.start() is True
    c.committed(new_firing=True)  # stored while the pass runs: it may have read it or not
    clock.now += 0.01
    c.end()
    assert c.urgent
    assert c.start() is True
    assert c.start() is False


def test_a_pass_that_left_wake_ups_that_had_come_lets_the_next_start_as_a_newly_firing_alerts_would() -> None:
    clock = Monotonic()
    c = after_pass(clock, 0.02)
    c.due = True
    assert c.next_start() == pytest.approx(1000.05)  # not the tick's 1001.0
    assert c.start() is False  # not urgent: the pass behind takes every wake-up, however many
    assert not c.due
    clock.now += 0.01
    c.end()
    assert c.next_start() == pytest.approx(1001.02)  # the tick again: `interval` after that start
    longer = after_pass(Monotonic(), 0.3)
    longer.due = True
    assert longer.next_start() == pytest.approx(1000.6)  # after a longer pass, as long again for ingest


def test_a_commit_is_lone_after_a_quiet_spell_and_not_inside_a_burst() -> None:
    clock = Monotonic()
    c = cadence(clock)
    c.committed(new_firing=True)
    assert c.lone  # the first commit ever
    clock.now += INGEST_QUIET / 5
    c.committed(new_firing=False)
    assert not c.lone  # a second webhook right behind it: a burst
    assert c.urgent  # still owed its pass
    clock.now += 2 * INGEST_QUIET
    c.committed(new_firing=True)
    assert c.lone


def test_only_firing_rows_are_urgent() -> None:
    assert firing([{"status": "firing"}, {"status": "resolved"}])
    assert not firing([{"status": "resolved"}])  # an alert first seen already resolved
    assert not firing([])  # a change to alerts already stored


# -- the loop --------------------------------------------------------------------------------------


def gpu_webhook(host: str, status: Status = "firing") -> bytes:
    return webhook([dcgm_labels("10.0.3.17", host, 0, alertname="GPUXidError")], status=status)


async def test_a_newly_firing_alert_is_decided_without_waiting_for_the_tick(db: Database) -> None:
    runner = EngineRunner(db, shipped_pipeline(), interval=HOUR)
    ingestor = Ingestor(db, TouchBuffer(), on_committed=runner.committed)
    runner.ingest_quiet = ingestor.quiet_for
    passes = Passes(runner)
    runner.start()
    try:
        await ingestor.ingest(parse_webhook(gpu_webhook("gpu-node-01")).batch)
        await passes.wait(1)
        # the next tick is an hour away; a second newly firing alert does not wait for it
        await ingestor.ingest(parse_webhook(webhook([node_exporter_down_labels("10.0.3.18")])).batch)
        await passes.wait(2)
    finally:
        await runner.stop()
    assert len(runner.live_alerts()) == 2


async def test_a_lone_new_alert_does_not_wait_for_ingest_to_stay_quiet(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cadence_module, "INGEST_WAIT_MAX", HOUR.total_seconds())
    runner = EngineRunner(db, shipped_pipeline(), interval=HOUR)
    ingestor = Ingestor(db, TouchBuffer(), on_committed=runner.committed)
    # ingest always answered a moment ago: a pass owed to anything else waits for it to stay quiet
    runner.ingest_quiet = lambda: INGEST_QUIET / 10
    passes = Passes(runner)
    runner.start()
    try:
        await ingestor.ingest(parse_webhook(gpu_webhook("gpu-node-01")).batch)
        await passes.wait(1)
    finally:
        await runner.stop()


async def two_commits(db: Database, interval: timedelta) -> tuple[EngineRunner, list[Sequence[Mapping[str, Any]]]]:
    """An engine, and the rows of two commits of newly firing GPU alerts, stored but not handed to it."""
    runner = EngineRunner(db, shipped_pipeline(), interval=interval)
    stored: list[Sequence[Mapping[str, Any]]] = []
    ingestor = Ingestor(db, TouchBuffer(), on_committed=stored.append)
    await ingestor.ingest(parse_webhook(gpu_webhook("gpu-node-01")).batch)
    await ingestor.ingest(parse_webhook(gpu_webhook("gpu-node-02")).batch)
    return runner, stored


async def first_pass_after_a_pause(
    runner: EngineRunner, answers: Callable[[], float], commit: Callable[[], None]
) -> bool:
    """Run `runner` with ingest answering `answers` when asked how long it has been quiet, `commit` the
    changes, and say whether its first pass started only once ingest had paused."""
    paused = False

    def quiet() -> float:
        nonlocal paused
        answer = answers()
        paused = paused or answer >= INGEST_QUIET
        return answer

    runner.ingest_quiet = quiet
    passes = Passes(runner, note=lambda: paused)
    runner.start()
    try:
        commit()
        await passes.wait(1)
    finally:
        await runner.stop()
    return bool(passes.notes[0])


async def test_new_alerts_in_a_burst_still_wait_for_its_pause(db: Database) -> None:
    runner, stored = await two_commits(db, timedelta(milliseconds=10))
    # ingest storing for four looks, then answered a moment ago for three (enough for a lone alert's
    # pass, not for a burst's), then quiet
    answers = iter([0.0] * 4 + [INGEST_QUIET / 10] * 3)

    def burst() -> None:  # two commits with new firing alerts right behind each other, not a lone alert
        runner.committed(stored[0])
        runner.committed(stored[1])

    assert await first_pass_after_a_pause(runner, lambda: next(answers, 1.0), burst)
    assert len(runner.live_alerts()) == 2


async def test_a_commit_right_behind_a_lone_one_makes_it_the_first_of_a_burst(db: Database) -> None:
    """Four senders start a storm: the first commit came after a quiet spell, the next lands while its
    pass waits for the first answer. That pass waits for the burst's pause (begun at once, it ran over
    the burst's first hundreds of alerts while every answer waited for it)."""
    runner, stored = await two_commits(db, HOUR)
    looks = 0

    def answers() -> float:
        # the first payload being stored for two looks, the second commit landing meanwhile; then
        # answered a moment ago for four looks (enough for a lone alert's pass, not for a burst's); quiet
        nonlocal looks
        looks += 1
        if looks == 2:
            runner.committed(stored[1])
        return 0.0 if looks <= 2 else INGEST_QUIET / 10 if looks <= 6 else 1.0

    assert await first_pass_after_a_pause(runner, answers, lambda: runner.committed(stored[0]))
    assert looks > 2  # the lone wait looked while the first payload was stored
    assert len(runner.live_alerts()) == 2


async def test_other_changes_are_decided_at_the_tick(db: Database) -> None:
    # a resolve commits, but is no newly firing alert: the cadence holds its pass back to the tick
    runner = EngineRunner(db, shipped_pipeline(), interval=HOUR)
    ingestor = Ingestor(db, TouchBuffer(), on_committed=runner.committed)
    runner.ingest_quiet = ingestor.quiet_for
    passes = Passes(runner)
    runner.start()
    try:
        await ingestor.ingest(parse_webhook(gpu_webhook("gpu-node-01")).batch)
        await passes.wait(1)
        await ingestor.ingest(parse_webhook(gpu_webhook("gpu-node-01", status="resolved")).batch)
        assert not runner._cadence.urgent
        assert runner._cadence.wait() > HOUR.total_seconds() / 2
    finally:
        await runner.stop()
    assert passes.count == 1


async def test_a_newly_firing_alerts_pass_leaves_many_ended_hold_downs_to_the_pass_behind_it(db: Database) -> None:
    """Hot GPUs on three nodes wait out the node-down hold-down (30 s); when it ends, a newly firing
    alert's pass (the runner's `urgent_due_max` set to 1) decides that alert and leaves the three
    incidents' wake-ups; the next pass takes them even though it is a newly firing alert's too."""
    clock = Clock()
    runner = EngineRunner(db, shipped_pipeline(), clock=clock, holder="h", urgent_due_max=1)
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    hot = [
        dcgm_labels(f"10.0.5.{n + 10}", f"gpu-node-{n:02d}", g, alertname="GPUHighTemp", severity="warning")
        for n in range(3)
        for g in range(2)
    ]
    await ingestor.ingest(parse_webhook(webhook(hot)).batch)
    await runner.run_once()

    async def decisions() -> dict[str, str | None]:
        return {
            row.labels["alertname"] + row.labels.get("Hostname", "") + row.labels.get("gpu", ""): row.decision
            for row in await rows(db, AlertRow)
        }

    assert set((await decisions()).values()) == {Decision.HELD.value}
    clock.now += timedelta(seconds=31)
    probe = {"alertname": "InfiniBandPortDown", "node": "ib-leaf-3", "severity": "critical"}  # held by no rule
    await ingestor.ingest(parse_webhook(webhook([probe])).batch)
    first = await runner.run_once(urgent=True)
    assert first is not None
    assert first.deferred
    assert runner.wake_at is not None
    assert runner.wake_at <= clock.now
    assert runner._cadence.due  # the loop's next pass need not wait for the tick
    stored = await decisions()
    assert stored.pop("InfiniBandPortDown") == Decision.NOTIFY.value
    assert set(stored.values()) == {Decision.HELD.value}

    second = await runner.run_once(urgent=True)
    assert second is not None
    assert not second.deferred
    assert not runner._cadence.due
    stored = await decisions()
    assert Decision.HELD.value not in stored.values()
    assert len(stored) == 7

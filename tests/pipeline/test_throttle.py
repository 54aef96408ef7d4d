"""The notify decision per incident and receiver: first, growth, resolve, repeats by severity, flapping."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from alertrouter.pipeline.throttle import (
    NotifyReason,
    NotifyState,
    ThrottleDecision,
    ThrottlePolicy,
    needs_update,
    next_state,
    told_since,
)

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)
POLICY = ThrottlePolicy(group_wait=30 * timedelta(seconds=1), group_interval=5 * MIN, repeat_interval=30 * MIN)
A, B, C = "a" * 16, "b" * 16, "c" * 16


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def sent(minutes: float, *fps: str, repeats: int = 0) -> NotifyState:
    return NotifyState(last_sent_at=at(minutes), firing=frozenset(fps), repeats=repeats)


@pytest.mark.parametrize(
    ("state", "firing", "now", "expected"),
    [
        pytest.param(None, {A}, 0.25, ThrottleDecision(None, at(0.5)), id="first-waits-group-wait"),
        pytest.param(None, {A}, 0.5, ThrottleDecision(NotifyReason.FIRST), id="first-after-group-wait"),
        pytest.param(None, set(), 10, ThrottleDecision(None), id="never-fired-nothing-to-say"),
        pytest.param(sent(1, A), {A}, 3, ThrottleDecision(None, at(31)), id="unchanged-waits-repeat"),
        pytest.param(sent(1, A), {A}, 31, ThrottleDecision(NotifyReason.REPEAT), id="repeat-due"),
        pytest.param(sent(1, A), {A, B}, 3, ThrottleDecision(None, at(6)), id="grew-batched-by-group-interval"),
        pytest.param(sent(1, A), {A, B}, 6, ThrottleDecision(NotifyReason.GREW), id="grew-sent"),
        pytest.param(sent(1, A, B), {A}, 6, ThrottleDecision(None, at(31)), id="partial-resolve-is-quiet"),
        pytest.param(sent(1, A, B), {C}, 6, ThrottleDecision(NotifyReason.GREW), id="replaced-alert-is-growth"),
        pytest.param(sent(1, A), set(), 3, ThrottleDecision(None, at(6)), id="resolve-spaced"),
        pytest.param(sent(1, A), set(), 6, ThrottleDecision(NotifyReason.RESOLVED), id="resolve-sent"),
        pytest.param(sent(6), set(), 60, ThrottleDecision(None), id="resolve-told-once"),
        pytest.param(sent(6), {A}, 7, ThrottleDecision(None, at(11)), id="refire-after-resolve-spaced"),
        pytest.param(sent(6), {A}, 11, ThrottleDecision(NotifyReason.FIRST), id="refire-after-resolve"),
    ],
)
def test_needs_update(state: NotifyState | None, firing: set[str], now: float, expected: ThrottleDecision) -> None:
    got = needs_update(state, frozenset(firing), active_since=T0, now=at(now), policy=POLICY)
    assert got == expected


def test_no_resolved_message_when_not_wanted() -> None:
    policy = ThrottlePolicy(group_wait=MIN, group_interval=MIN, repeat_interval=MIN, send_resolved=False)
    assert needs_update(sent(0, A), frozenset(), active_since=T0, now=at(60), policy=policy).reason is None


def test_acknowledged_stops_repeats_not_growth() -> None:
    state = sent(0, A)
    assert (
        needs_update(state, frozenset({A}), active_since=T0, now=at(99), policy=POLICY, acknowledged=True).reason
        is None
    )
    grew = needs_update(state, frozenset({A, B}), active_since=T0, now=at(99), policy=POLICY, acknowledged=True)
    assert grew.reason is NotifyReason.GREW


def test_max_repeats_caps_repeats() -> None:
    policy = ThrottlePolicy(group_wait=MIN, group_interval=MIN, repeat_interval=10 * MIN, max_repeats=2)
    assert needs_update(sent(0, A, repeats=1), frozenset({A}), active_since=T0, now=at(10), policy=policy).reason == (
        NotifyReason.REPEAT
    )
    assert (
        needs_update(sent(0, A, repeats=2), frozenset({A}), active_since=T0, now=at(999), policy=policy).reason is None
    )


@pytest.mark.parametrize(
    ("severity_interval", "expected_times"),
    [
        (timedelta(minutes=10), [0.5, 10.5, 20.5, 30.5, 40.5, 50.5]),  # critical
        (timedelta(minutes=30), [0.5, 30.5]),  # warning
        (timedelta(hours=2), [0.5]),  # info
    ],
)
def test_repeat_timing_per_severity(severity_interval: timedelta, expected_times: list[float]) -> None:
    """Walk an hour in 15-second steps with one alert firing throughout: when is the receiver told?"""
    policy = ThrottlePolicy(group_wait=timedelta(seconds=30), group_interval=5 * MIN, repeat_interval=severity_interval)
    state: NotifyState | None = None
    told: list[float] = []
    for step in range(0, 60 * 4):
        now = at(step / 4)
        decision = needs_update(state, frozenset({A}), active_since=T0, now=now, policy=policy)
        if decision.reason is not None:
            told.append(step / 4)
            state = next_state(state, decision.reason, frozenset({A}), now)
    assert told == expected_times


def test_flapping_alert_costs_at_most_one_message_per_group_interval() -> None:
    """The alert flips every 45 seconds for an hour; the incident it belongs to stays open."""
    state: NotifyState | None = None
    messages = 0
    for step in range(0, 80):
        now = at(step * 0.75)
        firing = frozenset({A}) if step % 2 == 0 else frozenset()
        decision = needs_update(state, firing, active_since=T0, now=now, policy=POLICY)
        if decision.reason is not None:
            messages += 1
            state = next_state(state, decision.reason, firing, now)
    assert 2 <= messages <= 60 // 5 + 1


def test_next_state_counts_repeats_and_resets_on_change() -> None:
    s1 = next_state(None, NotifyReason.FIRST, frozenset({A}), at(0))
    s2 = next_state(s1, NotifyReason.REPEAT, frozenset({A}), at(30))
    s3 = next_state(s2, NotifyReason.REPEAT, frozenset({A}), at(60))
    assert (s1.repeats, s2.repeats, s3.repeats) == (0, 1, 2)
    assert next_state(s3, NotifyReason.GREW, frozenset({A, B}), at(61)).repeats == 0
    assert next_state(s3, NotifyReason.RESOLVED, frozenset(), at(62)).firing == frozenset()


@pytest.mark.parametrize(
    ("state", "started", "expected"),
    [
        pytest.param(None, at(0), at(0), id="first-message-its-alerts-start"),
        pytest.param(None, None, None, id="no-time-known"),
        pytest.param(NotifyState(at(1), frozenset({A}), since=at(0)), at(2), at(0), id="refired-unseen-keeps-start"),
        pytest.param(NotifyState(at(1), frozenset({A}), since=at(3)), at(2), at(2), id="earlier-start-wins"),
        pytest.param(NotifyState(at(1), frozenset({A}), since=at(0)), None, at(0), id="told-start-when-none-now"),
        pytest.param(NotifyState(at(6), frozenset(), since=None), at(9), at(9), id="after-a-resolve-a-new-episode"),
        pytest.param(NotifyState(at(1), frozenset({A})), at(2), at(2), id="row-from-before-the-column"),
    ],
)
def test_told_since(state: NotifyState | None, started: datetime | None, expected: datetime | None) -> None:
    assert told_since(state, started) == expected


def test_a_resolved_message_closes_the_told_episode() -> None:
    first = next_state(None, NotifyReason.FIRST, frozenset({A}), at(0), at(-10))
    repeat = next_state(first, NotifyReason.REPEAT, frozenset({A}), at(30), told_since(first, at(20)))
    assert (first.since, repeat.since) == (at(-10), at(-10))
    assert next_state(repeat, NotifyReason.RESOLVED, frozenset(), at(31), at(-10)).since is None

"""The alert state machine: every transition, including out-of-order and HA-duplicate deliveries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from alertrouter.model import AlertStatus
from alertrouter.transitions import AlertState, IncomingAlert, ResolvedBy, Transition, decide_transition

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
FIRING, RESOLVED = AlertStatus.FIRING, AlertStatus.RESOLVED
NOTES = {"summary": "hot"}


def incoming(status: AlertStatus, starts: int, ends: int | None = None, notes: dict[str, str] = NOTES) -> IncomingAlert:
    return IncomingAlert(
        fingerprint="f" * 16,
        labels={"alertname": "GPUHighTemp"},
        annotations=notes,
        status=status,
        starts_at=T0 + timedelta(minutes=starts),
        ends_at=None if ends is None else T0 + timedelta(minutes=ends),
    )


def state(status: AlertStatus, starts: int, ends: int | None = None, by: ResolvedBy | None = None) -> AlertState:
    return AlertState(
        fingerprint="f" * 16,
        status=status,
        starts_at=T0 + timedelta(minutes=starts),
        ends_at=None if ends is None else T0 + timedelta(minutes=ends),
        annotations=NOTES,
        resolved_by=by,
    )


@pytest.mark.parametrize(
    ("current", "new", "expected"),
    [
        pytest.param(None, incoming(FIRING, 0), Transition.NEW_FIRING, id="first-firing"),
        pytest.param(None, incoming(RESOLVED, 0, 5), Transition.NEW_RESOLVED, id="first-already-resolved"),
        pytest.param(state(FIRING, 0), incoming(FIRING, 0), Transition.UNCHANGED, id="group-interval-resend"),
        pytest.param(state(FIRING, 0, 5), incoming(FIRING, 0, 9), Transition.EXTENDED, id="api-v2-refresh"),
        pytest.param(
            state(FIRING, 0),
            incoming(FIRING, 0, notes={"summary": "hotter"}),
            Transition.ANNOTATIONS_CHANGED,
            id="annotations-changed",
        ),
        pytest.param(state(FIRING, 0), incoming(RESOLVED, 0, 7), Transition.RESOLVED, id="resolve"),
        pytest.param(
            state(RESOLVED, 0, 7, ResolvedBy.SOURCE),
            incoming(RESOLVED, 0, 7),
            Transition.UNCHANGED,
            id="resolve-resent",
        ),
        pytest.param(
            state(RESOLVED, 0, 7, ResolvedBy.SOURCE),
            incoming(FIRING, 20),
            Transition.REFIRED,
            id="refire-new-episode",
        ),
        pytest.param(
            state(RESOLVED, 0, 7, ResolvedBy.SOURCE),
            incoming(FIRING, 0),
            Transition.STALE,
            id="late-firing-after-explicit-resolve",
        ),
        pytest.param(
            state(RESOLVED, 0, 7, ResolvedBy.TIMEOUT),
            incoming(FIRING, 0, 12),
            Transition.REVIVED,
            id="timed-out-then-refreshed",
        ),
        pytest.param(state(FIRING, 20), incoming(RESOLVED, 0, 7), Transition.STALE, id="resolve-of-older-episode"),
        pytest.param(
            state(RESOLVED, 0, 7, ResolvedBy.SOURCE),
            incoming(RESOLVED, 20, 25),
            Transition.CLOSED_EPISODE,
            id="unseen-episode-already-resolved",
        ),
        pytest.param(
            state(RESOLVED, 20, 25, ResolvedBy.SOURCE),
            incoming(FIRING, 0),
            Transition.STALE,
            id="firing-of-older-episode",
        ),
    ],
)
def test_decide_transition(current: AlertState | None, new: IncomingAlert, expected: Transition) -> None:
    assert decide_transition(current, new) is expected


@pytest.mark.parametrize(
    ("kind", "writes"),
    [
        (Transition.NEW_FIRING, True),
        (Transition.RESOLVED, True),
        (Transition.ANNOTATIONS_CHANGED, True),
        (Transition.EXTENDED, False),
        (Transition.UNCHANGED, False),
        (Transition.STALE, False),
    ],
)
def test_only_state_changes_write(kind: Transition, writes: bool) -> None:
    assert kind.writes is writes

"""The outbox message every stage reads: what the engine writes, read back the same, a damaged row refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from alertrouter.message.facts import facts_from_json
from alertrouter.message.snapshot import AlertItem, MessageError, MessageSnapshot
from alertrouter.model import AlertStatus, AlertView, IncidentKind
from alertrouter.pipeline.incident import IncidentGroup, message_snapshot
from alertrouter.pipeline.throttle import NotifyReason
from alertrouter.pipeline.types import IncidentState
from alertrouter.render.samples import sample_notifications

T0 = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)


def state(**changes: object) -> IncidentState:
    base: dict[str, object] = {
        "key": "gpu-by-node/GPUXidError/gpu-node-100",
        "kind": "node",
        "rule": "gpu-by-node",
        "firing": True,
        "severity": "critical",
        "headline": "gpu-node-100: GPUXidError on 8/8 GPUs",
        "labels": {"alertname": "GPUXidError", "node": "gpu-node-100", "region": "north"},
        "summary": {"units": [str(g) for g in range(8)], "units_total": 8, "alerts": 8, "firing": 8},
        "parent": None,
        "opened_at": T0,
        "active_since": T0,
        "resolved_at": None,
        "acknowledged": False,
    }
    made = {**base, **changes}
    made["summary"] = facts_from_json(IncidentKind(str(made["kind"])), made["summary"])  # as the engine holds it
    return IncidentState(**made)  # type: ignore[arg-type]


def test_what_the_engine_writes_reads_back_the_same() -> None:
    snapshot = message_snapshot(state(), NotifyReason.FIRST, None, T0 + timedelta(seconds=30))
    stored = snapshot.to_json()
    assert (stored["kind"], stored["status"], stored["reason"]) == ("node", "firing", "first")
    assert stored["opened_at"] == "2026-11-21T10:00:00+00:00"
    assert MessageSnapshot.from_json(stored) == snapshot
    resolved = message_snapshot(state(firing=False, kind="cluster"), NotifyReason.RESOLVED, None, T0)
    assert MessageSnapshot.from_json(resolved.to_json()) == resolved
    assert (resolved.resolved, resolved.kind) == (True, IncidentKind.CLUSTER)


def test_alerts_carry_what_delivery_adds_and_read_back_the_same() -> None:
    alert = AlertItem("fp", {"gpu": "3", "Hostname": "gpu-node-100"}, True, {"summary": "Xid 79"}, T0)
    assert AlertItem.from_json(alert.to_json()) == alert
    bare = AlertItem("fp", {"gpu": "3"}, False)
    assert bare.to_json() == {"fingerprint": "fp", "labels": {"gpu": "3"}, "firing": False}  # as the engine stores it
    assert AlertItem.from_json(bare.to_json()) == bare


def test_every_sample_message_reads_back_the_same() -> None:
    for n in sample_notifications().values():
        for item in n.items:
            assert MessageSnapshot.from_json(item.to_json()) == item


def test_an_older_row_without_keys_reads_with_empty_values() -> None:
    message = MessageSnapshot.from_json({"headline": "bare"})
    assert (message.headline, message.kind, message.status, message.alerts, message.at) == (
        "bare",
        IncidentKind.NODE,
        AlertStatus.FIRING,
        (),
        None,
    )


@pytest.mark.parametrize(
    ("stored", "named"),
    [
        ([], "expected an object, got list"),
        ({"alerts": [7]}, "alerts[0]: expected an object, got int"),
        ({"alerts": {"fp": {}}}, "alerts: expected a list, got dict"),
        ({"labels": {"gpu": 3}}, "labels: expected text names and values, got int for 'gpu'"),
        ({"alerts": [{"labels": ["gpu"]}]}, "alerts[0]: labels: expected an object, got list"),
        ({"headline": 12}, "headline: expected text, got int"),
        ({"alerts": [{"firing": "yes"}]}, "alerts[0]: firing: expected true or false, got str"),
        ({"opened_at": "yesterday"}, "opened_at: expected an ISO-8601 time, got 'yesterday'"),
        ({"summary": "8 GPUs"}, "summary: expected an object, got str"),
    ],
)
def test_a_damaged_row_is_refused_naming_the_key(stored: object, named: str) -> None:
    with pytest.raises(MessageError) as raised:
        MessageSnapshot.from_json(stored)
    assert str(raised.value) == named


def test_a_group_s_alerts_are_in_the_message_in_fingerprint_order() -> None:
    views = [AlertView(f"fp{i}", {"gpu": str(i)}, True) for i in (2, 0, 1)]
    group = IncidentGroup("k", None, alerts=views, eligible=views)  # type: ignore[arg-type]
    snapshot = message_snapshot(state(), NotifyReason.GREW, group, T0)
    assert [a.fingerprint for a in snapshot.alerts] == ["fp0", "fp1", "fp2"]
    assert snapshot.reason == "grew"


def test_the_message_carries_the_alerts_own_start_and_end() -> None:
    """Firing: the earliest `startsAt` of the alerts that count. Resolved: of the alerts that ended since the
    incident opened (one over before it reopened is another occurrence), and the latest `endsAt`."""
    m = timedelta(minutes=1)
    firing = [AlertView(f"fp{i}", {"gpu": str(i)}, True, T0 - (10 - i) * m, T0) for i in range(3)]
    group = IncidentGroup("k", None, alerts=firing, eligible=firing[1:])  # type: ignore[arg-type]
    told = message_snapshot(state(), NotifyReason.FIRST, group, T0 + m)
    assert (told.started_at, told.ended_at, told.opened_at) == (T0 - 9 * m, None, T0)
    assert MessageSnapshot.from_json(told.to_json()) == told
    earlier = AlertView("fp9", {"gpu": "9"}, False, T0 - 60 * m, T0 - 60 * m, T0 - 50 * m)  # before it reopened
    ended = [AlertView(f"fp{i}", {"gpu": str(i)}, False, T0 - (10 - i) * m, T0, T0 + i * m) for i in range(3)]
    group = IncidentGroup("k", None, alerts=[earlier, *ended])  # type: ignore[arg-type]
    told = message_snapshot(state(firing=False), NotifyReason.RESOLVED, group, T0 + 5 * m)
    assert (told.started_at, told.ended_at) == (T0 - 10 * m, T0 + 2 * m)
    stored = told.to_json()
    assert (stored["started_at"], stored["ended_at"]) == ("2026-11-21T09:50:00+00:00", "2026-11-21T10:02:00+00:00")
    assert MessageSnapshot.from_json(stored) == told


def test_a_row_stored_before_the_alerts_times_reads_without_them() -> None:
    stored = message_snapshot(state(), NotifyReason.FIRST, None, T0).to_json()
    assert "started_at" not in stored
    assert "ended_at" not in stored
    message = MessageSnapshot.from_json(stored)
    assert (message.started_at, message.ended_at, message.opened_at) == (None, None, T0)

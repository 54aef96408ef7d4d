"""What an ingest commit writes, decided alert by alert from the stored states: pure, no I/O.

`Ingestor` (ingest/writer.py) reads the states, plans every payload of a group here (`plan_group`),
and writes the plan and the payloads' raw log rows (`raw_row`) in one transaction, or, on PostgreSQL,
a group none of whose alerts is stored in one statement.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from alertrouter.ingest.batch import IngestBatch, IngestResult
from alertrouter.model import AlertStatus
from alertrouter.transitions import AlertState, IncomingAlert, ResolvedBy, Transition, decide_transition

__all__ = ["Plan", "plan_alerts", "plan_group", "raw_row"]

_EVENT_KIND = {
    Transition.NEW_FIRING: "firing",
    Transition.NEW_RESOLVED: "resolved",
    Transition.RESOLVED: "resolved",
    Transition.REFIRED: "refired",
    Transition.REVIVED: "revived",
    Transition.CLOSED_EPISODE: "resolved",
    Transition.ANNOTATIONS_CHANGED: "annotations_changed",
}

_SAME_EPISODE = frozenset({Transition.RESOLVED, Transition.REVIVED, Transition.ANNOTATIONS_CHANGED})
_NEXT_EPISODE = frozenset(
    {Transition.NEW_FIRING, Transition.REFIRED, Transition.CLOSED_EPISODE}
)  # opens_episode and more
_FIRES = frozenset({Transition.NEW_FIRING, Transition.REFIRED, Transition.REVIVED})
# Enum members' `.value` goes through a descriptor: the texts of the columns, looked up per alert.
_STATUS_TEXT = {s: s.value for s in AlertStatus}
_SOURCE = ResolvedBy.SOURCE.value


@dataclass(slots=True)
class Plan:
    """The rows and refreshes one commit writes, and the transitions that make them."""

    new_alerts: dict[str, dict[str, Any]] = field(default_factory=dict)
    updates: dict[str, dict[str, Any]] = field(default_factory=dict)
    new_episodes: list[dict[str, Any]] = field(default_factory=list)
    closed_episodes: list[dict[str, Any]] = field(default_factory=list)
    reopened_episodes: list[tuple[str, datetime]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    seen: list[tuple[str, datetime]] = field(default_factory=list)
    extended: list[tuple[str, datetime, datetime]] = field(default_factory=list)
    transitions: Counter[Transition] = field(default_factory=Counter)


def plan_alerts(plan: Plan, states: dict[str, AlertState], alerts: Sequence[IncomingAlert], now: datetime) -> None:
    """Plan alerts in order; `states` follows, so an alert twice in a batch sees its first copy."""
    for alert in alerts:
        after = _plan_alert(plan, states.get(alert.fingerprint), alert, now)
        if after is not None:
            states[alert.fingerprint] = after


def _plan_alert(plan: Plan, current: AlertState | None, alert: IncomingAlert, now: datetime) -> AlertState | None:
    """Record what `alert` changes in `plan`; return the state the store will hold afterwards."""
    kind = decide_transition(current, alert)
    plan.transitions[kind] += 1
    fp = alert.fingerprint
    if kind is Transition.STALE:
        return current
    if kind in (Transition.UNCHANGED, Transition.EXTENDED):
        assert current is not None
        plan.seen.append((fp, now))
        if kind is Transition.EXTENDED and alert.ends_at is not None:
            plan.extended.append((fp, current.starts_at, alert.ends_at))
        return current

    status = alert.status
    firing = status is AlertStatus.FIRING
    resolved_by = None if firing else ResolvedBy.SOURCE
    ends_at = alert.ends_at if firing else (alert.ends_at or now)
    starts_at = alert.starts_at
    if kind in _SAME_EPISODE:
        assert current is not None
        starts_at = current.starts_at  # the same episode; its start stays what we first recorded
    episodes = 1 if current is None else current.episodes + (1 if kind in _NEXT_EPISODE else 0)
    if kind in _FIRES:
        fired_at: datetime | None = now
    else:
        fired_at = current.fired_at if current is not None else None
    row: dict[str, Any] = {
        "fingerprint": fp,
        "status": _STATUS_TEXT[status],
        "starts_at": starts_at,
        "ends_at": ends_at,
        "resolved_by": None if firing else _SOURCE,
        "annotations": dict(alert.annotations),
        "generator_url": alert.generator_url,
        "episodes": episodes,
        "last_seen": now,
        "updated_at": now,
        "fired_at": fired_at,
    }
    new_state = AlertState(fp, status, starts_at, ends_at, alert.annotations, resolved_by, episodes, fired_at)

    if current is None:  # the row itself becomes the insert (no copy): it is new and nobody else holds it
        row["alertname"] = alert.labels.get("alertname", "")
        row["labels"] = dict(alert.labels)
        row["first_seen"] = now
        plan.new_alerts[fp] = row
    elif fp in plan.new_alerts:  # seen twice in one batch: the later row wins, still as an insert
        plan.new_alerts[fp].update(row)
    else:
        plan.updates[fp] = row

    _plan_history(plan, kind, fp, starts_at, ends_at, alert, now)
    return new_state


def _plan_history(
    plan: Plan,
    kind: Transition,
    fp: str,
    starts_at: datetime,
    ends_at: datetime | None,
    alert: IncomingAlert,
    now: datetime,
) -> None:
    """The episode row `kind` opens, closes or reopens, and the history event it makes: for a change
    only (`_plan_alert` returns before this for an alert seen again unchanged)."""
    if kind in (Transition.NEW_FIRING, Transition.REFIRED):
        plan.new_episodes.append(_episode(fp, starts_at, None, None, now, None))
    elif kind in (Transition.NEW_RESOLVED, Transition.CLOSED_EPISODE):
        plan.new_episodes.append(_episode(fp, starts_at, ends_at, _SOURCE, now, now))
    elif kind is Transition.RESOLVED:
        plan.closed_episodes.append(
            {
                "fingerprint": fp,
                "starts_at": starts_at,
                "ends_at": ends_at,
                "resolved_by": _SOURCE,
                "closed_at": now,
            }
        )
    elif kind is Transition.REVIVED:
        plan.reopened_episodes.append((fp, starts_at))

    detail = {"annotations": dict(alert.annotations)} if kind is Transition.ANNOTATIONS_CHANGED else None
    plan.events.append(
        {
            "fingerprint": fp,
            "kind": _EVENT_KIND[kind],
            "at": now,
            "episode_starts_at": starts_at,
            "detail": detail,
        }
    )


def _episode(
    fp: str,
    starts_at: datetime,
    ends_at: datetime | None,
    resolved_by: str | None,
    opened: datetime,
    closed: datetime | None,
) -> dict[str, Any]:
    return {
        "fingerprint": fp,
        "starts_at": starts_at,
        "ends_at": ends_at,
        "resolved_by": resolved_by,
        "opened_at": opened,
        "closed_at": closed,
    }


def plan_group(
    batches: Sequence[IngestBatch], states: dict[str, AlertState], now: datetime
) -> tuple[Plan, list[IngestResult], list[tuple[int, int]]]:
    """Every batch planned in order against `states` (which follows the plan): the plan, each batch's
    result (its transitions), and where its history events are in the plan's."""
    plan = Plan()
    results: list[IngestResult] = []
    event_slices: list[tuple[int, int]] = []
    for batch in batches:
        before, first_event = Counter(plan.transitions), len(plan.events)
        plan_alerts(plan, states, batch.alerts, now)
        results.append(IngestResult(transitions=plan.transitions - before))
        event_slices.append((first_event, len(plan.events)))
    return plan, results, event_slices


def raw_row(batch: IngestBatch, now: datetime) -> dict[str, Any]:
    """The raw log's row for `batch`, received `now`."""
    return {
        "digest": batch.digest,
        "received_at": now,
        "source": batch.source,
        "receiver": batch.receiver,
        "group_key": batch.group_key,
        "status": batch.status,
        "external_url": batch.external_url,
        "alert_count": len(batch.alerts),
        "truncated_alerts": batch.truncated_alerts,
        "rejected_alerts": batch.rejected_alerts,
        "body": batch.body,
    }

"""Telling: which receivers an incident's labels route to, whether a time interval mutes their routes
now, and whether each receiver is due a message (first, grown, repeat, resolved) under its throttle
policy; the message snapshot when it is."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set
from dataclasses import replace
from datetime import datetime, timedelta

from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.pipeline.aggregate import AggregationRule
from alertrouter.pipeline.incident import IncidentGroup, message_snapshot
from alertrouter.pipeline.route import RouteMatch, match_routes, severity_interval
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.throttle import (
    NotifyReason,
    NotifyState,
    ThrottlePolicy,
    needs_update,
    next_state,
    told_since,
)
from alertrouter.pipeline.timeinterval import IntervalClock, IntervalMute
from alertrouter.pipeline.types import AlertDecision, Decision, EvalResult, IncidentRecord, IncidentState, Intent

__all__ = ["Teller", "with_mutes"]


def with_mutes(decision: AlertDecision, mutes: Mapping[str, IntervalMute]) -> AlertDecision:
    """The decision, saying which receivers' routes time intervals mute now, by which, until when."""
    if not mutes:
        return decision
    return replace(
        decision,
        muted_by_interval={r: m.intervals for r, m in mutes.items() if not m.outside_active},
        outside_active={r: m.intervals for r, m in mutes.items() if m.outside_active},
        mute_ends_at=min((m.until for m in mutes.values() if m.until), default=None),
    )


def group_interval(rule: AggregationRule, route: RouteMatch) -> timedelta:
    """The aggregation rule's own group interval, else the route's."""
    return rule.group_interval if rule.group_interval is not None else route.policy.group_interval


def throttle_policy(rule: AggregationRule, route: RouteMatch, severity: str) -> ThrottlePolicy:
    """The route's throttle for an incident of `severity`; the aggregation rule's own waits win."""
    return ThrottlePolicy(
        group_wait=rule.group_wait if rule.group_wait is not None else route.policy.group_wait,
        group_interval=group_interval(rule, route),
        repeat_interval=severity_interval(route.policy, severity),
        send_resolved=route.policy.send_resolved,
        max_repeats=route.policy.max_repeats,
    )


def told_message(
    state: IncidentState,
    reason: NotifyReason,
    group: IncidentGroup | None,
    previous: NotifyState | None,
    now: datetime,
    span: Callable[[], tuple[datetime | None, datetime | None]] | None,
) -> MessageSnapshot:
    """The message for one receiver: since the start that receiver was told, when that is earlier than its
    alerts' start now (they resolved and fired again between two messages: `told_since`)."""
    message = message_snapshot(state, reason, group, now, span=span() if span is not None else (None, None))
    since = told_since(previous, message.started_at)
    return message if since == message.started_at else replace(message, started_at=since)


class Teller:
    def __init__(self, pipeline: CompiledRules) -> None:
        self.pipeline = pipeline
        self._intervals = IntervalClock(pipeline.time_intervals)
        # A route's time-interval mute, worked out once per pass: (mute, active) names -> the mute or None.
        self._mutes: dict[tuple[tuple[str, ...], tuple[str, ...]], IntervalMute | None] = {}

    def new_pass(self, now: datetime) -> datetime | None:
        """Forget the last pass's mutes; when a time interval starts or ends next (what a muted route
        holds back is sent then, and the decisions of the alerts it routes change)."""
        self._mutes = {}
        changes = (self._intervals.next_change(name, now) for name in self.pipeline.time_intervals)
        return min((c for c in changes if c is not None), default=None)

    def mutes(self, routes: list[RouteMatch], now: datetime) -> dict[str, IntervalMute]:
        """Receiver -> the time-interval mute of its route now, for the routes muted now."""
        return {r.receiver: m for r in routes if (m := self.mute(r, now)) is not None}

    def mute(self, route: RouteMatch, now: datetime) -> IntervalMute | None:
        if not route.mute_time_intervals and not route.active_time_intervals:
            return None
        key = (route.mute_time_intervals, route.active_time_intervals)
        if key not in self._mutes:
            self._mutes[key], _ = self._intervals.route_mute(
                mute=route.mute_time_intervals, active=route.active_time_intervals, at=now
            )
        return self._mutes[key]

    def routes(self, labels: Mapping[str, str], severity: str) -> list[RouteMatch]:
        routed = dict(labels)
        if severity:
            routed[self.pipeline.severity_label] = severity
        seen: set[str] = set()
        out = []
        for match in match_routes(self.pipeline.route, routed):
            if match.receiver not in seen:  # two branches reaching one receiver send one message
                seen.add(match.receiver)
                out.append(match)
        return out

    def resolve_due(self, record: IncidentRecord, rule: AggregationRule, now: datetime) -> datetime | None:
        """When the last of the resolved messages `record`'s receivers are owed is due (its group interval
        after the message before it); None when none is owed: told already, or never told (a route muted
        now, or with `send_resolved: false`)."""
        due: datetime | None = None
        for route in self.routes(record.labels, record.severity):
            previous = record.notify.get(route.receiver)
            if previous is None or not previous.firing or not route.policy.send_resolved:
                continue
            if self.mute(route, now) is not None:
                continue
            at = previous.last_sent_at + group_interval(rule, route)
            due = at if due is None else max(due, at)
        return due

    @staticmethod
    def eligible_decision(
        group: IncidentGroup,
        record: IncidentRecord | None,
        routed_to: tuple[str, ...],
        next_send: datetime | None,
        *,
        notified: bool,
        all_muted: bool,
    ) -> AlertDecision:
        """The decision about a firing alert that counts (neither muted by another alert nor held)."""
        if group.parent is not None:
            return AlertDecision(
                Decision.ROLLED_UP, group.parent, routed_to=routed_to, aggregation_rule=group.rule.name
            )
        if all_muted:  # every receiver's route is muted by a time interval: nothing goes out now
            return AlertDecision(Decision.MUTED_BY_INTERVAL, group.key, routed_to=routed_to)
        if len(group.eligible) > 1:
            return AlertDecision(
                Decision.AGGREGATED,
                group.key,
                routed_to=routed_to,
                next_send_at=next_send,
                aggregation_rule=group.rule.name,
            )
        if not notified and record is not None and any(record.notify.get(r) for r in routed_to):
            return AlertDecision(Decision.THROTTLED, group.key, routed_to=routed_to, next_send_at=next_send)
        return AlertDecision(Decision.NOTIFY, group.key, routed_to=routed_to, next_send_at=next_send)

    def notify(
        self,
        state: IncidentState,
        rule: AggregationRule,
        routes: list[RouteMatch],
        firing: Set[str],
        group: IncidentGroup | None,
        record: IncidentRecord | None,
        now: datetime,
        result: EvalResult,
        *,
        quiet: bool,
        span: Callable[[], tuple[datetime | None, datetime | None]] | None = None,
    ) -> tuple[bool, datetime | None]:
        """Decide per receiver: (anything intended, when to look at the incident again: a hold-down's end,
        a group wait, the next repeat). `span`: when a storm's alerts (no `group`) started and ended."""
        sent = False
        earliest: datetime | None = None
        for route in routes:
            previous = record.notify.get(route.receiver) if record else None
            if self.mute(route, now) is not None:
                # Sends nothing while muted; its notify state stays, so what still fires when the mute
                # ends is told then. As in Alertmanager, a resolve during the mute is never told.
                if not firing and not quiet and previous is not None and previous.firing:
                    result.notify_states[(state.key, route.receiver)] = NotifyState(previous.last_sent_at, frozenset())
                continue
            if group is not None and group.held_until is not None and (previous is None or not previous.firing):
                # The first message waits for the incident's alerts in hold-down: "6/8 GPUs", not "1/8" then
                # "6/8"; a hold-down never lasts longer than its rule says.
                earliest = group.held_until if earliest is None else min(earliest, group.held_until)
                continue
            if not firing and quiet:
                # Nothing to show, but not because it is over: muted or held alerts are not resolved
                # (and a resolved target that is still muted gets no resolved message, as in Alertmanager).
                continue
            policy = throttle_policy(rule, route, state.severity)
            decision = needs_update(
                previous,
                firing,
                active_since=state.active_since,
                now=now,
                policy=policy,
                acknowledged=state.acknowledged,
            )
            if decision.reason is None:
                if decision.next_at is not None:
                    earliest = decision.next_at if earliest is None else min(earliest, decision.next_at)
                continue
            message = told_message(state, decision.reason, group, previous, now, span)
            new = next_state(previous, decision.reason, firing, now, message.started_at)
            # When the receiver is next due (a repeat), so an idle engine wakes for it.
            follow = needs_update(
                new, firing, active_since=state.active_since, now=now, policy=policy, acknowledged=state.acknowledged
            )
            if follow.next_at is not None:
                earliest = follow.next_at if earliest is None else min(earliest, follow.next_at)
            result.notify_states[(state.key, route.receiver)] = new
            result.intents.append(Intent(state.key, route.receiver, decision.reason, message))
            sent = True
        return sent, earliest

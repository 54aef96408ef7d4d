"""The engine's escalation work, done in each pass's transaction under the lease: start a chain with an
incident's first message, stop it on acknowledgement or resolve, take each step when it is due, and
tell the receivers a chain paged when the incident resolves.

A step is an outbox intent per receiver of the step (through the same delivery, rate limits and
failover as every message), a trail event on each alert of the incident, and the stored chain moved
on with a conditional update: the chains live in the store (`store.escalations`), so a restart or
another replica taking the lease carries on from the step where the last holder stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.durations import format_duration
from alertrouter.message.facts import EscalationNote
from alertrouter.message.snapshot import AlertItem, MessageSnapshot
from alertrouter.metrics import Metrics
from alertrouter.model import AlertStatus, IncidentKind
from alertrouter.pipeline.escalation import (
    Chain,
    EscalationPolicy,
    Stop,
    advance,
    policy_for,
    quiet_reason,
    step_due,
)
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.telling import Teller
from alertrouter.pipeline.throttle import NotifyReason
from alertrouter.pipeline.types import EvalResult, IncidentRecord, Intent, LiveAlert
from alertrouter.store import escalations as store
from alertrouter.store.alerts import insert_events

__all__ = ["EscalationWork", "Escalator", "alerts_index", "escalation_note", "write_events"]

log = logging.getLogger(__name__)

_AT_ONCE = datetime.min.replace(tzinfo=UTC)

# incident key -> the live alerts it holds now, for a step's message and the trail
AlertsOf = Callable[[str], Sequence[LiveAlert]]


def escalation_note(policy: EscalationPolicy, step: int) -> EscalationNote:
    """What a step's message carries in its summary (`render.context` words it) and its trail entry
    states (`to_json`): 1-based step."""
    return EscalationNote(
        policy=policy.name,
        step=step + 1,
        steps=len(policy.steps),
        after=format_duration(policy.steps[step].after),
        after_seconds=int(policy.steps[step].after.total_seconds()),
        receivers=policy.steps[step].receivers,
    )


@dataclass(slots=True)
class EscalationWork:
    intents: list[Intent] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    steps: list[tuple[str, int]] = field(default_factory=list)  # (policy, 1-based step) taken


class Escalator:
    def __init__(self, pipeline: CompiledRules, metrics: Metrics | None = None) -> None:
        self._policies = pipeline.escalations
        self._teller = Teller(pipeline)
        self._metrics = metrics
        self._chains: dict[str, Chain] | None = None  # active chains as stored; None: read at the next pass
        self._stale = False  # a step was found taken already: read the chains again at the next pass

    @property
    def enabled(self) -> bool:
        return bool(self._policies)

    def forget(self) -> None:
        """Lost the lease, or a pass failed: read the chains again when it comes back."""
        self._chains = None
        if self._metrics is not None:
            self._metrics.escalations_active.set(0)

    @property
    def wake_at(self) -> datetime | None:
        """When the next step is due (the engine runs a pass then even if no alert changed); at once
        when the chains are to be read again."""
        if self._stale:
            return _AT_ONCE
        if not self._chains:
            return None
        return min((c.next_at for c in self._chains.values() if c.next_at is not None), default=None)

    async def work(
        self,
        session: AsyncSession,
        result: EvalResult,
        records: Mapping[str, IncidentRecord],
        now: datetime,
        alerts_of: AlertsOf,
    ) -> EscalationWork:
        """Start, stop and step the chains; the step intents are returned for the caller to write with
        the pass's other intents (after the transaction commits, `committed` counts them)."""
        done = EscalationWork()
        if self._chains is None or self._stale:
            self._stale = False
            if not self.enabled and not await store.count_active(session):
                self._chains = {}
                return done
            self._chains = await store.load_active(session)
        chains = self._chains
        await self._start(session, result, records, now, done, alerts_of)
        await self._stop_finished(session, records, now, done, alerts_of)
        due = [c for c in chains.values() if step_due(c, now)]
        acked = await store.acknowledgers(session, [c.incident for c in due]) if due else {}
        for chain in due:
            if chain.incident in acked:  # acknowledged since the pass read the records: no step
                await self._stop(session, chain, Stop.ACKNOWLEDGED, acked[chain.incident] or None, now, done, alerts_of)
                continue
            await self._step(session, chain, records, now, done, alerts_of)
        await self._tell_resolved(session, result, done)
        return done

    async def _tell_resolved(self, session: AsyncSession, result: EvalResult, done: EscalationWork) -> None:
        """The resolved message of an incident, to every receiver its chain paged as well: whoever was
        woken for it hears that it is over, with the message the route's receivers get (so only when
        the route tells its own: `send_resolved`), once per receiver (one of the route's own gets the
        route's). A voice channel calls nobody about a resolve; the receiver's other channels tell it."""
        resolved = {i.incident: i.message for i in result.intents if i.reason is NotifyReason.RESOLVED}
        if not resolved:
            return
        # The chain of this occurrence: started at or after it opened (without that time, the last chain).
        since = {key: message.opened_at or _AT_ONCE for key, message in resolved.items()}
        paged = await store.paged(session, since)
        told = {(i.incident, i.receiver) for i in result.intents}
        for key, receivers in sorted(paged.items()):
            for receiver in receivers:
                if (key, receiver) not in told:
                    done.intents.append(Intent(key, receiver, NotifyReason.RESOLVED, resolved[key]))
                    told.add((key, receiver))

    def committed(self, done: EscalationWork) -> None:
        if self._metrics is None:
            return
        for policy, step in done.steps:
            self._metrics.escalation_steps.labels(policy=policy, step=str(step)).inc()
        self._metrics.escalations_active.set(len(self._chains or {}))

    async def _start(
        self,
        session: AsyncSession,
        result: EvalResult,
        records: Mapping[str, IncidentRecord],
        now: datetime,
        done: EscalationWork,
        alerts_of: AlertsOf,
    ) -> None:
        assert self._chains is not None
        if not self._policies:  # no policy in the rules: nothing starts (chains left from older rules end)
            return
        started: list[Chain] = []
        for key in dict.fromkeys(i.incident for i in result.intents if i.reason is NotifyReason.FIRST):
            record = records.get(key)
            if key in self._chains or record is None or not record.firing or record.acknowledged:
                continue
            routes = self._teller.routes(record.labels, record.severity)
            policy = policy_for(routes, record.severity, self._policies)
            if policy is None:
                continue
            chain = Chain(key, policy.name, now, 0, now + policy.steps[0].after)
            started.append(chain)
            self._chains[key] = chain
            done.events += _events(alerts_of(key), now, {"event": "started", "policy": policy.name})
        await store.start_chains(session, started, {p.name: len(p.steps) for p in self._policies.values()}, now)

    async def _stop_finished(
        self,
        session: AsyncSession,
        records: Mapping[str, IncidentRecord],
        now: datetime,
        done: EscalationWork,
        alerts_of: AlertsOf,
    ) -> None:
        assert self._chains is not None
        for chain in list(self._chains.values()):
            record = records.get(chain.incident)
            if record is None or not record.firing:
                await self._stop(session, chain, Stop.RESOLVED, None, now, done, alerts_of)
            elif record.acknowledged:
                by = (await store.acknowledgers(session, [chain.incident])).get(chain.incident)
                await self._stop(session, chain, Stop.ACKNOWLEDGED, by or None, now, done, alerts_of)
            elif (quiet := quiet_reason(record.summary, record.parent)) is not None:
                await self._stop(session, chain, quiet, None, now, done, alerts_of)

    async def _stop(
        self,
        session: AsyncSession,
        chain: Chain,
        reason: Stop,
        by: str | None,
        now: datetime,
        done: EscalationWork,
        alerts_of: AlertsOf,
    ) -> None:
        assert self._chains is not None
        await store.stop_chain(session, chain.incident, reason.value, by, now)
        self._chains.pop(chain.incident, None)
        detail = {"event": reason.value, "policy": chain.policy, "steps_taken": chain.next_step}
        done.events += _events(alerts_of(chain.incident), now, detail | ({"by": by} if by else {}))

    async def _step(
        self,
        session: AsyncSession,
        chain: Chain,
        records: Mapping[str, IncidentRecord],
        now: datetime,
        done: EscalationWork,
        alerts_of: AlertsOf,
    ) -> None:
        assert self._chains is not None
        policy = self._policies.get(chain.policy)
        if policy is None or chain.next_step >= len(policy.steps):
            # the rules changed under a running chain: it ends rather than guessing a step
            await self._stop(session, chain, Stop.POLICY_GONE, None, now, done, alerts_of)
            return
        after = advance(chain, policy)
        note = escalation_note(policy, chain.next_step)
        stated = note.to_json()
        entry = {"event": "step", "at": now.isoformat(), **stated}
        if not await store.save_step(session, chain, after, entry, now):
            log.warning("escalation step %s of %s already taken elsewhere", chain.next_step + 1, chain.incident)
            self._chains.pop(chain.incident, None)
            self._stale = True  # the store knows better
            return
        if after.stopped is None:
            self._chains[chain.incident] = after
        else:
            self._chains.pop(chain.incident, None)
        record = records[chain.incident]
        alerts = alerts_of(chain.incident)
        kind = IncidentKind(record.kind)
        message = MessageSnapshot(
            incident=record.key,
            kind=kind,
            reason=NotifyReason.ESCALATED.value,
            status=AlertStatus.FIRING,
            severity=record.severity,
            headline=record.headline,
            labels=dict(record.labels),
            summary=replace(record.summary, escalation=note),
            alerts=tuple(AlertItem(a.fingerprint, dict(a.labels), a.firing) for a in alerts[:20]),
            opened_at=record.opened_at,
            at=now,
            started_at=min((a.starts_at for a in alerts if a.firing), default=None),
        )
        for receiver in note.receivers:
            done.intents.append(Intent(record.key, receiver, NotifyReason.ESCALATED, message))
        done.steps.append((policy.name, note.step))
        done.events += _events(alerts, now, {"event": "step", **stated})
        log.info(
            "escalation: %s not acknowledged for %s, step %d/%d -> %s",
            record.key,
            note.after,
            note.step,
            note.steps,
            ", ".join(note.receivers),
        )


def alerts_index(fingerprints_of: Callable[[str], Sequence[str]], alerts: Mapping[str, LiveAlert]) -> AlertsOf:
    """Incident key -> its live alerts, by fingerprint, from `fingerprints_of` (`Evaluator.alerts_of`: an
    incident's members, as the pass decided them). Looked up only for the incidents a chain starts,
    steps or stops on: a scan of every decision made such a pass grow with the live alerts."""

    def alerts_of(key: str) -> list[LiveAlert]:
        return [alert for fp in fingerprints_of(key) if (alert := alerts.get(fp)) is not None]

    return alerts_of


def _events(alerts: Sequence[LiveAlert], now: datetime, detail: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The decision trail's entry on each alert of the incident."""
    return [
        {
            "fingerprint": a.fingerprint,
            "kind": "escalation",
            "at": now,
            "episode_starts_at": a.starts_at,
            "raw_event_id": None,
            "detail": dict(detail),
        }
        for a in alerts
    ]


async def write_events(session: AsyncSession, done: EscalationWork) -> None:
    if done.events:
        await insert_events(session, done.events)

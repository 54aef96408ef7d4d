"""The jobs hit by the live alerts, kept in `job_hits` by the engine's passes (when the `jobs:` rules are on).

After each pass that evaluated (and after an idle one when the lookup's pods changed: a job may be gone),
the firing alerts are read as job hits (`jobs.impact`) with the node each was evaluated on, in a worker
thread: each alert's hits are remembered while its labels, node and the lookup's pods stay the same, so a
pass pays for what changed. Then, under the engine lease, in a transaction of their own, the rows are
opened, updated and resolved (`store.jobs.save_hits`), and the job messages go to the outbox: one per
job hit, to the receiver of its namespace (`jobs.routes`), in addition to the infrastructure incidents'
own. A job opened is a first message; an update that lost more GPUs than the job ever had is an update
of the same incident (`job:<namespace>/<name>`), not a new page; a job no longer hit (its nodes back, or
gone from the lookup) is resolved. A failure is the pass's: the runner retries from the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from gettext import NullTranslations
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.engine.lease import EngineLease
from alertrouter.jobs.impact import MAX_LISTED, Hit, ImpactRules, JobImpact, fold, hits_of, job_nodes
from alertrouter.jobs.pods import NO_PODS, PodIndex
from alertrouter.jobs.routes import JobRoutes
from alertrouter.message.facts import NodeFacts
from alertrouter.message.jobs import JOB_ALERTNAME, JOB_DOWN, JOB_GPUS, JOB_LABEL, JOB_NODES, job_headline
from alertrouter.message.snapshot import AlertItem, MessageSnapshot
from alertrouter.model import KEY_MAX, AlertStatus, IncidentKind, bounded
from alertrouter.pipeline.throttle import NotifyReason
from alertrouter.pipeline.types import AlertDecision, Intent, LiveAlert
from alertrouter.store import incidents as incident_store
from alertrouter.store import jobs as store
from alertrouter.store.jobs import HitChange
from alertrouter.store.tables.jobs import JobHitRow

__all__ = ["JobWatch", "hit_values", "job_intents"]

_REASONS = {"opened": NotifyReason.FIRST, "updated": NotifyReason.GREW, "resolved": NotifyReason.RESOLVED}


def hit_values(impact: JobImpact) -> dict[str, Any]:
    """A job hit as `store.jobs.save_hits` writes it."""
    job = impact.job
    return {
        "namespace": job.namespace,
        "name": job.name,
        "source": job.source,
        "detail": job.detail,
        "note": job.note,
        "nodes": list(impact.nodes),
        "nodes_down": list(impact.nodes_down),
        "incidents": list(impact.incidents),
        "node_count": impact.node_count,
        "down_count": impact.down_count,
        "gpus_lost": impact.gpus_lost,
        "alerts": impact.alerts,
        "job_nodes": impact.job_nodes,
        "since": impact.since,
        "cause": impact.cause,
    }


def _message(row: JobHitRow, reason: NotifyReason, severity: str, now: datetime) -> MessageSnapshot:
    """A job hit as a message: its own alert carries the figures, which the message's words are made of."""
    key = f"{row.namespace}/{row.name}" if row.namespace else row.name
    resolved = reason is NotifyReason.RESOLVED
    labels = {"alertname": JOB_ALERTNAME, "severity": severity, JOB_LABEL: key, "namespace": row.namespace}
    labels |= {JOB_DOWN: str(row.down_count), JOB_GPUS: str(row.gpus_lost), JOB_NODES: str(row.job_nodes)}
    if not row.namespace:
        del labels["namespace"]
    alert = AlertItem(f"job-{row.id}", labels, not resolved, starts_at=row.since)
    return MessageSnapshot(
        incident=bounded(f"job:{key}", KEY_MAX),
        kind=IncidentKind.NODE,
        reason=reason.value,
        status=AlertStatus.RESOLVED if resolved else AlertStatus.FIRING,
        severity=severity,
        headline=job_headline(NullTranslations(), labels),
        labels=labels,
        summary=NodeFacts(alertname=JOB_ALERTNAME),
        alerts=(alert,),
        opened_at=row.opened_at,
        at=now,
        started_at=row.since,
        ended_at=row.resolved_at if resolved else None,
    )


def job_intents(changes: Sequence[HitChange], routes: JobRoutes, now: datetime) -> list[Intent]:
    """The messages of what changed: a job opened or resolved, and an update that lost more GPUs."""
    out = []
    for change in changes:
        receiver = routes.receiver_of(change.row.namespace)
        if receiver is None or (change.kind == "updated" and not change.grew):
            continue
        reason = _REASONS[change.kind]
        message = _message(change.row, reason, routes.severity, now)
        out.append(Intent(message.incident, receiver, reason, message))
    return out


def _no_pods() -> PodIndex:
    return NO_PODS


class JobWatch:
    def __init__(
        self, rules: ImpactRules, pods: Callable[[], PodIndex] | None = None, routes: JobRoutes | None = None
    ) -> None:
        self.rules = rules
        self.routes = routes or JobRoutes()
        self._pods = pods or _no_pods
        # fingerprint -> (labels, node, its hits) as last worked out, under the pods `_for`
        self._hits: dict[str, tuple[Mapping[str, str], str, tuple[Hit, ...]]] = {}
        self._for: PodIndex | None = None
        self._sizes: dict[str, int] = {}
        self._seen: PodIndex | None = None  # the pods the last written pass read
        self.pods: PodIndex = NO_PODS  # the pods the current pass reads
        self.intents = 0  # job messages the last step put in the outbox
        self.hit_now = 0  # jobs hit after the last step
        # Jobs open in the store after the last write (None: not known, as after a start or the lease lost):
        # none open and none hit, a step writes nothing (no transaction each pass for a quiet fleet).
        self._open: int | None = None

    def pods_changed(self) -> bool:
        """The lookup's pods changed since the last written pass: a pass is due (a job may be gone)."""
        return self._pods() is not self._seen

    def impacts(
        self,
        alerts: Mapping[str, LiveAlert],
        node_of: Callable[[str], str | None],
        decisions: Mapping[str, AlertDecision] | None = None,
    ) -> dict[str, JobImpact]:
        """The jobs the firing `alerts` hit now, by job key, each with the incidents its alerts are in (by
        the pass's `decisions`)."""
        pods = self.pods = self._pods()
        if pods is not self._for:
            self._hits, self._for = {}, pods
            self._sizes = job_nodes(pods, self.rules.naming)
        known, kept = self._hits, {}
        for fp, alert in alerts.items():
            if not alert.firing:
                continue
            node = node_of(fp) or ""
            held = known.get(fp)
            if held is None or held[0] is not alert.labels or held[1] != node:
                held = (alert.labels, node, hits_of(alert.labels, node, alert.starts_at, self.rules, pods))
            kept[fp] = held
        self._hits = kept
        found = fold((hits for _, _, hits in kept.values()), self.rules, self._sizes)
        if decisions is None or not found:
            return found
        incidents: dict[str, set[str]] = {}
        for fp, (_, _, hits) in kept.items():
            decision = decisions.get(fp)
            if hits and decision is not None and decision.incident:
                for hit in hits:
                    incidents.setdefault(hit.job.key, set()).add(decision.incident)
        return {
            key: replace(impact, incidents=tuple(sorted(incidents.get(key, ()))[:MAX_LISTED]))
            for key, impact in found.items()
        }

    async def step(
        self,
        alerts: Mapping[str, LiveAlert],
        node_of: Callable[[str], str | None],
        decisions: Mapping[str, AlertDecision],
        lease: EngineLease,
        now: datetime,
    ) -> list[HitChange] | None:
        """Work out the jobs hit and write them under `lease`; what changed, or None when another replica
        holds the lease (nothing written)."""
        impacts = await asyncio.to_thread(self.impacts, alerts, node_of, decisions)
        if not impacts and self._open == 0:
            self._seen, self.intents, self.hit_now = self.pods, 0, 0
            return []
        changes: list[HitChange] = []
        intents: list[Intent] = []

        async def write(session: AsyncSession) -> None:
            changes.extend(await store.save_hits(session, {k: hit_values(i) for k, i in impacts.items()}, now))
            intents.extend(job_intents(changes, self.routes, now))
            await incident_store.insert_intents(session, intents, now)

        if not await lease.under(now, write):
            self._open = None
            return None
        self._open = self.hit_now = len(impacts)
        self._seen = self.pods
        self.intents = len(intents)
        return changes

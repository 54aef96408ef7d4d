"""`GET /api/v2/alerts` and `GET /api/v2/alerts/groups`: firing alerts as Alertmanager lists them.

An alert's `status` is the engine's stored decision: inhibited, silenced or muted by a time interval is
`suppressed` (with `inhibitedBy` the source alert's fingerprint, `silencedBy` the silence id, `mutedBy`
the time intervals); no decision yet, or quarantined, is `unprocessed`; any other is `active`. Its
`receivers` are the route tree's answer for its labels (as `alertrouter routes test` works them out,
node and topology labels added first). A firing alert whose source gave no end (a webhook's) has
Alertmanager's zero time as `endsAt`, as the webhook itself wrote it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from alertrouter.labels import Matcher, matches_all
from alertrouter.pipeline.route import match_routes
from alertrouter.pipeline.types import Decision
from alertrouter.runtime import Runtime, RuntimeDep
from alertrouter.store import amv2 as store
from alertrouter.store.tables import AlertRow
from alertrouter.web.access import ReadPrincipal
from alertrouter.web.amv2.errors import bool_param, filter_matchers, receiver_pattern
from alertrouter.web.amv2.models import AlertGroup, AlertStatus, GettableAlert, Receiver, wire

__all__ = ["GO_ZERO_TIME", "alert_status", "gettable", "router", "wanted_by"]

router = APIRouter(prefix="/api/v2", tags=["alertmanager-v2"])

GO_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)  # Alertmanager's "no end known"
_SUPPRESSED = {Decision.INHIBITED, Decision.SILENCED, Decision.MAINTENANCE, Decision.MUTED_BY_INTERVAL}


def alert_status(decision: str | None, detail: Mapping[str, Any] | None) -> AlertStatus:
    """Alertmanager's status of an alert from the engine's stored decision and its detail."""
    detail = detail or {}
    if decision is None or decision == Decision.QUARANTINED:
        return AlertStatus(state="unprocessed", silenced_by=[], inhibited_by=[], muted_by=[])
    inhibited = [str(detail["inhibited_by"])] if decision == Decision.INHIBITED and detail.get("inhibited_by") else []
    silenced = [str(detail["silenced_by"])] if decision == Decision.SILENCED and detail.get("silenced_by") else []
    muted: list[str] = []
    if decision == Decision.MUTED_BY_INTERVAL:
        for key in ("muted_by_interval", "outside_active_time_intervals"):
            for names in (detail.get(key) or {}).values():
                muted.extend(name for name in names if name not in muted)
    state = "suppressed" if decision in _SUPPRESSED else "active"
    return AlertStatus(state=state, silenced_by=silenced, inhibited_by=inhibited, muted_by=muted)


def _receivers_of(runtime: Runtime) -> Callable[[Mapping[str, str]], list[str]]:
    """A function giving an alert's receivers (each once, in route order) on this replica's rules and
    node lookup, as the engine routes it."""
    pipeline = runtime.engine.pipeline
    nodes = pipeline.nodes
    if runtime.lookup is not None:
        nodes = replace(nodes, discovered=runtime.lookup.snapshot())

    def receivers(labels: Mapping[str, str]) -> list[str]:
        return list(dict.fromkeys(m.receiver for m in match_routes(pipeline.route, nodes.enrich(labels))))

    return receivers


def gettable(row: AlertRow, receivers: Sequence[str]) -> GettableAlert:
    return GettableAlert(
        labels=row.labels,
        annotations=row.annotations,
        starts_at=row.starts_at,
        ends_at=row.ends_at or GO_ZERO_TIME,
        updated_at=row.updated_at,
        generator_url=row.generator_url or None,
        fingerprint=row.fingerprint,
        receivers=[Receiver(name=name) for name in receivers],
        status=alert_status(row.decision, row.decision_detail),
    )


def wanted_by(request: Request) -> Callable[[AlertStatus], bool]:
    """The `active`, `silenced`, `inhibited`, `muted` (Alertmanager 0.27 and later) and `unprocessed`
    parameters, each true when absent, as Alertmanager applies them: `false` leaves out the alerts in
    that state, or muted that way."""
    active, unprocessed = bool_param(request, "active"), bool_param(request, "unprocessed")
    silenced, inhibited = bool_param(request, "silenced"), bool_param(request, "inhibited")
    muted = bool_param(request, "muted")

    def wanted(status: AlertStatus) -> bool:
        if status.state == "active":
            return active
        if status.state == "unprocessed":
            return unprocessed
        return (
            (silenced or not status.silenced_by)
            and (inhibited or not status.inhibited_by)
            and (muted or not status.muted_by)
        )

    return wanted


async def _listed(request: Request, runtime: Runtime) -> list[tuple[AlertRow, GettableAlert]]:
    """The firing alerts the query asks for, each with its answer, by fingerprint."""
    matchers: list[Matcher] = filter_matchers(request.query_params.getlist("filter"))
    receiver = receiver_pattern(request)
    wanted = wanted_by(request)
    receivers_of = _receivers_of(runtime)
    out: list[tuple[AlertRow, GettableAlert]] = []
    async with runtime.db.read() as session:
        async for row in store.firing_alerts(session):
            if matchers and not matches_all(matchers, row.labels):
                continue
            receivers = receivers_of(row.labels)
            if receiver is not None and not any(receiver.matches(name) for name in receivers):
                continue
            alert = gettable(row, receivers)
            if wanted(alert.status):
                out.append((row, alert))
    return out


@router.get("/alerts", summary="Alertmanager API v2: firing alerts (amtool alert query, Grafana)")
async def list_alerts(request: Request, runtime: RuntimeDep, principal: ReadPrincipal) -> JSONResponse:
    return JSONResponse(wire([alert for _, alert in await _listed(request, runtime)]))


def _common_labels(rows: Sequence[AlertRow]) -> dict[str, str]:
    first = rows[0].labels
    return {k: v for k, v in sorted(first.items()) if all(r.labels.get(k) == v for r in rows[1:])}


@router.get("/alerts/groups", summary="Alertmanager API v2: firing alerts by receiver and incident")
async def list_groups(request: Request, runtime: RuntimeDep, principal: ReadPrincipal) -> JSONResponse:
    """One group per receiver and incident (alertrouter's grouping; an alert not yet in an incident is
    a group of its own), labelled with what its alerts have in common; the same filters as `/alerts`,
    and `receiver` leaves out the groups of other receivers."""
    receiver = receiver_pattern(request)
    groups: dict[tuple[str, str], list[tuple[AlertRow, GettableAlert]]] = {}
    for row, alert in await _listed(request, runtime):
        for target in alert.receivers:
            if receiver is None or receiver.matches(target.name):
                key = (target.name, row.incident_key or f"alert:{row.fingerprint}")
                groups.setdefault(key, []).append((row, alert))
    answer = [
        AlertGroup(
            labels=_common_labels([row for row, _ in members]),
            receiver=Receiver(name=name),
            alerts=[alert for _, alert in members],
        )
        for (name, _), members in sorted(groups.items())
    ]
    return JSONResponse(wire(answer))

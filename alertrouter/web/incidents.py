"""`GET /api/v1/incidents` and one incident with its alerts, members, receivers, notifications and escalation."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query

from alertrouter.model import AlertStatus, IncidentKind
from alertrouter.store import escalations, queries
from alertrouter.web.alerts import AuthorizedRuntime, alert_read
from alertrouter.web.ids import IncidentId, Limit, Offset
from alertrouter.web.schemas import (
    EscalationRead,
    IncidentDetail,
    IncidentList,
    IncidentRead,
    NotificationRead,
    NotifyStateRead,
)

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["incidents"])

_STATUSES = f"^({'|'.join(AlertStatus)})$"  # firing|resolved
_KINDS = f"^({'|'.join(IncidentKind)})$"  # node|cluster


@router.get("/incidents", response_model=IncidentList)
async def list_incidents(
    runtime: AuthorizedRuntime,
    status: Annotated[str | None, Query(pattern=_STATUSES)] = None,
    kind: Annotated[str | None, Query(pattern=_KINDS)] = None,
    limit: Limit = 100,
    offset: Offset = 0,
) -> IncidentList:
    state = None if status is None else AlertStatus(status)  # the patterns admit only the enums' values
    of_kind = None if kind is None else IncidentKind(kind)
    async with runtime.db.read() as session:
        rows, total = await queries.list_incidents(session, status=state, kind=of_kind, limit=limit, offset=offset)
        return IncidentList(
            incidents=[IncidentRead.model_validate(r) for r in rows], total=total, limit=limit, offset=offset
        )


@router.get("/incidents/{incident_id}", response_model=IncidentDetail)
async def get_incident(runtime: AuthorizedRuntime, incident_id: IncidentId) -> IncidentDetail:
    """The incident, the alerts in it with each one's decision, the node incidents of a cluster
    incident, what each receiver was last told, and every notification intended."""
    async with runtime.db.read() as session:
        row = await queries.get_incident(session, incident_id=incident_id)
        if row is None:
            raise HTTPException(404, f"no incident {incident_id}")
        alerts = await queries.incident_alerts(session, key=row.key)
        members = await queries.incident_members(session, key=row.key)
        states = await queries.incident_notify_states(session, key=row.key)
        notifications = await queries.incident_notifications(session, key=row.key)
        escalation = await escalations.load_escalation(session, row.key)
        return IncidentDetail(
            incident=IncidentRead.model_validate(row),
            alerts=[alert_read(a, runtime) for a in alerts],
            members=[IncidentRead.model_validate(m) for m in members],
            receivers=[NotifyStateRead.model_validate(s) for s in states],
            notifications=[NotificationRead.model_validate(n) for n in notifications],
            escalation=None if escalation is None else EscalationRead.model_validate(escalation),
        )

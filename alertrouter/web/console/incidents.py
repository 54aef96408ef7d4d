"""Console pages: the incident list with its filters, one incident with its trail, acknowledging it."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from alertrouter.gpu.faults import alert_xid, workload, workloads_text, xid_lines
from alertrouter.gpu.triage_words import triage_lines
from alertrouter.message.facts import NoData
from alertrouter.message.gpu_triage import GpuTriageFacts
from alertrouter.model import AlertStatus, IncidentKind
from alertrouter.store import console as store
from alertrouter.store import escalations, queries
from alertrouter.store.delivery import incident_ids
from alertrouter.store.tables import AlertRow, IncidentRow
from alertrouter.web import operations
from alertrouter.web.alerts import node_source
from alertrouter.web.console import views
from alertrouter.web.console.pages import Console, ConsoleDep, ConsoleIncidentId, read_form
from alertrouter.web.console.views import N_

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
PAGE_SIZE = 50
_STATUS = {"open": "firing", "resolved": "resolved", "all": None}


@router.get("/")
async def home() -> RedirectResponse:
    return RedirectResponse("/incidents", status_code=303)


def _row(row: IncidentRow, console: Console, times: store.AlertTimes | None) -> dict[str, Any]:
    return {
        "row": row,
        "state": views.incident_state(row),
        "grid": views.gpu_grid(row.summary or {}, console.tr) if row.kind == IncidentKind.NODE else [],
        "age": views.incident_age(row, console.now, console.tr, times),
        "started": views.incident_span(row, console.now, times)[0],
    }


@router.get("/incidents")
async def incident_list(
    console: ConsoleDep,
    status: Annotated[str, Query(pattern="^(open|resolved|all)$")] = "open",
    kind: Annotated[str, Query(pattern="^(|node|cluster)$")] = "",
    severity: Annotated[str, Query(max_length=64)] = "",
    region: Annotated[str, Query(max_length=store.CHOICE_MAX)] = "",
    node: Annotated[str, Query(max_length=256)] = "",
    page: Annotated[int, Query(ge=1, le=10_000)] = 1,
) -> HTMLResponse:
    f = store.IncidentFilter(
        status=_STATUS[status],
        kind=kind or None,
        severity=severity.strip() or None,
        region=region.strip() or None,
        node=node.strip() or None,
        node_label=console.runtime.ruleset.global_.node_label,
    )
    async with console.runtime.db.read() as session:
        rows, total = await store.list_incidents(session, f, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
        times = await store.alert_times(session, [r.key for r in rows])
    choices = await console.runtime.filter_choices.get(console.runtime.db)
    query = {"status": status, "kind": kind, "severity": severity, "region": region, "node": node}
    pages = max(1, -(-total // PAGE_SIZE))
    return console.page(
        "incidents",
        title=N_("Incidents"),
        incidents=[_row(r, console, times.get(r.key)) for r in rows],
        total=total,
        filters=query,
        choices=choices,
        page=page,
        pages=pages,
        prev_url=f"/incidents?{urlencode({**query, 'page': page - 1})}" if page > 1 else "",
        next_url=f"/incidents?{urlencode({**query, 'page': page + 1})}" if page < pages else "",
        node_label=f.node_label,
    )


def _sources(alerts: list[AlertRow], details: list[dict[str, Any]]) -> set[str]:
    """Fingerprints of the alerts that inhibit these or keep them stale (or did, in the trail)."""
    everything = [*details, *(a.decision_detail or {} for a in alerts)]
    return {str(d[k]) for d in everything for k in ("inhibited_by", "stale_source") if d.get(k)}


def _alert_states(alerts: list[AlertRow], sources: dict[str, AlertRow], console: Console) -> dict[str, str]:
    """Each alert's status as shown (`views.alert_state`): a stale one names the node whose source is down."""
    out = {}
    for a in alerts:
        source = sources.get(str((a.decision_detail or {}).get("stale_source", "")))
        node = (source.node if source is not None else None) or a.node or "?"
        out[a.fingerprint] = views.alert_state(console.tr, a.status, a.decision_detail, views.cap_text(node))
    return out


def _prefill_matchers(labels: dict[str, str], *, severity_label: str) -> list[str]:
    """The silence form's matchers: equality on the incident's labels, but none longer than a page shows
    (`views.VALUE_CAP`) and at most `views.LABELS_SHOWN`, so the form stays small enough to post back.
    Fewer matchers mute more; the person reads them in the form before silencing."""
    short = {name: value for name, value in labels.items() if len(value) <= views.VALUE_CAP}
    return operations.incident_matchers(short, severity_label=severity_label)[: views.LABELS_SHOWN]


def _faults(row: IncidentRow, alerts: list[AlertRow], console: Console) -> dict[str, Any]:
    """What the GPU alerts' labels say: each distinct XID with its GPUs, meaning and NVIDIA's action, and
    the workloads on the GPUs; of the firing alerts while the incident fires, of all once resolved."""
    current = [a for a in alerts if a.status == AlertStatus.FIRING] if row.status == AlertStatus.FIRING else alerts
    units = [(dict(a.labels), str(a.labels.get("gpu", ""))) for a in current]
    xids, xids_more = xid_lines(units, console.tr, console.language)
    triage = GpuTriageFacts.from_json((row.summary or {}).get("triage"))
    if triage is not None and row.status == AlertStatus.FIRING:  # the root and its follow-ons first, as messages
        xids = triage_lines(console.tr, console.language, triage) + xids
    return {
        "xids": xids,
        "xids_more": xids_more,
        "workloads": workloads_text([dict(a.labels) for a in current]),
        "alert_faults": {
            a.fingerprint: (alert_xid(a.labels, console.tr, console.language), workload(a.labels)) for a in alerts
        },
    }


def _node_sources(alerts: list[AlertRow], console: Console) -> dict[str, str]:
    """What named each alert's node (`label:Hostname`, `learned`...), as `GET /api/v1/alerts` says it."""
    nodes = console.runtime.engine.pipeline.nodes
    found = console.runtime.lookup.snapshot() if console.runtime.lookup is not None else nodes.discovered
    named = {a.fingerprint: (a.node and node_source(a.labels, a.node, nodes, found)) for a in alerts}
    return {fp: source for fp, source in named.items() if source}


@router.get("/incidents/{incident_id}")
async def incident_page(console: ConsoleDep, incident_id: ConsoleIncidentId) -> HTMLResponse:
    async with console.runtime.db.read() as session:
        row = await queries.get_incident(session, incident_id=incident_id)
        if row is None:
            return console.message(404, N_("Not found"), N_("There is no incident %(id)s."), id=incident_id)
        alerts = list(await queries.incident_alerts(session, key=row.key))
        members = await queries.incident_members(session, key=row.key)
        trail = await store.decision_trail(session, fingerprints=[a.fingerprint for a in alerts])
        messages = await store.incident_messages(session, key=row.key)
        deliveries = await store.incident_deliveries(session, incident_id=row.id)
        attempts = await store.attempts_for(session, [d.id for d in deliveries])
        sources = await store.alerts_by_fingerprint(session, _sources(alerts, [e.detail or {} for e in trail]))
        keys = {s.incident_key for s in sources.values() if s.incident_key}
        if (no_data := NoData.from_json(row.summary or {})) is not None:
            keys.add(no_data.source)  # the node-down incident that explains its gap in data
        if row.parent_key:
            keys.add(row.parent_key)
        ids = await incident_ids(session, keys)
        escalation = await escalations.load_escalation(session, row.key)
        times = await store.alert_times(session, [row.key, *(m.key for m in members)])
    severity_label = console.runtime.ruleset.global_.severity_label
    return console.page(
        "incident",
        title_text=views.incident_headline(console.tr, row, console.language),
        incident=row,
        state=views.incident_state(row),
        age=views.incident_age(row, console.now, console.tr, times.get(row.key)),
        started=views.incident_span(row, console.now, times.get(row.key))[0],
        grid=views.gpu_grid(row.summary or {}, console.tr) if row.kind == IncidentKind.NODE else [],
        alerts=alerts,
        alert_names={a.fingerprint: a for a in alerts},
        alert_states=_alert_states(alerts, sources, console),
        node_sources=_node_sources(alerts, console),
        members=[_row(m, console, times.get(m.key)) for m in members],
        trail=trail,
        messages=messages,
        deliveries=deliveries,
        attempts=attempts,
        sources=sources,
        incident_ids=ids,
        silence_matchers="\n".join(_prefill_matchers(row.labels, severity_label=severity_label)),
        decision_text=views.DECISION_TEXT,
        **_faults(row, alerts, console),
        escalation=escalation,
    )


@router.post("/incidents/{incident_id}/ack")
async def acknowledge(console: ConsoleDep, incident_id: ConsoleIncidentId) -> Response:
    principal = await console.writer(await read_form(console.request))
    row = await operations.acknowledge(console.runtime, incident_id=incident_id, by=principal.name)
    if row is None:
        return console.message(404, N_("Not found"), N_("There is no incident %(id)s."), id=incident_id)
    return RedirectResponse(f"/incidents/{incident_id}", status_code=303)

"""`/healthz` (the process answers), `/readyz` (store reachable, schema at head; in its detail, each
heartbeat's state) and `/metrics`."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from alertrouter.liveness.watch import how_to_be_heard
from alertrouter.model import AlertStatus, DeliveryStatus, OutboxStatus, utcnow
from alertrouter.runtime import Runtime, RuntimeDep
from alertrouter.store import STORE_ERRORS, queries
from alertrouter.store import delivery as delivery_store

__all__ = ["router"]

log = logging.getLogger(__name__)
router = APIRouter(tags=["ops"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(runtime: RuntimeDep) -> JSONResponse:
    try:
        async with runtime.db.read() as session:
            version = await queries.migration_version(session)
    except STORE_ERRORS as exc:
        runtime.metrics.db_errors.labels(operation="readyz").inc()
        return JSONResponse({"status": "unavailable", "reason": f"store unreachable: {type(exc).__name__}"}, 503)
    if version != runtime.head_revision:
        have = version or "nothing"
        reason = f"schema at {have}, expected {runtime.head_revision}: run `alertrouter db upgrade`"
        return JSONResponse({"status": "unavailable", "reason": reason}, 503)
    if stalled := runtime.loops.stalled():
        loops = ", ".join(f"{name} (no pass for {idle:g} s)" for name, idle in sorted(stalled.items()))
        return JSONResponse({"status": "unavailable", "reason": f"stalled: {loops}", "stalled": stalled}, 503)
    return JSONResponse({"status": "ready", "schema": version, **await _heartbeats(runtime)})


async def _heartbeats(runtime: Runtime) -> dict[str, Any]:
    """Each heartbeat's state (`ok`, `missing`, `waiting`) and a line for each one not ok. Neither makes
    the process unready: a replica taken out of service could not hear the source come (back)."""
    if runtime.heartbeats is None or not runtime.heartbeats.configs:
        return {}
    try:
        statuses = await runtime.heartbeats.statuses()
    except STORE_ERRORS as exc:
        runtime.metrics.db_errors.labels(operation="readyz").inc()
        return {"detail": [f"heartbeats unknown: store unreachable: {type(exc).__name__}"]}
    detail = []
    for s in statuses:
        name = s.config.name
        if s.waiting:
            how = how_to_be_heard(s.config)
            detail.append(f"heartbeat {name}: waiting, never heard from (nothing is raised until it is): {how}")
        elif s.missing and s.record.missing_since is not None:
            detail.append(f"heartbeat {name}: missing, silent since {s.record.missing_since.isoformat()}")
    return {"heartbeats": {s.config.name: s.state for s in statuses}, "detail": detail}


@router.get("/metrics")
async def metrics(runtime: RuntimeDep) -> Response:
    m = runtime.metrics
    runtime.loops.stalled()  # sets alertrouter_loop_stalled
    try:
        async with runtime.db.read() as session:
            counts = await queries.count_alerts_by_status(session)
            dead = await delivery_store.count_by_channel(session, status=DeliveryStatus.DEAD)
            states = await delivery_store.channel_states(session)
            quarantined = await delivery_store.count_outbox(session, status=OutboxStatus.QUARANTINED)
            quarantined_alerts = await queries.count_quarantined_alerts(session)
        m.quarantined.labels(kind="delivery").set(quarantined)  # outbox rows whose expansion raised
        m.quarantined.labels(kind="alert").set(quarantined_alerts)  # alerts the engine leaves out
        for state in AlertStatus:
            m.alerts.labels(state=state.value).set(counts.get(state.value, 0))
        now = utcnow()
        for cfg in runtime.ruleset.channels:
            row = states.get(cfg.name)
            m.dead_letters.labels(channel=cfg.name).set(dead.get(cfg.name, 0))
            m.channel_healthy.labels(channel=cfg.name).set(0 if row is not None and not row.healthy else 1)
            blocked = row is not None and row.blocked_until is not None and row.blocked_until > now
            m.channel_blocked.labels(channel=cfg.name).set(1 if blocked else 0)
    except STORE_ERRORS as exc:
        m.db_errors.labels(operation="metrics").inc()
        log.warning("metrics: could not count alerts: %s", exc)
    return Response(generate_latest(m.registry), media_type=CONTENT_TYPE_LATEST)

"""Console page: each channel's health and rate budget, and the dead letters to retry or discard."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from alertrouter.model import DeliveryStatus, OutboxStatus
from alertrouter.ruleset.build import unconfigured_channels
from alertrouter.ruleset.channels import RateLimitConfig
from alertrouter.store import console as store
from alertrouter.store import delivery
from alertrouter.web import operations
from alertrouter.web.console import views
from alertrouter.web.console.pages import ConsoleDeliveryId, ConsoleDep, read_form
from alertrouter.web.console.views import N_

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/channels")
async def channels_page(console: ConsoleDep) -> HTMLResponse:
    runtime = console.runtime
    unconfigured = set(unconfigured_channels(runtime.ruleset))
    rows: list[dict[str, Any]] = []
    async with runtime.db.read() as session:
        states = await delivery.channel_states(session)
        pending = await delivery.count_by_channel(session, status=DeliveryStatus.PENDING)
        dead_counts = await delivery.count_by_channel(session, status=DeliveryStatus.DEAD)
        for cfg in runtime.ruleset.channels:
            limit: RateLimitConfig | None = getattr(cfg, "rate_limit", None)
            per = limit.per if limit else timedelta(minutes=1)
            used = await delivery.attempts_since(session, channel=cfg.name, since=console.now - per)
            state = states.get(cfg.name)
            blocked = (
                state.blocked_until if state and state.blocked_until and state.blocked_until > console.now else None
            )
            rows.append(
                {
                    "name": cfg.name,
                    "type": cfg.type,
                    "configured": cfg.name not in unconfigured,
                    "healthy": state.healthy if state else True,
                    "blocked_until": blocked,
                    "failures": state.consecutive_failures if state else 0,
                    "last_error": state.last_error if state else None,
                    "last_ok_at": state.last_ok_at if state else None,
                    "used": used,
                    "limit": limit.messages if limit else None,
                    "per": per,
                    "pending": pending.get(cfg.name, 0),
                    "dead": dead_counts.get(cfg.name, 0),
                }
            )
        dead, dead_total = await delivery.list_deliveries(session, status=DeliveryStatus.DEAD, limit=100)
        quarantined, quarantined_total = await delivery.list_outbox(session, status=OutboxStatus.QUARANTINED, limit=100)
        attempts = await store.attempts_for(session, [d.id for d in dead])
    return console.page(
        "channels",
        title=N_("Channels"),
        channels=rows,
        dead=dead,
        dead_total=dead_total,
        attempts=attempts,
        headlines={d.id: views.delivery_headline(d.message, console.tr) for d in dead},
        quarantined=quarantined,
        quarantined_total=quarantined_total,
    )


@router.post("/deliveries/{delivery_id}/{action}")
async def dead_letter(console: ConsoleDep, delivery_id: ConsoleDeliveryId, action: str) -> Response:
    principal = await console.writer(await read_form(console.request))
    if action == operations.DeadLetterAction.RETRY:
        done = await operations.retry_dead_letter(console.runtime, delivery_id=delivery_id, by=principal.name)
    elif action == operations.DeadLetterAction.DISCARD:
        done = await operations.discard_dead_letter(console.runtime, delivery_id=delivery_id, by=principal.name)
    else:
        return console.message(404, N_("Not found"), N_("Dead letters can be retried or discarded."))
    if not done:
        return console.message(
            409, N_("Not a dead letter"), N_("Delivery %(id)s is not a dead letter (any more)."), id=delivery_id
        )
    return RedirectResponse("/channels", status_code=303)

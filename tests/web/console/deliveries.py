"""Delivery rows as the delivery loop leaves them, for pages and API writes that show or act on them."""

from __future__ import annotations

from datetime import timedelta

from alertrouter.model import utcnow
from alertrouter.runtime import Runtime
from alertrouter.store.tables import DeliveryAttemptRow, DeliveryRow

# One node incident's message as the engine stores it (`MessageSnapshot.to_json()`).
ITEM = {
    "incident": "gpu-by-node/GPUHighTemp/gpu-node-07",
    "kind": "node",
    "reason": "first",
    "status": "firing",
    "severity": "critical",
    "headline": "gpu-node-07: GPUHighTemp on 3/8 GPUs",
    "labels": {"alertname": "GPUHighTemp", "node": "gpu-node-07", "region": "north"},
    "summary": {  # with the facts `pipeline.incident.node_facts` states, which pages word headlines from
        "where": "gpu-node-07",
        "alertname": "GPUHighTemp",
        "units": ["0", "3", "5"],
        "units_total": 8,
        "unit_name": "",
        "alerts": 3,
        "firing": 3,
    },
    "alerts": [],
    "opened_at": "2026-11-21T10:00:00+00:00",
    "at": "2026-11-21T10:00:30+00:00",
}


async def add_delivery(
    runtime: Runtime,
    *,
    incident_id: int | None,
    key: str | None = None,
    status: str = "dead",
    channel: str = "dingtalk-core",
    errors: tuple[str, ...] = ("errcode 310000: keywords not in content",),
    unexpected_failures: int = 0,
) -> int:
    now = utcnow()
    async with runtime.db.write() as session:
        row = DeliveryRow(
            incident_key=key,
            incident_id=incident_id,
            receiver="oncall-core",
            channel=channel,
            kind="firing",
            severity="critical",
            severity_rank=0,
            message={"items": [ITEM], "mentions": {}, "recipients": []},  # the delivery loop's envelope
            status=status,
            attempts=len(errors),
            unexpected_failures=unexpected_failures,
            created_at=now - timedelta(minutes=5),
            next_attempt_at=now,
            last_error=errors[-1] if errors else None,
        )
        session.add(row)
        await session.flush()
        for i, error in enumerate(errors):
            session.add(
                DeliveryAttemptRow(
                    delivery_id=row.id,
                    channel=channel,
                    worker="test",
                    started_at=now - timedelta(seconds=20 * (len(errors) - i)),
                    finished_at=now - timedelta(seconds=20 * (len(errors) - i) - 1),
                    outcome="dead" if i == len(errors) - 1 else "retry",
                    error=error,
                )
            )
        await session.commit()
        return row.id

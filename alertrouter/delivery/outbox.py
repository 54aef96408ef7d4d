"""Pending outbox rows worked into deliveries, each row on its own: one whose expansion raises is
quarantined (marked with its error, never looked at again) instead of failing every pass for ever."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from alertrouter.delivery.expand import delivery_rows
from alertrouter.delivery.policy import Unexpected
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.model import OutboxStatus
from alertrouter.pipeline.oncall import Rota
from alertrouter.ruleset.channels import ChannelConfig
from alertrouter.ruleset.receivers import ReceiverConfig
from alertrouter.store import Database
from alertrouter.store import delivery as store

__all__ = ["Expansion", "expand_outbox"]

LIMIT = 500  # outbox rows per pass


@dataclass(slots=True)
class Expansion:
    """What one pass did: the deliveries it inserted, and the outbox rows it quarantined (id -> why)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    quarantined: dict[int, Exception] = field(default_factory=dict)


async def expand_outbox(
    db: Database,
    *,
    receivers: Mapping[str, ReceiverConfig],
    channels: Mapping[str, ChannelConfig],
    severities: Sequence[str],
    unconfigured: Sequence[str],
    secrets: Sequence[str],
    now: datetime,
    rota: Rota | None = None,
) -> Expansion:
    async with db.read() as session:
        pending = await store.pending_outbox(session, limit=LIMIT)
    done = Expansion()
    if not pending:
        return done
    snapshots: dict[int, MessageSnapshot] = {}
    for outbox in pending:
        try:
            snapshots[outbox.id] = MessageSnapshot.from_json(outbox.message)
        except Exception as exc:  # a malformed row is quarantined, the others go on
            done.quarantined[outbox.id] = exc
    fingerprints = [a.fingerprint for snapshot in snapshots.values() for a in snapshot.alerts]
    usable = [r for r in pending if r.id not in done.quarantined]
    with_channels = {r.id for r in usable if r.receiver in receivers and receivers[r.receiver].channels}
    without = [r.id for r in usable if r.id not in with_channels]
    async with db.write() as session:
        won = await store.claim_outbox(session, sorted(with_channels), status=OutboxStatus.DISPATCHED)
        await store.claim_outbox(session, without, status=OutboxStatus.NO_CHANNELS)
        details = await store.alert_details(session, fingerprints)
        ids = await store.incident_ids(session, [r.incident_key for r in usable])
        for outbox in usable:
            if outbox.id not in won:
                continue
            try:
                rows = delivery_rows(
                    outbox,
                    snapshots[outbox.id],
                    receivers[outbox.receiver],
                    channels,
                    severities=severities,
                    details=details,
                    incident_ids=ids,
                    unconfigured=unconfigured,
                    now=now,
                    rota=rota,
                )
            except Exception as exc:  # as above
                done.quarantined[outbox.id] = exc
            else:
                done.rows += rows
        await store.insert_deliveries(session, done.rows)
        await store.quarantine_outbox(
            session, {i: f"expansion failed: {Unexpected.of(e, secrets)}" for i, e in done.quarantined.items()}
        )
        await session.commit()
    return done

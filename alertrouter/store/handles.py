"""Core `Table` handles of the mapped rows, for the store's Core statements (one place instead of a cast
in every module), and the INSERT of the session's dialect (for ON CONFLICT clauses)."""

from __future__ import annotations

from typing import cast

from sqlalchemy import Insert, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.store.tables import (
    AlertChangeCounterRow,
    AlertEpisodeRow,
    AlertEventRow,
    AlertRow,
    ChannelStateRow,
    DeliveryAttemptRow,
    DeliveryRow,
    GpuEventRow,
    GpuRow,
    HeartbeatRow,
    IncidentRow,
    LeaseRow,
    MaintenanceRow,
    NodeAliasRow,
    NotifyStateRow,
    OutboxRow,
    RawEventRow,
    RecipientSendRow,
    RevokedSessionRow,
    ScheduledRunRow,
    SecretRow,
    SilenceRow,
    UsedTokenRow,
)

__all__ = [
    "alerts_t",
    "attempts_t",
    "change_counter_t",
    "channels_t",
    "deliveries_t",
    "episodes_t",
    "events_t",
    "gpu_events_t",
    "gpus_t",
    "heartbeats_t",
    "incidents_t",
    "insert_for",
    "leases_t",
    "maintenance_t",
    "node_aliases_t",
    "notify_t",
    "outbox_t",
    "raw_events_t",
    "revoked_t",
    "runs_t",
    "secrets_t",
    "sends_t",
    "silences_t",
    "tokens_t",
]

alerts_t = cast(Table, AlertRow.__table__)
change_counter_t = cast(Table, AlertChangeCounterRow.__table__)
attempts_t = cast(Table, DeliveryAttemptRow.__table__)
channels_t = cast(Table, ChannelStateRow.__table__)
deliveries_t = cast(Table, DeliveryRow.__table__)
episodes_t = cast(Table, AlertEpisodeRow.__table__)
events_t = cast(Table, AlertEventRow.__table__)
gpu_events_t = cast(Table, GpuEventRow.__table__)
gpus_t = cast(Table, GpuRow.__table__)
heartbeats_t = cast(Table, HeartbeatRow.__table__)
incidents_t = cast(Table, IncidentRow.__table__)
leases_t = cast(Table, LeaseRow.__table__)
maintenance_t = cast(Table, MaintenanceRow.__table__)
node_aliases_t = cast(Table, NodeAliasRow.__table__)
notify_t = cast(Table, NotifyStateRow.__table__)
outbox_t = cast(Table, OutboxRow.__table__)
raw_events_t = cast(Table, RawEventRow.__table__)
revoked_t = cast(Table, RevokedSessionRow.__table__)
runs_t = cast(Table, ScheduledRunRow.__table__)
secrets_t = cast(Table, SecretRow.__table__)
sends_t = cast(Table, RecipientSendRow.__table__)
silences_t = cast(Table, SilenceRow.__table__)
tokens_t = cast(Table, UsedTokenRow.__table__)


def insert_for(session: AsyncSession, table: Table) -> Insert:
    """`INSERT` for the session's database, with its `on_conflict_do_*` methods."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        return postgresql.insert(table)
    if dialect == "sqlite":
        return sqlite.insert(table)
    raise RuntimeError(f"unsupported database dialect {dialect!r}")

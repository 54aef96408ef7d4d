"""The schema: every table as a typed SQLAlchemy 2 class on one `Base`, whose metadata the migrations must match.

Importing this package defines every table on `Base.metadata` (what Alembic and `create_all` read), whichever
module of it a caller needs.
"""

from __future__ import annotations

from alertrouter.store.tables.access import LoginFailureRow, RevokedSessionRow, SecretRow, UsedTokenRow
from alertrouter.store.tables.alerts import AlertChangeCounterRow, AlertEpisodeRow, AlertEventRow, AlertRow, RawEventRow
from alertrouter.store.tables.base import Base, UTCDateTime
from alertrouter.store.tables.deliveries import ChannelStateRow, DeliveryAttemptRow, DeliveryRow, RecipientSendRow
from alertrouter.store.tables.gpus import GpuEventRow, GpuRow
from alertrouter.store.tables.incidents import (
    EscalationRow,
    IncidentRow,
    NodeAliasRow,
    NotifyStateRow,
    OutboxRow,
    SilenceRow,
)
from alertrouter.store.tables.jobs import JobHitRow
from alertrouter.store.tables.maintenance import MaintenanceRow
from alertrouter.store.tables.runs import HeartbeatRow, LeaseRow, ScheduledRunRow

__all__ = [
    "AlertChangeCounterRow",
    "AlertEpisodeRow",
    "AlertEventRow",
    "AlertRow",
    "Base",
    "ChannelStateRow",
    "DeliveryAttemptRow",
    "DeliveryRow",
    "EscalationRow",
    "GpuEventRow",
    "GpuRow",
    "HeartbeatRow",
    "IncidentRow",
    "JobHitRow",
    "LeaseRow",
    "LoginFailureRow",
    "MaintenanceRow",
    "NodeAliasRow",
    "NotifyStateRow",
    "OutboxRow",
    "RawEventRow",
    "RecipientSendRow",
    "RevokedSessionRow",
    "ScheduledRunRow",
    "SecretRow",
    "SilenceRow",
    "UTCDateTime",
    "UsedTokenRow",
]

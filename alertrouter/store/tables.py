"""The schema: every table as a typed SQLAlchemy 2 class on one `Base`, whose metadata the migrations must match."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

from alertrouter.model import KEY_MAX, NAME_MAX, OutboxStatus

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
    "HeartbeatRow",
    "IncidentRow",
    "LeaseRow",
    "LoginFailureRow",
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


class UTCDateTime(TypeDecorator[datetime]):
    """Stores naive UTC, returns aware UTC: SQLite has no time zones and PostgreSQL's we don't need."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is UTC:  # the common case, without the conversion
            return value.replace(tzinfo=None)
        if value.tzinfo is None:
            raise ValueError("naive datetime passed to the store")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is not None:  # not what the column holds; never shared (equal instants, other zones)
            return value.replace(tzinfo=UTC)
        # One object per instant read: the engine keeps four times per live alert, and the alerts of
        # one evaluation share them (100,000 live alerts held some 300 distinct instants, 440,000 copies).
        shared = _READ_TIMES.get(value)
        if shared is None:
            if len(_READ_TIMES) >= _READ_TIMES_MAX:
                _READ_TIMES.clear()  # a new start rather than an eviction order: refilled within a read
            shared = _READ_TIMES[value] = value.replace(tzinfo=UTC)
        return shared


_READ_TIMES: dict[datetime, datetime] = {}  # naive UTC as read -> the aware datetime handed out for it
_READ_TIMES_MAX = 4096


JSONType = JSON().with_variant(JSONB(), "postgresql")

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSONType,
        dict[str, str]: JSONType,
    }


class AlertRow(Base):
    """One row per fingerprint: its labels and its latest episode's state."""

    __tablename__ = "alerts"

    fingerprint: Mapped[str] = mapped_column(String(32), primary_key=True)
    alertname: Mapped[str] = mapped_column(String(NAME_MAX))  # no index: nothing reads by it (migration 0018)
    status: Mapped[str] = mapped_column(String(16), index=True)
    labels: Mapped[dict[str, str]]
    annotations: Mapped[dict[str, str]]
    starts_at: Mapped[datetime]
    ends_at: Mapped[datetime | None]
    resolved_by: Mapped[str | None] = mapped_column(String(16))
    generator_url: Mapped[str] = mapped_column(Text, default="")
    episodes: Mapped[int] = mapped_column(Integer, default=1)
    first_seen: Mapped[datetime]
    last_seen: Mapped[datetime]
    updated_at: Mapped[datetime] = mapped_column(index=True)
    # When we first received the current episode firing: hold-downs count from here, not from startsAt.
    fired_at: Mapped[datetime | None]
    # The engine's latest decision about this alert, and why (see alertrouter.engine).
    node: Mapped[str | None] = mapped_column(String(NAME_MAX))  # no index: nothing reads by it (migration 0018)
    incident_key: Mapped[str | None] = mapped_column(String(KEY_MAX), index=True)
    decision: Mapped[str | None] = mapped_column(String(32), index=True)
    decision_detail: Mapped[dict[str, Any] | None]
    decided_at: Mapped[datetime | None]
    # Set by the database on every insert and every update of `updated_at` (triggers of migration 0015),
    # never by this code: the engine reads changes by it (`store.incidents.change_cursor`).
    change_seq: Mapped[int | None] = mapped_column(BigInteger, index=True)


class AlertChangeCounterRow(Base):
    """SQLite's source of `alerts.change_seq` (one row, id 1); unused on PostgreSQL, where the
    sequence is the writing transaction's id."""

    __tablename__ = "alert_change_counter"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    value: Mapped[int] = mapped_column(BigInteger)


class AlertEpisodeRow(Base):
    """A firing period of one alert, identified by its `startsAt`; firing again is a new episode."""

    __tablename__ = "alert_episodes"
    __table_args__ = (UniqueConstraint("fingerprint", "starts_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    fingerprint: Mapped[str] = mapped_column(String(32))
    starts_at: Mapped[datetime]
    ends_at: Mapped[datetime | None]
    resolved_by: Mapped[str | None] = mapped_column(String(16))
    opened_at: Mapped[datetime]
    closed_at: Mapped[datetime | None]


class AlertEventRow(Base):
    """History: every state transition an alert went through, and which webhook caused it."""

    __tablename__ = "alert_events"
    __table_args__ = (
        Index("ix_alert_events_fingerprint_at", "fingerprint", "at"),
        Index("ix_alert_events_at", "at"),
        Index("ix_alert_events_raw_event_id", "raw_event_id"),  # pruning raw events nulls these
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    fingerprint: Mapped[str] = mapped_column(String(32))
    kind: Mapped[str] = mapped_column(String(32))
    at: Mapped[datetime]
    episode_starts_at: Mapped[datetime]
    raw_event_id: Mapped[int | None]
    detail: Mapped[dict[str, Any] | None]


class RawEventRow(Base):
    """Every distinct payload received, for audit and replay; bounded by the retention setting.

    `digest` covers the payload without `externalURL`, so the same notification from both
    Alertmanagers of an HA pair, or a retry, is stored once.
    """

    __tablename__ = "raw_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    received_at: Mapped[datetime] = mapped_column(index=True)
    source: Mapped[str] = mapped_column(String(16))
    receiver: Mapped[str | None] = mapped_column(String(NAME_MAX))
    group_key: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str | None] = mapped_column(String(16))
    external_url: Mapped[str | None] = mapped_column(Text)
    alert_count: Mapped[int] = mapped_column(Integer)
    truncated_alerts: Mapped[int] = mapped_column(Integer, default=0)
    rejected_alerts: Mapped[int] = mapped_column(Integer, default=0)
    # Written beside the rows' JSON document on PostgreSQL, not inside it (store/bulk.py `_pg_sql`).
    body: Mapped[str] = mapped_column(Text, info={"bulk": "apart"})


class IncidentRow(Base):
    """What a person is told about: a node incident (alerts of one kind on one node) or a cluster
    incident (a storm of node incidents). Reopened under the same key when its alerts fire again."""

    __tablename__ = "incidents"
    __table_args__ = (
        # the incident lists, read in order from these (store/console.py, store/queries.py)
        Index("ix_incidents_status_kind_updated", "status", "kind", "updated_at", "id"),
        Index("ix_incidents_status_updated", "status", "updated_at", "id"),
        # the acknowledged ones, which the engine reads every pass (store/incidents.load_acknowledged)
        Index(
            "ix_incidents_acknowledged",
            "status",
            "updated_at",
            sqlite_where=text("acknowledged_at IS NOT NULL"),
            postgresql_where=text("acknowledged_at IS NOT NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(KEY_MAX), unique=True)
    kind: Mapped[str] = mapped_column(String(16))  # node | cluster
    rule: Mapped[str] = mapped_column(String(NAME_MAX))
    status: Mapped[str] = mapped_column(String(16), index=True)  # firing | resolved
    severity: Mapped[str] = mapped_column(Text)  # a label value, as long as ingest allows
    headline: Mapped[str] = mapped_column(Text)
    labels: Mapped[dict[str, str]]
    summary: Mapped[dict[str, Any]]
    parent_key: Mapped[str | None] = mapped_column(String(KEY_MAX), index=True)
    opened_at: Mapped[datetime]
    active_since: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(index=True)
    resolved_at: Mapped[datetime | None]
    acknowledged_at: Mapped[datetime | None]
    acknowledged_by: Mapped[str | None] = mapped_column(String(NAME_MAX))


class NotifyStateRow(Base):
    """What each receiver was last told about each incident (Alertmanager's notification log)."""

    __tablename__ = "notify_state"

    incident_key: Mapped[str] = mapped_column(String(KEY_MAX), primary_key=True)
    receiver: Mapped[str] = mapped_column(String(NAME_MAX), primary_key=True)
    last_sent_at: Mapped[datetime]
    firing: Mapped[list[str]] = mapped_column(JSONType)
    repeats: Mapped[int] = mapped_column(Integer, default=0)
    since: Mapped[datetime | None]  # when the episode it was told of began (NotifyState.since)
    last_reason: Mapped[str] = mapped_column(String(16))


class OutboxRow(Base):
    """A notification intended for a receiver, written in the engine's transaction; delivered later.

    Statuses: pending (not yet expanded into deliveries), dispatched, no_channels, quarantined (its
    expansion raised; `last_error` says why, and no later pass looks at it again)."""

    __tablename__ = "outbox"
    __table_args__ = (Index("ix_outbox_status_next", "status", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    incident_key: Mapped[str] = mapped_column(String(KEY_MAX), index=True)
    receiver: Mapped[str] = mapped_column(String(NAME_MAX))
    reason: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime]
    message: Mapped[dict[str, Any]]
    status: Mapped[str] = mapped_column(String(16), default=OutboxStatus.PENDING.value)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime]
    last_error: Mapped[str | None] = mapped_column(Text)
    sent_at: Mapped[datetime | None]


class LeaseRow(Base):
    """Leadership among replicas: one engine pass at a time over a shared database."""

    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(128))
    expires_at: Mapped[datetime]


class DeliveryRow(Base):
    """One notification for one channel: what the delivery loop claims, sends, retries and records.

    Statuses: pending (due at `next_attempt_at`), sending (claimed until `claimed_until`; a crashed
    worker's claim expires and the row is retried), sent (the vendor said ok), dead (permanent failure
    or gave up: a dead letter), coalesced / failed_over (merged into, or moved to, `parent_id`),
    split (a coalesced message that failed unexpectedly; its members went back to pending, each to be
    sent alone), unconfigured (the channel has no credentials in this deployment).
    """

    __tablename__ = "deliveries"
    __table_args__ = (Index("ix_deliveries_channel_status_next", "channel", "status", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    outbox_id: Mapped[int | None] = mapped_column(ForeignKey("outbox.id", ondelete="SET NULL"), index=True)
    parent_id: Mapped[int | None] = mapped_column(Integer, index=True)
    incident_key: Mapped[str | None] = mapped_column(String(KEY_MAX), index=True)
    incident_id: Mapped[int | None] = mapped_column(Integer)
    receiver: Mapped[str] = mapped_column(String(NAME_MAX))
    channel: Mapped[str] = mapped_column(String(NAME_MAX))
    kind: Mapped[str] = mapped_column(String(16))
    severity: Mapped[str] = mapped_column(Text)  # a label value, as long as ingest allows
    severity_rank: Mapped[int] = mapped_column(Integer)
    message: Mapped[dict[str, Any]]
    status: Mapped[str] = mapped_column(String(16), index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime]
    next_attempt_at: Mapped[datetime]
    claimed_until: Mapped[datetime | None]
    sent_at: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    # Failures that were not the vendor's (an exception other than ChannelError): a delivery with one
    # is sent alone, never coalesced, and is a dead letter after `delivery.policy.MAX_UNEXPECTED`.
    unexpected_failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class DeliveryAttemptRow(Base):
    """One request to a vendor, written before it is made (`in_flight`) and completed after; the rate
    budget of a robot is counted from these rows, so every replica sees the same budget."""

    __tablename__ = "delivery_attempts"
    __table_args__ = (Index("ix_delivery_attempts_channel_started", "channel", "started_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    delivery_id: Mapped[int] = mapped_column(ForeignKey("deliveries.id", ondelete="CASCADE"), index=True)
    channel: Mapped[str] = mapped_column(String(NAME_MAX))
    worker: Mapped[str] = mapped_column(String(128))
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    outcome: Mapped[str] = mapped_column(String(16))  # in_flight | sent | retry | rate_limited | dead | lost
    error: Mapped[str | None] = mapped_column(Text)


class ChannelStateRow(Base):
    """Per channel: which replica works it now (a lease), whether the vendor blocked it, its health."""

    __tablename__ = "channel_state"

    name: Mapped[str] = mapped_column(String(NAME_MAX), primary_key=True)
    holder: Mapped[str | None] = mapped_column(String(128))
    lease_until: Mapped[datetime | None]
    blocked_until: Mapped[datetime | None]
    retry_at: Mapped[datetime | None]
    coalesce_backlog: Mapped[bool] = mapped_column(Boolean, default=False)
    healthy: Mapped[bool] = mapped_column(Boolean, default=True)
    consecutive_failures: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    last_ok_at: Mapped[datetime | None]
    last_failure_at: Mapped[datetime | None]


class RecipientSendRow(Base):
    """Messages sent per recipient (SMS numbers), for the per-number daily cap."""

    __tablename__ = "recipient_sends"
    __table_args__ = (Index("ix_recipient_sends_channel_recipient_sent", "channel", "recipient", "sent_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    channel: Mapped[str] = mapped_column(String(NAME_MAX))
    recipient: Mapped[str] = mapped_column(String(NAME_MAX))
    sent_at: Mapped[datetime]


class SilenceRow(Base):
    """Alertmanager-style silence: alerts whose labels match every matcher are muted between
    `starts_at` and `ends_at`. Expiring one early sets `ends_at`; `updated_at` tells the engine."""

    __tablename__ = "silences"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    matchers: Mapped[list[str]] = mapped_column(JSONType)  # each in Alertmanager syntax: node="gpu-node-07"
    starts_at: Mapped[datetime]
    ends_at: Mapped[datetime] = mapped_column(index=True)
    created_by: Mapped[str] = mapped_column(String(NAME_MAX))
    comment: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime] = mapped_column(index=True)


class ScheduledRunRow(Base):
    """One run of a scheduled job for one period (a digest for one receiver and week), claimed with an
    insert or a conditional update so two schedulers, even two leaders, never both do it. `running`
    with an expired `claimed_until` is a crashed run, claimable again; `done` is final."""

    __tablename__ = "scheduled_runs"
    __table_args__ = (UniqueConstraint("job", "period"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job: Mapped[str] = mapped_column(String(KEY_MAX))  # `digest:<receiver>`, `housekeeping`
    period: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16))  # running | done | failed
    holder: Mapped[str] = mapped_column(String(128))
    claimed_until: Mapped[datetime]
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    error: Mapped[str | None] = mapped_column(Text)
    detail: Mapped[dict[str, Any] | None]


class UsedTokenRow(Base):
    """Signed action links already used: a link works once, and only until it expires."""

    __tablename__ = "used_tokens"

    nonce: Mapped[str] = mapped_column(String(64), primary_key=True)
    action: Mapped[str] = mapped_column(String(16))
    incident_id: Mapped[int] = mapped_column(Integer)
    used_at: Mapped[datetime]
    expires_at: Mapped[datetime] = mapped_column(index=True)


class SecretRow(Base):
    """Secrets the service makes for itself (the key that signs links and sessions when
    ALERTROUTER_SECRET_KEY is unset), shared by every replica through the store."""

    __tablename__ = "secrets"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]


class RevokedSessionRow(Base):
    """Console sessions ended by a logout before their cookie expired. The cookie is signed, not stored,
    so only this row can refuse it: every replica looks here, and a restart forgets nothing. A row is
    needed only until the session would have expired anyway (`expires_at`), then it is pruned."""

    __tablename__ = "revoked_sessions"

    session_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    username: Mapped[str] = mapped_column(String(NAME_MAX))
    revoked_at: Mapped[datetime]
    expires_at: Mapped[datetime] = mapped_column(index=True)


class NodeAliasRow(Base):
    """An address learned to be a node, from an alert that carried both (`pipeline.aliases`): written
    by the engine's leader, read by every replica when it takes the lease, and by the API. Rows not
    seen for `topology.learned_alias_ttl` are ignored, then pruned by housekeeping (`last_seen`)."""

    __tablename__ = "node_aliases"

    address: Mapped[str] = mapped_column(String(NAME_MAX), primary_key=True)
    node: Mapped[str] = mapped_column(String(NAME_MAX), index=True)
    first_seen: Mapped[datetime]
    last_seen: Mapped[datetime] = mapped_column(index=True)
    learned_from: Mapped[str] = mapped_column(String(NAME_MAX))  # the alertname of the alert last seen claiming it
    fingerprint: Mapped[str] = mapped_column(String(32))  # and that alert
    # A conflict (the address claimed by another name, which won as the most recent claim): the name
    # it had, and when it changed.
    previous_node: Mapped[str | None] = mapped_column(String(NAME_MAX))
    changed_at: Mapped[datetime | None]
    # A move to another name held until a second alert or the Prometheus lookup agrees (`aliases.Held`):
    # the name, the one alert claiming it, and since when.
    held_node: Mapped[str | None] = mapped_column(String(NAME_MAX))
    held_from: Mapped[str | None] = mapped_column(String(NAME_MAX))
    held_fingerprint: Mapped[str | None] = mapped_column(String(32))
    held_since: Mapped[datetime | None]


# --- Escalation (oncall.escalations, engine/escalation.py) ---


class EscalationRow(Base):
    """Where an incident's escalation chain stands: the next step to take and when, or why it stopped.
    Written by the engine's leader under its lease, step by step (a step is taken with a conditional
    update on `next_step`), so a restart or another replica taking over neither repeats nor skips one.
    One row per chain: a new occurrence of the incident (it resolved and fired again) starts a new one;
    at most one chain per incident is running (`stopped` null). `history` is what was done, in order:
    steps taken (with their receivers) and the stop."""

    __tablename__ = "escalations"
    __table_args__ = (Index("ix_escalations_incident_started", "incident_key", "started_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    incident_key: Mapped[str] = mapped_column(String(KEY_MAX))
    policy: Mapped[str] = mapped_column(String(NAME_MAX))
    started_at: Mapped[datetime]
    next_step: Mapped[int] = mapped_column(Integer, default=0)
    steps: Mapped[int] = mapped_column(Integer)  # how many the policy had when the chain started
    next_at: Mapped[datetime | None] = mapped_column(index=True)
    stopped: Mapped[str | None] = mapped_column(
        String(16), index=True
    )  # acknowledged | resolved | exhausted | policy_gone
    stopped_at: Mapped[datetime | None]
    stopped_by: Mapped[str | None] = mapped_column(String(NAME_MAX))
    history: Mapped[list[dict[str, Any]]] = mapped_column(JSONType)
    updated_at: Mapped[datetime]


# Source liveness: heartbeats (`alertrouter.liveness`)


class HeartbeatRow(Base):
    """When each configured heartbeat (`heartbeats:` in the rules) was last heard from, shared by every
    replica and kept across restarts. `missing_since` is set while its alert is raised (the time it fell
    silent), so a restart neither forgets a silence nor raises it twice; a row whose heartbeat left the
    rules stays (a heartbeat put back resumes from it)."""

    __tablename__ = "heartbeats"

    name: Mapped[str] = mapped_column(String(NAME_MAX), primary_key=True)
    watched_since: Mapped[datetime]  # first watched: a heartbeat never heard from is silent since then
    last_seen: Mapped[datetime | None]
    seen_via: Mapped[str | None] = mapped_column(String(16))  # "alert" or "http"
    missing_since: Mapped[datetime | None]
    alert_labels: Mapped[dict[str, str] | None]  # the raised alert's labels (to resolve it if the rules change)


# --- Console login limits (`alertrouter.web.logins`) ---


class LoginFailureRow(Base):
    """Failed console logins counted per user name (`scope` account) and per client address (`scope`
    address), shared by every replica so that spreading guesses over them gains nothing. An attempt is
    counted before its password is checked (a success takes it back), so parallel guesses cannot pass
    the limit. `failures` is the count of the window begun at `window_start`; reaching the limit sets
    `locked_until` and starts `lockouts`, the streak that makes each further lock longer. Rows quiet for
    a day and unlocked are pruned by housekeeping (`updated_at`)."""

    __tablename__ = "login_failures"

    scope: Mapped[str] = mapped_column(String(16), primary_key=True)  # account | address
    subject: Mapped[str] = mapped_column(String(NAME_MAX), primary_key=True)  # the user name (cut), or the address
    failures: Mapped[int] = mapped_column(Integer)
    window_start: Mapped[datetime]
    locked_until: Mapped[datetime | None]
    lockouts: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(index=True)

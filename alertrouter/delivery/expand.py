"""Delivery rows: from an outbox row (one per channel of its receiver), several merged into one
(coalesced), one moved to a failover channel; and the `Notification` a row is sent as."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from alertrouter.auth.links import Action, action_link
from alertrouter.auth.signing import Signer
from alertrouter.channels.base import Mentions, MessageKind, Notification, runbook_link
from alertrouter.delivery.plan import message_kind
from alertrouter.message.i18n import ANNOTATION_VARIANTS, Locale
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.model import DeliveryStatus
from alertrouter.pipeline.aggregate import severity_rank
from alertrouter.pipeline.oncall import Rota
from alertrouter.ruleset.channels import ChannelConfig
from alertrouter.ruleset.receivers import ReceiverChannelConfig, ReceiverConfig
from alertrouter.store.tables import DeliveryRow, OutboxRow

__all__ = [
    "MAX_ANNOTATION",
    "ActionLinks",
    "coalesced_row",
    "delivery_rows",
    "enrich",
    "failover_row",
    "notification_of",
]

MAX_ANNOTATION = 2048  # characters kept per annotation in a stored message; templates cap again
_ANNOTATIONS = ("summary", "description", "runbook_url", "dashboard", *ANNOTATION_VARIANTS)


def enrich(snapshot: MessageSnapshot, details: Mapping[str, tuple[dict[str, str], datetime]]) -> MessageSnapshot:
    """The engine's snapshot plus what a message shows and the engine does not load: each alert's
    annotations (summary, description, runbook) and start time."""
    alerts = []
    for alert in snapshot.alerts:
        found = details.get(alert.fingerprint)
        if found is not None:
            annotations, starts_at = found
            notes = {k: v[:MAX_ANNOTATION] for k, v in annotations.items() if k in _ANNOTATIONS}
            alert = replace(alert, annotations=notes, starts_at=starts_at)
        alerts.append(alert)
    return replace(snapshot, alerts=tuple(alerts))


def delivery_rows(
    outbox: OutboxRow,
    message: MessageSnapshot,
    receiver: ReceiverConfig,
    channels: Mapping[str, ChannelConfig],
    *,
    severities: Sequence[str],
    details: Mapping[str, tuple[dict[str, str], datetime]],
    incident_ids: Mapping[str, int],
    unconfigured: Sequence[str],
    now: datetime,
    rota: Rota | None = None,
) -> list[dict[str, Any]]:
    """The deliveries of one outbox row (whose `message` is read as `message`): one per channel its
    receiver names that takes this message (a voice channel calls nobody about a resolved incident).
    Whoever is on call for the schedules a channel names is looked up for the moment the engine decided
    the message, and recorded with the delivery (`oncall`)."""
    snapshot = enrich(message, details)
    rows = []
    for ref in receiver.channels:
        channel = channels.get(ref.channel)
        if channel is None or not channel.wants(resolved=snapshot.resolved, reason=snapshot.reason):
            continue
        # the channel's own `to` is the default when the receiver names no one (no `to`, no `oncall`)
        default = [] if ref.oncall else list(getattr(channel, "to", []) or [])
        recipients = [r for r in (list(ref.to) or default) if r]
        mentions = ref.mentions
        mobiles, user_ids = list(mentions.mobiles), list(mentions.user_ids)
        oncall: list[dict[str, str]] = []
        if rota is not None and (ref.oncall or mentions.oncall):
            oncall = _on_call(rota, ref, channel.type, outbox.created_at, recipients, mobiles, user_ids)
        body = {
            "items": [snapshot.to_json()],
            "mentions": {"mobiles": mobiles, "user_ids": user_ids, "all": mentions.all},
            "recipients": recipients,
        } | ({"oncall": oncall} if oncall else {})
        configured = channel.name not in unconfigured
        rows.append(
            _row(
                outbox,
                snapshot,
                channel.name,
                body,
                configured,
                incident_ids=incident_ids,
                severities=severities,
                now=now,
            )
        )
    return rows


def _on_call(
    rota: Rota,
    ref: ReceiverChannelConfig,
    channel_type: str,
    at: datetime,
    recipients: list[str],
    mobiles: list[str],
    user_ids: list[str],
) -> list[dict[str, str]]:
    """Who is on call at `at` for the schedules `ref` mentions (added to `mobiles` and the chat's
    `user_ids`) and sends to (added to `recipients`: an address by email, else a mobile); each as the
    delivery records them."""
    oncall: list[dict[str, str]] = []
    for schedule, person in rota.people_on_call(ref.mentions.oncall, at):
        oncall.append({"schedule": schedule, "person": person.name, "name": person.label})
        _add(mobiles, person.mobile)
        _add(user_ids, person.wecom if channel_type == "wecom" else person.dingtalk)
    for schedule, person in rota.people_on_call(ref.oncall, at):
        oncall.append({"schedule": schedule, "person": person.name, "name": person.label})
        _add(recipients, person.email if channel_type == "email" else person.mobile)
    return oncall


def _row(
    outbox: OutboxRow,
    snapshot: MessageSnapshot,
    channel: str,
    body: dict[str, Any],
    configured: bool,
    *,
    incident_ids: Mapping[str, int],
    severities: Sequence[str],
    now: datetime,
) -> dict[str, Any]:
    """A delivery of `outbox`'s message `body` on `channel`, due `now`: pending, or never sent when the
    channel is not `configured` (no credentials in this deployment)."""
    return {
        "outbox_id": outbox.id,
        "parent_id": None,
        "incident_key": outbox.incident_key,
        "incident_id": incident_ids.get(outbox.incident_key),
        "receiver": outbox.receiver,
        "channel": channel,
        "kind": message_kind(snapshot).value,
        "severity": snapshot.severity,
        "severity_rank": severity_rank(snapshot.severity, severities),
        "message": body,
        "status": DeliveryStatus.PENDING if configured else DeliveryStatus.UNCONFIGURED,
        "attempts": 0,
        "created_at": outbox.created_at,
        "next_attempt_at": now,
        "claimed_until": None,
        "sent_at": None,
        "last_error": None if configured else "the channel has no credentials in this deployment",
    }


def _add(values: list[str], value: str) -> None:
    if value and value not in values:
        values.append(value)


def coalesced_row(members: Sequence[DeliveryRow], now: datetime) -> dict[str, Any]:
    """One delivery standing for several of one channel: their items worst severity first, mentions
    and recipients merged (first seen first), created when the oldest was (for the latency metric)."""
    ordered = sorted(members, key=lambda m: m.severity_rank)  # stable: oldest first within a severity
    mobiles: dict[str, None] = {}
    user_ids: dict[str, None] = {}
    recipients: dict[str, None] = {}
    for m in members:
        mentions = m.message.get("mentions", {})
        mobiles.update(dict.fromkeys(mentions.get("mobiles", [])))
        user_ids.update(dict.fromkeys(mentions.get("user_ids", [])))
        recipients.update(dict.fromkeys(m.message.get("recipients", [])))
    worst = ordered[0]
    receivers = {m.receiver for m in members}
    return {
        "outbox_id": None,
        "parent_id": None,
        "incident_key": None,
        "incident_id": None,
        "receiver": receivers.pop() if len(receivers) == 1 else "(several)",
        "channel": worst.channel,
        "kind": MessageKind.COALESCED.value,
        "severity": worst.severity,
        "severity_rank": worst.severity_rank,
        "message": {
            "items": [item for m in ordered for item in m.message.get("items", [])],
            "mentions": {
                "mobiles": list(mobiles),
                "user_ids": list(user_ids),
                "all": any(m.message.get("mentions", {}).get("all") for m in members),
            },
            "recipients": list(recipients),
            "members": [m.id for m in members],
        },
        "status": DeliveryStatus.PENDING,
        "attempts": 0,
        "created_at": min(m.created_at for m in members),
        "next_attempt_at": now,
        "claimed_until": None,
        "sent_at": None,
        "last_error": None,
    }


_KEPT_ON_FAILOVER = ("outbox_id", "incident_key", "incident_id", "receiver", "kind", "severity", "severity_rank")


def failover_row(row: DeliveryRow, channel: str, now: datetime) -> dict[str, Any]:
    """A copy of a pending delivery for the failover channel, marked so it is never moved again."""
    return {c: getattr(row, c) for c in _KEPT_ON_FAILOVER} | {
        "parent_id": None,
        "channel": channel,
        "message": {**row.message, "failed_over_from": row.channel},
        "status": DeliveryStatus.PENDING,
        "attempts": 0,
        "created_at": row.created_at,
        "next_attempt_at": now,
        "claimed_until": None,
        "sent_at": None,
        "last_error": None,
    }


# Messages about something still firing: what a person may want to acknowledge or silence.
_ACTIONABLE = frozenset({MessageKind.FIRING, MessageKind.UPDATE, MessageKind.CLUSTER})


@dataclass(frozen=True, slots=True)
class ActionLinks:
    """How a message's acknowledge/silence links are made: signed with the link key, working for `ttl`
    from the moment the message is sent; `silence` is how long the silence link silences (its label)."""

    signer: Signer
    ttl: timedelta
    silence: timedelta


def notification_of(
    row: DeliveryRow,
    recipients: Sequence[str],
    *,
    base_url: str,
    now: datetime,
    actions: ActionLinks | None = None,
    locale: Locale | None = None,
    runbook_hosts: Sequence[str] = (),
) -> Notification:
    """What a channel is given for a delivery row; the link leads to the incident (or, for a
    coalesced message, to the firing incidents), when alertrouter's external URL is known.

    A message about one firing incident also gets acknowledge/silence links when `actions` and the
    external URL exist. They are made here, at send time, so every delivery (and every retry of one)
    carries its own nonces and its links expire `actions.ttl` after it was sent, not after it was queued.
    """
    mentions = row.message.get("mentions", {})
    items = tuple(MessageSnapshot.from_json(item) for item in row.message.get("items", []))
    path = f"/incidents/{row.incident_id}" if row.incident_id is not None else "/incidents?status=firing"
    kind = MessageKind(row.kind)
    ack = silence = None
    silence_for = None
    if actions is not None and base_url and row.incident_id is not None and kind in _ACTIONABLE:
        ack = action_link(actions.signer, base_url, Action.ACK, row.incident_id, now=now, ttl=actions.ttl)
        silence = action_link(actions.signer, base_url, Action.SILENCE, row.incident_id, now=now, ttl=actions.ttl)
        silence_for = actions.silence
    return Notification(
        kind=kind,
        receiver=row.receiver,
        severity=row.severity,
        items=items,
        link=base_url + path if base_url else None,
        mentions=Mentions(
            mobiles=tuple(mentions.get("mobiles", [])),
            user_ids=tuple(mentions.get("user_ids", [])),
            all=bool(mentions.get("all")),
        ),
        recipients=tuple(recipients),
        created_at=row.created_at,
        delivery_id=row.id,
        ack_link=ack,
        silence_link=silence,
        silence_for=silence_for,
        locale=locale,
        runbook_link=runbook_link(items, runbook_hosts),
    )

"""Outbox rows (one per incident and receiver) into deliveries (one per channel of the receiver)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from alertrouter.delivery.plan import message_kind, severity_rank
from alertrouter.ruleset import Ruleset

__all__ = ["MAX_ANNOTATION", "delivery_rows", "enrich"]

MAX_ANNOTATION = 2048  # characters kept per annotation in a stored message; templates cap again
_ANNOTATIONS = ("summary", "description", "runbook_url", "dashboard")


def enrich(snapshot: Mapping[str, Any], details: Mapping[str, tuple[dict[str, str], datetime]]) -> dict[str, Any]:
    """The engine's snapshot plus what a message shows and the engine does not load: each alert's
    annotations (summary, description, runbook) and start time."""
    alerts = []
    for alert in snapshot.get("alerts", []):
        found = details.get(alert.get("fingerprint", ""))
        if found is not None:
            annotations, starts_at = found
            alert = {
                **alert,
                "annotations": {k: v[:MAX_ANNOTATION] for k, v in annotations.items() if k in _ANNOTATIONS},
                "starts_at": starts_at.isoformat(),
            }
        alerts.append(alert)
    return {**snapshot, "alerts": alerts}


def delivery_rows(
    outbox: Any,
    ruleset: Ruleset,
    *,
    details: Mapping[str, tuple[dict[str, str], datetime]],
    incident_ids: Mapping[str, int],
    unconfigured: Sequence[str],
    now: datetime,
) -> list[dict[str, Any]]:
    """The deliveries of one outbox row: one per channel its receiver names (none for a receiver
    without channels, such as the weekly digest's)."""
    receiver = next((r for r in ruleset.receivers if r.name == outbox.receiver), None)
    if receiver is None:
        return []
    channels = {c.name: c for c in ruleset.channels}
    snapshot = enrich(outbox.message, details)
    severities = ruleset.global_.severities
    rows = []
    for ref in receiver.channels:
        channel = channels.get(ref.channel)
        if channel is None:
            continue
        recipients = [r for r in (list(ref.to) or list(getattr(channel, "to", []) or [])) if r]
        mentions = ref.mentions
        rows.append(
            {
                "outbox_id": outbox.id,
                "parent_id": None,
                "incident_key": outbox.incident_key,
                "incident_id": incident_ids.get(outbox.incident_key),
                "receiver": outbox.receiver,
                "channel": channel.name,
                "kind": message_kind(snapshot).value,
                "severity": str(snapshot.get("severity", "")),
                "severity_rank": severity_rank(str(snapshot.get("severity", "")), severities),
                "message": {
                    "items": [snapshot],
                    "mentions": {"mobiles": mentions.mobiles, "user_ids": mentions.user_ids, "all": mentions.all},
                    "recipients": recipients,
                },
                "status": "unconfigured" if channel.name in unconfigured else "pending",
                "attempts": 0,
                "created_at": outbox.created_at,
                "next_attempt_at": now,
                "claimed_until": None,
                "sent_at": None,
                "last_error": "the channel has no credentials in this deployment"
                if channel.name in unconfigured
                else None,
            }
        )
    return rows

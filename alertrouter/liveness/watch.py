"""When a heartbeat counts as lost or back, and the alert alertrouter raises for it: pure, no I/O.

A heartbeat falls silent at its last sighting (or, never heard from, when it was first watched) and is
lost once silent for its `timeout`. The timeout is counted from this process's start at the earliest:
after alertrouter itself was down (or restarted), the sources that kept sending meanwhile have had no
one to send to, and each needs one re-send to be heard again; counting from the last sighting would
page "monitoring is blind" for every source at every restart longer than a timeout. The price: a source
that died while alertrouter was down is found `timeout` after the start, not at it. A loss already
raised before the restart is stored (`missing_since`) and stays raised until the source is heard.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from alertrouter import i18n
from alertrouter.fingerprints import fingerprint
from alertrouter.i18n import Locale
from alertrouter.ingest.batch import IngestBatch
from alertrouter.labels import MatchType
from alertrouter.model import HEARTBEAT_ALERTNAME, HEARTBEAT_LABEL, AlertStatus
from alertrouter.ruleset.heartbeats import HeartbeatConfig
from alertrouter.store.heartbeats import HeartbeatRecord
from alertrouter.transitions import IncomingAlert

__all__ = [
    "SOURCE",
    "Heard",
    "Step",
    "blind_alert",
    "blind_labels",
    "deadline",
    "heard",
    "silent_since",
    "step",
]

SOURCE = "heartbeat"  # the ingest source of the raised alerts (raw events, history)


class Step(enum.Enum):
    NONE = "none"  # heard in time, nothing raised
    RAISE = "raise"  # silent past its timeout: raise its alert
    KEEP = "keep"  # raised and still silent: the alert stays firing (re-sent, as a source re-sends)
    RESOLVE = "resolve"  # raised and heard from since: resolve it


def silent_since(record: HeartbeatRecord) -> datetime:
    return record.last_seen or record.watched_since


def deadline(record: HeartbeatRecord, config: HeartbeatConfig, started: datetime) -> datetime:
    """When the heartbeat is lost unless heard from before (see the module's docstring for `started`)."""
    return max(silent_since(record), started) + config.timeout


def step(record: HeartbeatRecord, config: HeartbeatConfig, *, started: datetime, now: datetime) -> Step:
    if record.missing_since is None:
        return Step.RAISE if now >= deadline(record, config, started) else Step.NONE
    if record.last_seen is not None and record.last_seen > record.missing_since:
        return Step.RESOLVE
    return Step.KEEP


@dataclass(frozen=True, slots=True)
class Heard:
    """A payload's alerts sorted out: which heartbeats a firing alert refreshed, and the alerts that are no
    heartbeat's. A heartbeat's alert that is resolved (Alertmanager resolves a Watchdog Prometheus stopped
    sending) refreshes nothing, and is no incident either: it is left out as well."""

    names: frozenset[str]
    others: list[IncomingAlert]
    beats: int  # the alerts left out


def heard(configs: Sequence[HeartbeatConfig], alerts: Iterable[IncomingAlert]) -> Heard:
    names: set[str] = set()
    others: list[IncomingAlert] = []
    beats = 0
    only = _alertnames(configs)
    for alert in alerts:
        if only is not None and alert.labels.get("alertname", "") not in only:
            others.append(alert)  # no heartbeat's: most of every payload, told apart by one lookup
            continue
        matched = [c.name for c in configs if c.matches(alert.labels)]
        if not matched:
            others.append(alert)
            continue
        beats += 1
        if alert.status is AlertStatus.FIRING:
            names.update(matched)
    return Heard(frozenset(names), others, beats)


def _alertnames(configs: Sequence[HeartbeatConfig]) -> frozenset[str] | None:
    """The alertnames a heartbeat's alert has, when each heartbeat names one (`alertname="Watchdog"`,
    as the shipped one does); None when one matches alertnames otherwise (a regex, or none at all)."""
    names: set[str] = set()
    for config in configs:
        if not config.matchers:
            continue  # refreshed over HTTP only: matches no alert
        named = [m.value for m in config.matchers if m.name == "alertname" and m.type is MatchType.EQ]
        if not named:
            return None
        names.add(named[0])
    return frozenset(names)


def _clock_text(at: datetime, zone: str) -> str:
    """`10:42 CST`: the same text at every re-send (a text that changed with the day would be an
    annotation change to store each time)."""
    return at.astimezone(ZoneInfo(zone)).strftime("%H:%M %Z")


def blind_labels(config: HeartbeatConfig) -> dict[str, str]:
    """The labels of the alert raised for `config`: every raise of one heartbeat is the same alert."""
    return {**config.labels, "alertname": HEARTBEAT_ALERTNAME, HEARTBEAT_LABEL: config.name}


def blind_alert(
    labels: dict[str, str],
    since: datetime,
    *,
    locale: Locale,
    description: str = "",
    resolved_at: datetime | None = None,
) -> IngestBatch:
    """The payload of alertrouter's own alert (`blind_labels`) for a heartbeat silent since `since`:
    firing, or resolved at `resolved_at` (when it was heard again). `startsAt` is `since`, so each
    silence is one episode, and a re-send (by this replica or another) changes nothing. The stored
    summary is in `global.language`; messages word it in each receiver's language (`render.context`)."""
    name = labels.get(HEARTBEAT_LABEL, "")
    summary = i18n.blind_text(i18n.translations(locale.language), name, _clock_text(since, locale.timezone))
    annotations = {"summary": summary}
    if description:
        annotations["description"] = description
    alert = IncomingAlert(
        fingerprint=fingerprint(labels),
        labels=labels,
        annotations=annotations,
        status=AlertStatus.FIRING if resolved_at is None else AlertStatus.RESOLVED,
        starts_at=since,
        ends_at=resolved_at,
    )
    body = json.dumps(
        {
            "labels": labels,
            "annotations": annotations,
            "status": alert.status.value,
            "startsAt": since.isoformat(),
            "endsAt": None if resolved_at is None else resolved_at.isoformat(),
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return IngestBatch(
        source=SOURCE,
        known_digest=hashlib.sha256(f"{SOURCE}\0{body}".encode()).hexdigest(),
        body=body,
        alerts=[alert],
        status=alert.status.value,
    )

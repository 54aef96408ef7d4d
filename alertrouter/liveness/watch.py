"""When a heartbeat counts as lost or back, and the alert alertrouter raises for it: pure, no I/O.

A heartbeat falls silent at its last sighting and is lost once silent for its `timeout`. One never heard
from is waiting, not silent: a fresh install whose Prometheus is not pointed at it yet is not a
monitoring outage, and paging "monitoring is blind" for it would page someone at every first start.
It is raised only once heard and then silent (or, if the rules ask with `warn_if_never_heard`, as one
warning after that long). The timeout is counted from this process's start at the earliest:
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

from alertrouter.fingerprints import fingerprint
from alertrouter.ingest.batch import IngestBatch
from alertrouter.labels import MatchType
from alertrouter.message import i18n, phrases
from alertrouter.message.i18n import Locale
from alertrouter.model import HEARTBEAT_ALERTNAME, HEARTBEAT_LABEL, AlertStatus
from alertrouter.ruleset.heartbeats import HeartbeatConfig
from alertrouter.store.heartbeats import HeartbeatRecord
from alertrouter.transitions import IncomingAlert

__all__ = [
    "NEVER_HEARD_ALERTNAME",
    "SOURCE",
    "Heard",
    "Step",
    "blind_alert",
    "blind_labels",
    "deadline",
    "heard",
    "how_to_be_heard",
    "never_heard_labels",
    "never_heard_raised",
    "silent_since",
    "step",
]

SOURCE = "heartbeat"  # the ingest source of the raised alerts (raw events, history)
# The alertname of the one warning `warn_if_never_heard` raises for a source never heard from.
NEVER_HEARD_ALERTNAME = "AlertrouterHeartbeatNeverHeard"


class Step(enum.Enum):
    NONE = "none"  # heard in time (or never heard: waiting), nothing raised
    RAISE = "raise"  # silent past its timeout: raise its alert
    KEEP = "keep"  # raised and still silent: the alert stays firing (re-sent, as a source re-sends)
    RESOLVE = "resolve"  # raised and heard from since: resolve it


def silent_since(record: HeartbeatRecord) -> datetime:
    return record.last_seen or record.watched_since


def deadline(record: HeartbeatRecord, config: HeartbeatConfig, started: datetime) -> datetime | None:
    """When the heartbeat is lost unless heard from before (see the module's docstring for `started`).
    Never heard from: when its `warn_if_never_heard` warning is raised, counted from when it was first
    watched (restarts do not put it off), or None (never)."""
    if record.last_seen is None:
        if config.warn_if_never_heard is None:
            return None
        return record.watched_since + config.warn_if_never_heard
    return max(record.last_seen, started) + config.timeout


def how_to_be_heard(config: HeartbeatConfig) -> str:
    """What makes the source of a heartbeat never heard from send (a log line, `/readyz`): the shipped
    Watchdog's files when it matches the Watchdog."""
    post = f"POST /api/v1/heartbeats/{config.name} with the webhook's credentials"
    if not config.matchers:
        return post
    matching = ", ".join(str(m) for m in config.matchers)
    files = "rules/deploy/alertmanager.yml"
    if any(m.name == "alertname" and m.value == "Watchdog" for m in config.matchers):
        files += ", rules/prometheus/watchdog.rules.yml"
    return f"point Alertmanager at /webhook/alertmanager with a firing alert matching {matching} ({files}), or {post}"


def never_heard_raised(record: HeartbeatRecord) -> bool:
    """Its raised alert is the never-heard warning, not "monitoring is blind"."""
    return record.alert_labels is not None and record.alert_labels.get("alertname") == NEVER_HEARD_ALERTNAME


def step(record: HeartbeatRecord, config: HeartbeatConfig, *, started: datetime, now: datetime) -> Step:
    if record.missing_since is None:
        due = deadline(record, config, started)
        return Step.RAISE if due is not None and now >= due else Step.NONE
    if record.last_seen is not None and record.last_seen > record.missing_since:
        return Step.RESOLVE
    if record.last_seen is None and not (never_heard_raised(record) and config.warn_if_never_heard is not None):
        # "monitoring is blind" raised for a source never heard from (by an older version), or a warning
        # the rules no longer ask for
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


def never_heard_labels(config: HeartbeatConfig) -> dict[str, str]:
    """The labels of the warning raised for `config` never heard from (`warn_if_never_heard`): its own
    alertname, so that it is never worded (or counted in the digest) as "monitoring is blind"."""
    return {**config.labels, "severity": "warning", "alertname": NEVER_HEARD_ALERTNAME, HEARTBEAT_LABEL: config.name}


def _summary(labels: dict[str, str], since: datetime, locale: Locale) -> str:
    name, at = labels.get(HEARTBEAT_LABEL, ""), _clock_text(since, locale.timezone)
    tr = i18n.translations(locale.language)
    if labels.get("alertname") == NEVER_HEARD_ALERTNAME:
        text = tr.gettext(
            "%(heartbeat)s never heard from since %(since)s: point its Prometheus and Alertmanager at alertrouter"
        )
        return text % {"heartbeat": name, "since": at}
    return phrases.blind_text(tr, name, at)


def blind_alert(
    labels: dict[str, str],
    since: datetime,
    *,
    locale: Locale,
    description: str = "",
    resolved_at: datetime | None = None,
) -> IngestBatch:
    """The payload of alertrouter's own alert (`blind_labels`, or `never_heard_labels` since it was first
    watched) for a heartbeat silent since `since`: firing, or resolved at `resolved_at` (when it was heard
    again). `startsAt` is `since`, so each silence is one episode, and a re-send (by this replica or
    another) changes nothing. The stored summary is in `global.language`; messages word the blind one in
    each receiver's language (`render.context`)."""
    annotations = {"summary": _summary(labels, since, locale)}
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

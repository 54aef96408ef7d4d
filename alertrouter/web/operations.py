"""The writes people make, as one transaction each: acknowledge, silence, expire, retry or discard a dead
letter, and the signed link actions. The console, the JSON API and the links all go through here; this
is the orchestrator that commits and then tells the engine (or the delivery loop) to look again."""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from alertrouter.auth.links import Action, ActionToken
from alertrouter.ingest.limits import check_instant
from alertrouter.labels import Matcher, MatcherError, MatchType, parse_matchers
from alertrouter.model import utcnow
from alertrouter.runtime import Runtime
from alertrouter.store import actions
from alertrouter.store.console import used_token
from alertrouter.store.tables import IncidentRow, SilenceRow

__all__ = [
    "MAX_SILENCE",
    "DeadLetterAction",
    "InputError",
    "LinkOutcome",
    "LinkResult",
    "acknowledge",
    "create_silence",
    "discard_dead_letter",
    "end_session",
    "expire_silence",
    "incident_matchers",
    "retry_dead_letter",
    "use_link",
    "validate_matchers",
]

log = logging.getLogger(__name__)

MAX_SILENCE = timedelta(days=90)


class InputError(ValueError):
    """Bad input from a person: `field` names what to fix."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _text_only(field: str, text: str) -> None:
    """U+0000 is refused in what a silence keeps: PostgreSQL's text cannot hold it (storing one failed
    as a store error, 503) and SQLite would keep what PostgreSQL refuses."""
    if "\x00" in text:
        raise InputError(field, "contains U+0000 (NUL), which is not allowed")


def _instant(field: str, value: datetime | None) -> datetime | None:
    """A silence's given start or end in UTC, with a time zone and within ingest's bounds (the engine
    compares it with alerts' times, and adds to it)."""
    if value is None:
        return None
    checked = check_instant(value, field)
    if isinstance(checked, str):
        field, _, message = checked.partition(": ")
        raise InputError(field, message)
    return checked


def validate_matchers(texts: Sequence[str]) -> list[str]:
    """Matcher strings in their canonical form. At least one matcher must need a non-empty value, as
    in Alertmanager: otherwise the silence would also match alerts that lack the label entirely."""
    matchers: list[Matcher] = []
    for text in texts:
        _text_only("matchers", text)
        if not text.strip():
            continue
        try:
            matchers.extend(parse_matchers(text))
        except MatcherError as exc:
            raise InputError("matchers", str(exc)) from None
    if not matchers:
        raise InputError("matchers", 'give at least one matcher, e.g. node="gpu-node-07"')
    if all(m.matches("") for m in matchers):
        raise InputError("matchers", "at least one matcher must not match an empty value (it would mute everything)")
    return [str(m) for m in matchers]


def incident_matchers(labels: Mapping[str, str], *, severity_label: str) -> list[str]:
    """Equality on an incident's labels but its severity: what "silence this" mutes."""
    out: list[str] = []
    for name, value in sorted(labels.items()):
        if name == severity_label or not value:
            continue
        text = str(Matcher(name, MatchType.EQ, value))
        try:
            parse_matchers(text)
        except MatcherError:  # a label name the matcher grammar cannot spell
            continue
        out.append(text)
    return out


async def acknowledge(runtime: Runtime, *, incident_id: int, by: str) -> IncidentRow | None:
    async with runtime.db.write() as session:
        row = await actions.acknowledge_incident(session, incident_id=incident_id, by=by, now=utcnow())
        await session.commit()
    if row is not None and row.acknowledged_by == by:
        log.info("incident %d acknowledged by %s", incident_id, by)
    runtime.engine.nudge(force=True)
    return row


async def end_session(runtime: Runtime, *, session_id: str, user: str, expires_at: datetime) -> None:
    """A console logout: the session is refused from now on, by every replica. Revocations of sessions
    that have expired since are pruned here too (a logout is rare and the prune is one indexed delete),
    so the table holds at most the logouts of one session lifetime without a housekeeping job."""
    now = utcnow()
    async with runtime.db.write() as session:
        await actions.revoke_session(session, session_id=session_id, username=user, now=now, expires_at=expires_at)
        pruned = await actions.prune_revoked_sessions(session, now=now)
        await session.commit()
    log.info("console logout: %s (session revoked%s)", user, f", {pruned} expired revocations pruned" if pruned else "")


async def create_silence(
    runtime: Runtime,
    *,
    matchers: Sequence[str],
    duration: timedelta | None = None,
    ends_at: datetime | None = None,
    starts_at: datetime | None = None,
    comment: str = "",
    by: str,
) -> SilenceRow:
    now = utcnow()
    canonical = validate_matchers(matchers)
    _text_only("comment", comment)
    _text_only("created_by", by)
    starts_at = _instant("starts_at", starts_at)
    ends_at = _instant("ends_at", ends_at)
    start = starts_at or now
    if ends_at is None:
        if duration is None or duration <= timedelta(0):
            raise InputError("duration", "must be positive, e.g. 2h")
        if duration > MAX_SILENCE:  # before the sum, which could pass Python's year 9999
            raise InputError("duration", f"at most {MAX_SILENCE.days} days")
        ends_at = start + duration
    if ends_at <= max(start, now):
        raise InputError("ends_at", "must be after the start and in the future")
    if ends_at - start > MAX_SILENCE:
        raise InputError("duration", f"at most {MAX_SILENCE.days} days")
    async with runtime.db.write() as session:
        row = await actions.create_silence(
            session,
            matchers=canonical,
            starts_at=start,
            ends_at=ends_at,
            created_by=by,
            comment=comment[:1000],
            now=now,
        )
        await session.commit()
    log.info("silence %s created by %s: %s until %s", row.id, by, ", ".join(canonical), ends_at.isoformat())
    runtime.engine.nudge(force=True)
    return row


async def expire_silence(runtime: Runtime, *, silence_id: str, by: str) -> bool:
    async with runtime.db.write() as session:
        done = await actions.expire_silence(session, silence_id=silence_id, now=utcnow())
        await session.commit()
    if done:
        log.info("silence %s expired by %s", silence_id, by)
        runtime.engine.nudge(force=True)
    return done


class DeadLetterAction(enum.StrEnum):
    """What a person does with a dead letter: the last part of `POST .../deliveries/{id}/{action}`."""

    RETRY = "retry"  # pending again, due now
    DISCARD = "discard"  # never sent: its status is `discarded`


async def retry_dead_letter(runtime: Runtime, *, delivery_id: int, by: str) -> bool:
    async with runtime.db.write() as session:
        done = await actions.retry_delivery(session, delivery_id=delivery_id, now=utcnow())
        await session.commit()
    if done:
        log.info("dead letter %d sent again by %s", delivery_id, by)
        if runtime.delivery is not None:
            runtime.delivery.nudge()
    return done


async def discard_dead_letter(runtime: Runtime, *, delivery_id: int, by: str) -> bool:
    async with runtime.db.write() as session:
        done = await actions.discard_delivery(session, delivery_id=delivery_id)
        await session.commit()
    if done:
        log.info("dead letter %d discarded by %s", delivery_id, by)
    return done


class LinkOutcome(enum.Enum):
    DONE = "done"
    REPLAYED = "replayed"
    NO_INCIDENT = "no_incident"
    NOTHING_TO_SILENCE = "nothing_to_silence"


@dataclass(frozen=True, slots=True)
class LinkResult:
    outcome: LinkOutcome
    incident: IncidentRow | None = None
    silence: SilenceRow | None = None
    used_at: datetime | None = None  # of the earlier use, for a replay


async def use_link(runtime: Runtime, token: ActionToken) -> LinkResult:
    """Record the link's nonce and act, in one transaction: a replay changes nothing."""
    now = utcnow()
    silence: SilenceRow | None = None
    async with runtime.db.write() as session:
        incident = await session.get(IncidentRow, token.incident_id)
        if incident is None:
            return LinkResult(LinkOutcome.NO_INCIDENT)
        matchers: list[str] = []
        if token.action is Action.SILENCE:
            matchers = incident_matchers(incident.labels, severity_label=runtime.ruleset.global_.severity_label)
            if not matchers:
                return LinkResult(LinkOutcome.NOTHING_TO_SILENCE, incident)
        fresh = await actions.use_token(
            session,
            nonce=token.nonce,
            action=token.action.value,
            incident_id=token.incident_id,
            now=now,
            expires_at=token.expires_at,
        )
        if not fresh:
            earlier = await used_token(session, nonce=token.nonce)
            used_at = earlier.used_at if earlier else None  # read before the rollback expires the rows
            await session.rollback()
            return LinkResult(LinkOutcome.REPLAYED, used_at=used_at)
        if token.action is Action.ACK:
            incident = await actions.acknowledge_incident(session, incident_id=incident.id, by="link", now=now)
        else:
            silence = await actions.create_silence(
                session,
                matchers=matchers,
                starts_at=now,
                ends_at=now + runtime.settings.link_silence,
                created_by="link",
                comment=f"from a message link for incident {token.incident_id}",
                now=now,
            )
        await session.commit()
    log.info("link %s used for incident %d", token.action.value, token.incident_id)
    runtime.engine.nudge(force=True)
    return LinkResult(LinkOutcome.DONE, incident, silence)

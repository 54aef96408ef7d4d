"""`GET/POST /api/v2/silences`, `GET/DELETE /api/v2/silence/{id}`: alertrouter's silences, in Alertmanager's shapes.

A silence's id is the UUID alertrouter gave it (`silences.id`), the same in both APIs and in the console.
Its matchers are kept as Alertmanager's matcher strings; Alertmanager's `{name, value, isRegex, isEqual}`
maps onto `=`, `!=`, `=~`, `!~`, so every matcher amtool or Grafana sends can be kept. A posted silence
goes through the same checks as `POST /api/v1/silences` (`operations.create_silence`), whose refusals
answer 400 `"silence invalid: ..."`. A posted `id` updates that silence as Alertmanager does when it
cannot edit in place: a new silence is made, then the old one expired; the answer is the new id.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from alertrouter.labels import Matcher, MatchType, parse_matchers
from alertrouter.model import utcnow
from alertrouter.runtime import RuntimeDep
from alertrouter.store import actions
from alertrouter.store import amv2 as store
from alertrouter.store.tables import SilenceRow
from alertrouter.web import operations
from alertrouter.web.access import ReadPrincipal, WritePrincipal
from alertrouter.web.amv2.errors import CODE_INVALID_TYPE, AmError, filter_matchers
from alertrouter.web.amv2.models import GettableSilence, MatcherModel, SilenceStatus, wire
from alertrouter.web.amv2.postable import Postable, read_postable
from alertrouter.web.console.views import silence_state

__all__ = ["EXPIRED_KEPT", "router", "silence_matches_filter"]

log = logging.getLogger(__name__)

router = APIRouter(prefix="/api/v2", tags=["alertmanager-v2"])

EXPIRED_KEPT = timedelta(hours=120)  # expired silences listed this long, as Alertmanager's --data.retention
_UUID = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")  # go-openapi's
_ORDER = {"active": 0, "pending": 1, "expired": 2}


def _matcher_model(matcher: Matcher) -> MatcherModel:
    return MatcherModel(
        name=matcher.name,
        value=matcher.value,
        is_regex=matcher.type in (MatchType.RE, MatchType.NRE),
        is_equal=matcher.type in (MatchType.EQ, MatchType.RE),
    )


def _stored_matchers(row: SilenceRow) -> list[Matcher]:
    """A silence's matchers; each was checked when it was stored, so none fails to parse."""
    return [m for text in row.matchers for m in parse_matchers(text)]


def gettable_silence(row: SilenceRow, now: datetime) -> GettableSilence:
    state = silence_state(row, now)
    assert state in _ORDER
    return GettableSilence(
        id=row.id,
        status=SilenceStatus(state=state),
        updated_at=row.updated_at,
        matchers=[_matcher_model(m) for m in _stored_matchers(row)],
        starts_at=row.starts_at,
        ends_at=row.ends_at,
        created_by=row.created_by,
        comment=row.comment,
    )


def silence_matches_filter(filters: Sequence[Matcher], silence: Sequence[Matcher]) -> bool:
    """Alertmanager's silence filter: each filter matcher is matched against the value the silence
    gives that label name (its matcher's value or pattern, as text). A filter with an empty value
    also keeps silences without that name (`=`, `=~`) or with it (`!=`, `!~`)."""
    values = {m.name: m.value for m in silence}
    for wanted in filters:
        present = wanted.name in values
        negative = wanted.type in (MatchType.NE, MatchType.NRE)
        if wanted.value == "" and present == negative:
            continue
        if not wanted.matches(values.get(wanted.name, "")):
            return False
    return True


def _sort_key(silence: GettableSilence) -> tuple[int, float]:
    """Active first (ending soonest first), then pending (starting soonest), then expired (latest end)."""
    state = silence.status.state
    if state == "active":
        return 0, silence.ends_at.timestamp()
    if state == "pending":
        return 1, silence.starts_at.timestamp()
    return 2, -silence.ends_at.timestamp()


@router.get("/silences", summary="Alertmanager API v2: silences (amtool silence query, Grafana)")
async def list_silences(request: Request, runtime: RuntimeDep, principal: ReadPrincipal) -> JSONResponse:
    filters = filter_matchers(request.query_params.getlist("filter"))
    now = utcnow()
    async with runtime.db.read() as session:
        rows = await store.silences_since(session, ended_after=now - EXPIRED_KEPT)
    found = [gettable_silence(r, now) for r in rows if silence_matches_filter(filters, _stored_matchers(r))]
    return JSONResponse(wire(sorted(found, key=_sort_key)))


def _silence_id(text: str) -> str:
    """A path's silence id in alertrouter's form (lower-case, hyphenated); 422 if it is no UUID."""
    if not _UUID.match(text):
        raise AmError(422, f"silenceID in path must be of type uuid: {json.dumps(text)}", code=CODE_INVALID_TYPE)
    return str(uuid.UUID(text))


@router.get("/silence/{silence_id}", summary="Alertmanager API v2: one silence")
async def get_silence(silence_id: str, runtime: RuntimeDep, principal: ReadPrincipal) -> Response:
    key = _silence_id(silence_id)
    async with runtime.db.read() as session:
        row = await actions.get_silence(session, silence_id=key)
    if row is None:
        return Response(status_code=404)  # Alertmanager's 404 has no body
    return JSONResponse(wire(gettable_silence(row, utcnow())))


@router.delete("/silence/{silence_id}", summary="Alertmanager API v2: expire a silence (amtool silence expire)")
async def delete_silence(silence_id: str, runtime: RuntimeDep, principal: WritePrincipal) -> Response:
    """Expiring a silence that has already ended changes nothing and answers 200, as Alertmanager does;
    an unknown id answers 404 (Alertmanager 0.25 answered 500, later ones 404)."""
    key = _silence_id(silence_id)
    if await operations.expire_silence(runtime, silence_id=key, by=principal.name):
        return Response(status_code=200)
    async with runtime.db.read() as session:
        exists = await actions.get_silence(session, silence_id=key) is not None
    return Response(status_code=200 if exists else 404)


async def _create(runtime: RuntimeDep, postable: Postable, principal: str) -> SilenceRow:
    """A start in the past is now, as Alertmanager sets it (Grafana re-posts an edited silence with
    its first start: that start does not count against the longest silence)."""
    try:
        row = await operations.create_silence(
            runtime,
            matchers=postable.matchers,
            starts_at=max(postable.starts_at, utcnow()),
            ends_at=postable.ends_at,
            comment=postable.comment,
            by=postable.created_by,
        )
    except operations.InputError as exc:
        raise AmError(400, f"silence invalid: {exc}") from None
    log.info("silence %s posted through API v2 by %s as %r", row.id, principal, postable.created_by[:64])
    return row


@router.post("/silences", summary="Alertmanager API v2: create or update a silence (amtool silence add)")
async def post_silence(request: Request, runtime: RuntimeDep, principal: WritePrincipal) -> JSONResponse:
    postable = read_postable(await request.body())
    old = None
    if postable.id is not None:
        try:
            old = str(uuid.UUID(postable.id))
        except ValueError:
            old = None
        async with runtime.db.read() as session:
            found = old is not None and await actions.get_silence(session, silence_id=old) is not None
        if not found:
            raise AmError(404, "silence not found")
    row = await _create(runtime, postable, principal.name)
    if old is not None:
        await operations.expire_silence(runtime, silence_id=old, by=principal.name)
    return JSONResponse({"silenceID": row.id})

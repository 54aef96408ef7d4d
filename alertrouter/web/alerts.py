"""`GET /api/v1/alerts` with status and Alertmanager-matcher filters, and one alert with its history."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Request

from alertrouter.labels import Matcher, MatcherError, matches_all, parse_matchers
from alertrouter.model import AlertStatus
from alertrouter.pipeline.nodes import INSTANCE, LEARNED, Discovered, NodeIdentity
from alertrouter.runtime import Runtime, RuntimeDep
from alertrouter.store import queries
from alertrouter.web.access import require_reader
from alertrouter.web.ids import BeforeIdQuery, EventId, Limit, Offset
from alertrouter.web.schemas import AlertDetail, AlertEventRead, AlertList, AlertRead, EpisodeRead, RawEventRead

__all__ = ["alert_read", "node_source", "router"]


async def _authorized(request: Request, runtime: RuntimeDep) -> Runtime:
    """Reads: the webhook credential, an API token or a console session (see `alertrouter.web.access`)."""
    await require_reader(request, runtime)
    return runtime


AuthorizedRuntime = Annotated[Runtime, Depends(_authorized)]


def alert_read(row: object, runtime: Runtime) -> AlertRead:
    """An alert row as the API shows it, with what named its node and the topology labels of that
    node (worked out on this replica from the configuration and its own Prometheus lookup, as the
    engine's leader does)."""
    read = AlertRead.model_validate(row)
    if read.node is None:
        return read
    nodes = runtime.engine.pipeline.nodes
    found = runtime.lookup.snapshot() if runtime.lookup is not None else nodes.discovered
    labels = {**found.topology.get(read.node, {}), **nodes.topology.get(read.node, {})}
    added = {k: v for k, v in sorted(labels.items()) if k not in read.labels}
    update: dict[str, object] = {"node_source": node_source(read.labels, read.node, nodes, found)}
    if added:
        update["topology"] = added
    return read.model_copy(update=update)


def node_source(labels: Mapping[str, str], node: str, nodes: NodeIdentity, found: Discovered) -> str | None:
    """What named `node` (the engine's stored decision) for an alert with `labels`, as this replica's
    configuration and lookup say. Learned aliases live in the leader's memory and the store: an alert
    whose address would name it but whose stored node is another name was named by one (`learned`)."""
    named = replace(nodes, discovered=found).named(labels) if found is not nodes.discovered else nodes.named(labels)
    if named is None:
        return None
    if named[0] != node and named[1] == INSTANCE:
        return LEARNED
    return named[1]


router = APIRouter(prefix="/api/v1", tags=["alerts"])

_STATUSES = f"^({'|'.join(AlertStatus)})$"  # firing|resolved


def _parse_filters(filters: list[str]) -> list[Matcher]:
    matchers: list[Matcher] = []
    for text in filters:
        try:
            matchers.extend(parse_matchers(text))
        except MatcherError as exc:
            raise HTTPException(400, f"filter: {exc}") from None
    return matchers


@router.get("/alerts", response_model=AlertList)
async def list_alerts(
    runtime: AuthorizedRuntime,
    status: Annotated[str | None, Query(pattern=_STATUSES)] = None,
    filter: Annotated[
        list[str], Query(description='Alertmanager matchers, e.g. alertname="GPUHighTemp" or {region=~"n.*"}')
    ] = [],  # noqa: B006 - FastAPI copies query defaults
    limit: Limit = 100,
    offset: Offset = 0,
) -> AlertList:
    matchers = _parse_filters(filter)
    page: list[AlertRead] = []
    total = 0
    async with runtime.db.read() as session:
        async for row in queries.iter_alerts(session, status=None if status is None else AlertStatus(status)):
            if matchers and not matches_all(matchers, row.labels):
                continue
            if offset <= total < offset + limit:
                page.append(alert_read(row, runtime))
            total += 1
    return AlertList(alerts=page, total=total, limit=limit, offset=offset)


@router.get("/alerts/{fingerprint}", response_model=AlertDetail)
async def get_alert(fingerprint: str, runtime: AuthorizedRuntime) -> AlertDetail:
    async with runtime.db.read() as session:
        row = await queries.get_alert(session, fingerprint=fingerprint)
        if row is None:
            raise HTTPException(404, f"no alert with fingerprint {fingerprint!r}")
        episodes = await queries.get_episodes(session, fingerprint=fingerprint)
        events = await queries.get_events(session, fingerprint=fingerprint)
        return AlertDetail(
            alert=alert_read(row, runtime),
            episodes=[EpisodeRead.model_validate(e) for e in episodes],
            events=[AlertEventRead.model_validate(e) for e in events],
        )


@router.get("/raw-events", response_model=list[RawEventRead], tags=["audit"])
async def list_raw_events(
    runtime: AuthorizedRuntime,
    limit: Limit = 100,
    before_id: BeforeIdQuery = None,
) -> list[RawEventRead]:
    """Received payloads, newest first (bodies omitted; fetch one for its body)."""
    async with runtime.db.read() as session:
        rows = await queries.list_raw_events(session, limit=limit, before_id=before_id)
        return [RawEventRead.model_validate(r).model_copy(update={"body": None}) for r in rows]


@router.get("/raw-events/{event_id}", response_model=RawEventRead, tags=["audit"])
async def get_raw_event(runtime: AuthorizedRuntime, event_id: EventId) -> RawEventRead:
    """One received payload with its original body, e.g. to replay it with `curl --data @-`."""
    async with runtime.db.read() as session:
        row = await queries.get_raw_event(session, event_id=event_id)
        if row is None:
            raise HTTPException(404, f"no raw event {event_id}")
        return RawEventRead.model_validate(row)

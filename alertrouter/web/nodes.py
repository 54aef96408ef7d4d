"""`GET /api/v1/nodes`: the addresses learned to be nodes, from which alert, and whether in force."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel

from alertrouter.model import utcnow
from alertrouter.store import nodes as store
from alertrouter.store.tables import NodeAliasRow
from alertrouter.web.alerts import AuthorizedRuntime

__all__ = ["NodeAddressRead", "NodeList", "router"]

router = APIRouter(prefix="/api/v1", tags=["nodes"])


class NodeAddressRead(BaseModel):
    """One learned address of a node. `state`: `learned` (in force), `expired` (not seen for the TTL;
    ignored, pruned by housekeeping) or `configured` (`topology.aliases` names the address, and wins).
    `previous_node`/`changed_at`: the address was claimed by another name and the latest claim won."""

    node: str
    address: str
    state: str
    configured_node: str | None
    learned_from: str
    fingerprint: str
    first_seen: datetime
    last_seen: datetime
    expires_at: datetime
    previous_node: str | None
    changed_at: datetime | None


class NodeList(BaseModel):
    addresses: list[NodeAddressRead]
    total: int
    limit: int
    offset: int
    learned_alias_ttl_seconds: float


def node_addresses(
    rows: list[NodeAliasRow], *, configured: dict[str, str], ttl: timedelta, now: datetime
) -> list[NodeAddressRead]:
    out = []
    for r in rows:
        state = "configured" if r.address in configured else "learned" if now - r.last_seen < ttl else "expired"
        out.append(
            NodeAddressRead(
                node=r.node,
                address=r.address,
                state=state,
                configured_node=configured.get(r.address),
                learned_from=r.learned_from,
                fingerprint=r.fingerprint,
                first_seen=r.first_seen,
                last_seen=r.last_seen,
                expires_at=r.last_seen + ttl,
                previous_node=r.previous_node,
                changed_at=r.changed_at,
            )
        )
    return out


@router.get("/nodes", response_model=NodeList)
async def list_nodes(
    runtime: AuthorizedRuntime,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> NodeList:
    """Learned addresses by node, then address."""
    nodes = runtime.engine.pipeline.nodes
    async with runtime.db.read() as session:
        rows, total = await store.list_node_aliases(session, limit=limit, offset=offset)
    addresses = node_addresses(list(rows), configured=dict(nodes.aliases), ttl=nodes.learned_ttl, now=utcnow())
    return NodeList(
        addresses=addresses,
        total=total,
        limit=limit,
        offset=offset,
        learned_alias_ttl_seconds=nodes.learned_ttl.total_seconds(),
    )

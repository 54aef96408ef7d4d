"""`GET /api/v1/nodes`: the addresses learned to be nodes, from which alert, and whether in force; the
addresses and pods the Prometheus lookup discovered, and the configured aliases, each with its source;
the nodes firing alerts are on, with what named each."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from datetime import datetime, timedelta

from fastapi import APIRouter
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.discovery.prometheus import PrometheusLookup
from alertrouter.model import AlertStatus, utcnow
from alertrouter.pipeline.nodes import Discovered, NodeIdentity
from alertrouter.store import nodes as store
from alertrouter.store import queries
from alertrouter.store.tables import NodeAliasRow
from alertrouter.web.alerts import AuthorizedRuntime, node_source
from alertrouter.web.ids import Limit, Offset

__all__ = [
    "ConfiguredAliasRead",
    "DiscoveredAddressRead",
    "LookupRead",
    "NamedNodeRead",
    "NodeAddressRead",
    "NodeList",
    "discovered_addresses",
    "lookup_status",
    "named_nodes",
    "router",
]

router = APIRouter(prefix="/api/v1", tags=["nodes"])


class NodeAddressRead(BaseModel):
    """One learned address of a node. `state`: `learned` (in force), `held` (in force, and one alert
    claims it is `held_node`: that move waits for a second alert or the Prometheus lookup to agree),
    `expired` (not seen for the TTL; ignored, pruned by housekeeping), `configured` (`topology.aliases`
    names the address, and wins) or `prometheus` (the Prometheus lookup names it, and wins over learning).
    `previous_node`/`changed_at`: the address was claimed by another name and the latest claim won.
    `held_*` are set whatever the state while a move is held: the name, the alert claiming it
    (`held_from` its alertname), and since when."""

    node: str
    address: str
    source: str = "learned"
    state: str
    configured_node: str | None
    discovered_node: str | None = None
    learned_from: str
    fingerprint: str
    first_seen: datetime
    last_seen: datetime
    expires_at: datetime
    previous_node: str | None
    changed_at: datetime | None
    held_node: str | None = None
    held_from: str | None = None
    held_fingerprint: str | None = None
    held_since: datetime | None = None


class DiscoveredAddressRead(BaseModel):
    """An address or a pod's name the Prometheus lookup maps to a node. `kind`: `address` or `pod`;
    `series`: what said so (`kube_node_info`, `kube_pod_info/host_ip`, `node_uname_info`,
    `kube_pod_info/pod_ip`, `kube_pod_info/pod`); `state`: `discovered` (in force) or `configured`
    (`topology.aliases` names it, and wins); `other_nodes`: nodes that claimed it too and lost;
    `labels`: the node's topology labels from `kube_node_labels`."""

    node: str
    key: str
    kind: str
    source: str = "prometheus"
    series: str
    state: str
    configured_node: str | None
    first_seen: datetime
    last_seen: datetime
    expires_at: datetime
    other_nodes: list[str]
    labels: dict[str, str]


class ConfiguredAliasRead(BaseModel):
    """An alias written in `topology.aliases` (always wins)."""

    node: str
    key: str
    source: str = "configured"


class NamedNodeRead(BaseModel):
    """A node firing alerts are on, and what named it for them (`node_source`, as on each alert of
    `GET /api/v1/alerts`): a node named by several sources (dcgm's `Hostname`, node-exporter's learned
    address) is listed once per source. `alerts`: how many firing alerts it names so."""

    node: str
    node_source: str
    alerts: int


class SeriesRead(BaseModel):
    series: str
    last_success: datetime | None
    problem: str | None  # unreachable, timeout, http_status, query_error, bad_answer
    detail: str | None
    failing_since: datetime | None


class LookupRead(BaseModel):
    """The Prometheus lookup's state on the replica that answers (each replica reads on its own)."""

    url: str
    refresh_seconds: float
    keep_for_seconds: float
    series: list[SeriesRead]
    names: int
    nodes_with_labels: int
    conflicts: int


class NodeList(BaseModel):
    addresses: list[NodeAddressRead]
    total: int
    held_total: int = 0  # addresses in force holding a move (on every page)
    limit: int
    offset: int
    learned_alias_ttl_seconds: float
    discovered: list[DiscoveredAddressRead] = []
    discovered_total: int = 0
    configured: list[ConfiguredAliasRead] = []
    prometheus: LookupRead | None = None
    named: list[NamedNodeRead] = []  # a page (`limit`/`offset`), by node then source
    named_total: int = 0


def node_addresses(
    rows: list[NodeAliasRow],
    *,
    configured: dict[str, str],
    ttl: timedelta,
    now: datetime,
    discovered: Mapping[str, str] | None = None,
) -> list[NodeAddressRead]:
    out = []
    discovered = discovered or {}
    for r in rows:
        held = store.held_of(r)
        if r.address in configured:
            state = "configured"
        elif r.address in discovered:
            state = "prometheus"
        elif now - r.last_seen >= ttl:
            state = "expired"
        else:
            state = "learned" if held is None else "held"
        out.append(
            NodeAddressRead(
                node=r.node,
                address=r.address,
                state=state,
                configured_node=configured.get(r.address),
                discovered_node=discovered.get(r.address),
                learned_from=r.learned_from,
                fingerprint=r.fingerprint,
                first_seen=r.first_seen,
                last_seen=r.last_seen,
                expires_at=r.last_seen + ttl,
                previous_node=r.previous_node,
                changed_at=r.changed_at,
                held_node=held.node if held else None,
                held_from=held.alertname if held else None,
                held_fingerprint=held.fingerprint if held else None,
                held_since=held.since if held else None,
            )
        )
    return out


async def named_nodes(session: AsyncSession, nodes: NodeIdentity, found: Discovered) -> list[NamedNodeRead]:
    """The nodes of the firing alerts, by node then source, each with how many alerts it names so."""
    counts: Counter[tuple[str, str]] = Counter()
    async for row in queries.iter_alerts(session, status=AlertStatus.FIRING):
        if row.node is not None:
            counts[row.node, node_source(row.labels, row.node, nodes, found) or ""] += 1
    return [NamedNodeRead(node=n, node_source=s, alerts=c) for (n, s), c in sorted(counts.items())]


def discovered_addresses(
    lookup: PrometheusLookup, *, configured: Mapping[str, str], limit: int, offset: int
) -> tuple[list[DiscoveredAddressRead], int]:
    """One page of the lookup's names in force, by node then key, and how many there are."""
    resolved = lookup.resolved
    entries = sorted(resolved.entries, key=lambda e: (e.node, e.key))
    topology = resolved.discovered.topology
    keep = lookup.book.keep_for
    page = [
        DiscoveredAddressRead(
            node=e.node,
            key=e.key,
            kind="pod" if e.source == "kube_pod_info/pod" else "address",
            series=e.source,
            state="configured" if e.key in configured else "discovered",
            configured_node=configured.get(e.key),
            first_seen=e.first_seen,
            last_seen=e.last_seen,
            expires_at=e.last_seen + keep,
            other_nodes=list(e.losers),
            labels=dict(topology.get(e.node, {})),
        )
        for e in entries[offset : offset + limit]
    ]
    return page, len(entries)


def lookup_status(lookup: PrometheusLookup) -> LookupRead:
    series = []
    for name in lookup.config.series:
        problem = lookup.problems.get(name)
        series.append(
            SeriesRead(
                series=name,
                last_success=lookup.last_success.get(name),
                problem=problem.problem if problem else None,
                detail=problem.detail if problem else None,
                failing_since=problem.since if problem else None,
            )
        )
    resolved = lookup.resolved
    return LookupRead(
        url=lookup.url,
        refresh_seconds=lookup.config.refresh.total_seconds(),
        keep_for_seconds=lookup.book.keep_for.total_seconds(),
        series=series,
        names=len(resolved.entries),
        nodes_with_labels=len(resolved.discovered.topology),
        conflicts=len(resolved.conflicts),
    )


@router.get("/nodes", response_model=NodeList)
async def list_nodes(
    runtime: AuthorizedRuntime,
    limit: Limit = 100,
    offset: Offset = 0,
) -> NodeList:
    """Learned addresses by node, then address (`limit`/`offset` page them and, separately, the
    discovered ones); configured aliases; the Prometheus lookup's state when it is configured."""
    nodes = runtime.engine.pipeline.nodes
    lookup = runtime.lookup
    now = utcnow()
    async with runtime.db.read() as session:
        rows, total = await store.list_node_aliases(session, limit=limit, offset=offset)
        held_total = await store.count_held_node_aliases(session, since=now - nodes.learned_ttl)
        snapshot = lookup.snapshot() if lookup is not None else nodes.discovered
        named = await named_nodes(session, nodes, snapshot)
    configured = dict(nodes.aliases)
    found = lookup.snapshot().names if lookup is not None else {}
    addresses = node_addresses(list(rows), configured=configured, ttl=nodes.learned_ttl, now=now, discovered=found)
    discovered: list[DiscoveredAddressRead] = []
    discovered_total = 0
    if lookup is not None:
        discovered, discovered_total = discovered_addresses(lookup, configured=configured, limit=limit, offset=offset)
    return NodeList(
        addresses=addresses,
        total=total,
        held_total=held_total,
        limit=limit,
        offset=offset,
        learned_alias_ttl_seconds=nodes.learned_ttl.total_seconds(),
        discovered=discovered,
        discovered_total=discovered_total,
        configured=[ConfiguredAliasRead(node=n, key=k) for k, n in sorted(configured.items(), key=lambda i: i[::-1])],
        prometheus=lookup_status(lookup) if lookup is not None else None,
        named=named[offset : offset + limit],
        named_total=len(named),
    )

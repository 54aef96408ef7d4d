"""Console page: the nodes of the firing alerts and what named each; the addresses learned to be nodes,
by node, with the alert each was learned from; the addresses and pods the Prometheus lookup
discovered; the configured aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse

from alertrouter.store import console as store
from alertrouter.store import nodes
from alertrouter.store.delivery import incident_ids
from alertrouter.web.console.pages import ConsoleDep
from alertrouter.web.nodes import (
    DiscoveredAddressRead,
    discovered_addresses,
    lookup_status,
    named_nodes,
    node_addresses,
)

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
PAGE_SIZE = 100


@router.get("/nodes")
async def nodes_page(console: ConsoleDep, page: Annotated[int, Query(ge=1, le=10_000)] = 1) -> HTMLResponse:
    topology = console.runtime.engine.pipeline.nodes
    async with console.runtime.db.read() as session:
        rows, total = await nodes.list_node_aliases(session, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
        held = await nodes.count_held_node_aliases(session, since=console.now - topology.learned_ttl)
        # the alert each address was learned from (and the one claiming a held move), while the store
        # still has it, linked to its incident
        claimants = {r.fingerprint for r in rows} | {r.held_fingerprint for r in rows if r.held_fingerprint}
        sources = await store.alerts_by_fingerprint(session, claimants)
        ids = await incident_ids(session, {a.incident_key for a in sources.values() if a.incident_key})
        lookup = console.runtime.lookup
        named = await named_nodes(session, topology, lookup.snapshot() if lookup is not None else topology.discovered)
    configured = dict(topology.aliases)
    found = lookup.snapshot().names if lookup is not None else {}
    addresses = node_addresses(
        list(rows), configured=configured, ttl=topology.learned_ttl, now=console.now, discovered=found
    )
    discovered: list[DiscoveredAddressRead] = []
    discovered_total = 0
    if lookup is not None:
        start = (page - 1) * PAGE_SIZE
        discovered, discovered_total = discovered_addresses(
            lookup, configured=configured, limit=PAGE_SIZE, offset=start
        )
    return console.page(
        "nodes",
        title_text=console.tr.pgettext("console", "Nodes"),  # "Nodes" alone is a message's count
        addresses=addresses,
        sources=sources,
        incident_ids=ids,
        total=total,
        held=held,
        ttl=topology.learned_ttl,
        discovered=discovered,
        discovered_total=discovered_total,
        lookup=lookup_status(lookup) if lookup is not None else None,
        configured=sorted(configured.items(), key=lambda item: item[::-1]),
        named=named[(page - 1) * PAGE_SIZE : page * PAGE_SIZE],
        named_total=len(named),
        page=page,
        pages=max(1, -(-max(total, discovered_total, len(named)) // PAGE_SIZE)),
    )

"""Learned node aliases (`node_aliases`): what the engine loads on taking the lease and writes as it
learns, what the API lists, and what housekeeping prunes."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.model import NAME_MAX, bounded
from alertrouter.pipeline.aliases import Held, LearnedAlias
from alertrouter.store import bulk
from alertrouter.store.handles import node_aliases_t
from alertrouter.store.tables import NodeAliasRow

__all__ = [
    "count_held_node_aliases",
    "held_of",
    "list_node_aliases",
    "load_node_aliases",
    "prune_node_aliases",
    "save_node_aliases",
]


def held_of(row: NodeAliasRow) -> Held | None:
    """The move the row holds, if any (its four columns are written together)."""
    if row.held_node is None or row.held_since is None:
        return None
    return Held(row.held_node, row.held_from or "", row.held_fingerprint or "", row.held_since)


def _alias(row: NodeAliasRow) -> LearnedAlias:
    return LearnedAlias(
        address=row.address,
        node=row.node,
        first_seen=row.first_seen,
        last_seen=row.last_seen,
        alertname=row.learned_from,
        fingerprint=row.fingerprint,
        previous_node=row.previous_node,
        changed_at=row.changed_at,
        held=held_of(row),
    )


async def load_node_aliases(session: AsyncSession) -> dict[str, LearnedAlias]:
    """Every stored alias, expired ones included (the caller's TTL decides; housekeeping prunes)."""
    rows = (await session.scalars(select(NodeAliasRow))).all()
    return {r.address: _alias(r) for r in rows}


async def save_node_aliases(session: AsyncSession, aliases: Sequence[LearnedAlias]) -> None:
    rows = [
        {
            "address": a.address,
            "node": bounded(a.node, NAME_MAX),  # a label value, possibly longer than the column
            "first_seen": a.first_seen,
            "last_seen": a.last_seen,
            "learned_from": bounded(a.alertname, NAME_MAX),
            "fingerprint": a.fingerprint,
            "previous_node": None if a.previous_node is None else bounded(a.previous_node, NAME_MAX),
            "changed_at": a.changed_at,
            "held_node": None if a.held is None else bounded(a.held.node, NAME_MAX),
            "held_from": None if a.held is None else bounded(a.held.alertname, NAME_MAX),
            "held_fingerprint": None if a.held is None else a.held.fingerprint,
            "held_since": None if a.held is None else a.held.since,
        }
        for a in sorted(aliases, key=lambda a: a.address)
    ]
    if rows:
        await bulk.insert(session, node_aliases_t, rows, on_conflict_do_update=["address"])


async def list_node_aliases(session: AsyncSession, *, limit: int, offset: int) -> tuple[Sequence[NodeAliasRow], int]:
    """One page of aliases by node, then address, and how many there are."""
    total = await session.scalar(select(func.count()).select_from(NodeAliasRow))
    stmt = select(NodeAliasRow).order_by(NodeAliasRow.node, NodeAliasRow.address).limit(limit).offset(offset)
    return (await session.scalars(stmt)).all(), int(total or 0)


async def count_held_node_aliases(session: AsyncSession, *, since: datetime) -> int:
    """Aliases in force (seen after `since`) that hold a move to another name."""
    held = NodeAliasRow.held_node.is_not(None) & (NodeAliasRow.last_seen > since)
    return int(await session.scalar(select(func.count()).select_from(NodeAliasRow).where(held)) or 0)


async def prune_node_aliases(session: AsyncSession, *, before: datetime) -> int:
    """Aliases last seen before `before` (`topology.learned_alias_ttl` ago)."""
    result = await session.execute(delete(node_aliases_t).where(node_aliases_t.c.last_seen < before))
    return int(cast(Any, result).rowcount or 0)

"""What a pass writes about each alert (its decision, as a row and a trail event), where it writes them,
and which alerts alone made a pass fail (to be quarantined)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.model import NAME_MAX, bounded
from alertrouter.pipeline.evaluate import Evaluator
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.silence import Silence
from alertrouter.pipeline.types import Decision, EvalResult, IncidentRecord, LiveAlert
from alertrouter.store import Database, is_outage
from alertrouter.store import incidents as store
from alertrouter.store.alerts import insert_events

__all__ = [
    "DecisionChanges",
    "Poisoned",
    "decision_changes",
    "describe",
    "find_culprits",
    "fold_decisions",
    "folds",
    "write_decisions",
]

log = logging.getLogger(__name__)

DECISION_CHUNK = 1000  # decisions (and trail events) written per transaction


class Poisoned(Exception):
    """A pass failed because of these alerts alone (fingerprint -> error): quarantine them and retry."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        super().__init__(f"{len(self.errors)} alerts failed on their own")


def describe(exc: BaseException) -> str:
    """An error as stored with a quarantined item: its type and the start of its message."""
    return f"{type(exc).__name__}: {exc}"[:500]


@dataclass(slots=True)
class DecisionChanges:
    rows: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    stored: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    inhibited: Counter[str] = field(default_factory=Counter)
    stale: Counter[str] = field(default_factory=Counter)  # alerts that became stale, by their first reason


def decision_changes(
    result: EvalResult,
    decided: Collection[str],
    now: datetime,
    *,
    previous: Mapping[str, tuple[str | None, dict[str, Any] | None]],
    alerts: Mapping[str, LiveAlert],
    node_of: Callable[[str], str | None],
    rekeyed: Collection[str] = (),
) -> DecisionChanges:
    """The decisions of `decided` (the alerts the pass worked out again) that differ from those stored
    (`previous`), as rows and trail events, remembered only once they have committed. The alerts of one
    decision object share its row detail and trail entry (read-only, as every stored detail is).
    `rekeyed`: alerts whose node a learned alias renamed, written even when their decision is the same
    (the row's `node` and `incident_key` are what the console filters on)."""
    changes = DecisionChanges()
    shared: dict[bytes, dict[str, Any]] = {}
    # The alerts that count in a node incident share one decision object (`Evaluator._incident`): its
    # stored form is worked out once, by identity (every object is held by `result` meanwhile).
    stored_of: dict[int, tuple[tuple[str, dict[str, Any]], dict[str, Any]]] = {}
    for fp in sorted(decided):
        decision = result.decisions.get(fp)
        if decision is None:  # decided, then gone within the pass
            continue
        known = stored_of.get(id(decision))
        if known is None:
            # Equal details are one object: the runner keeps every alert's (in a storm, thousands alike).
            detail = decision.detail()
            detail = shared.setdefault(orjson.dumps(detail), detail)
            value = decision.decision.value
            trail = {"decision": value, "incident": decision.incident, **detail}
            known = stored_of[id(decision)] = ((value, detail), trail)
        stored, trail = known
        value, detail = stored
        if previous.get(fp) == stored and fp not in rekeyed:
            continue
        changes.stored[fp] = stored
        node = node_of(fp)
        # The decision trail: each change, kept as history (the console and the digest read it).
        changes.events.append(
            {
                "fingerprint": fp,
                "kind": "decision",
                "at": now,
                "episode_starts_at": alerts[fp].starts_at,
                "raw_event_id": None,
                "detail": trail,
            }
        )
        changes.rows.append(
            {
                "fingerprint": fp,
                # The node name comes from a label value, which may be longer than its column.
                "node": None if node is None else bounded(node, NAME_MAX),
                "incident_key": decision.incident,
                "decision": value,
                "decision_detail": detail,
                "decided_at": now,
            }
        )
        if decision.inhibit_rule:
            changes.inhibited[decision.inhibit_rule] += 1
        was = previous.get(fp)
        if decision.decision is Decision.STALE and (was is None or was[0] != Decision.STALE.value):
            changes.stale[decision.stale_reason or ""] += 1
    return changes


def find_culprits(
    pipeline: CompiledRules,
    alerts: Sequence[LiveAlert],
    records: Mapping[str, IncidentRecord],
    now: datetime,
    silences: Sequence[Silence],
) -> dict[str, str]:
    """After an evaluation failed: the alerts whose evaluation fails alone, each probed with a fresh
    evaluator (only on this rare path, so its cost does not matter)."""
    bad: dict[str, str] = {}
    for alert in alerts:
        try:
            Evaluator(pipeline).evaluate([alert], records, now=now, silences=silences)
        except Exception as exc:
            bad[alert.fingerprint] = describe(exc)
    return bad


# fingerprint -> (decision, detail) as stored: told of each chunk once it has committed
Remember = Callable[[Iterable[tuple[str, tuple[str, dict[str, Any]]]]], None]


async def _save(session: AsyncSession, rows: Sequence[dict[str, Any]], events: Sequence[dict[str, Any]]) -> None:
    """Decision rows and their trail events, in `session`'s transaction."""
    await store.save_decisions(session, rows)
    await insert_events(session, events)


def folds(decided: Collection[str]) -> bool:
    """Whether a pass that decided these alerts may write their changed decisions in its own transaction
    (`fold_decisions`): else they are worked out and written after it (`write_decisions`)."""
    return len(decided) <= DECISION_CHUNK


async def fold_decisions(session: AsyncSession, changes: DecisionChanges) -> bool:
    """A pass's changed decisions and their trail events in its own transaction when they fit one chunk
    (what a webhook's pass changes): one commit per pass instead of two. Under a savepoint: should one
    row's values fail, only the savepoint rolls back, and they are written after the commit as a storm's
    are (`write_decisions`, which leaves that alert out). False: not written."""
    if len(changes.rows) > DECISION_CHUNK:
        return False
    if not changes.rows:
        return True
    try:
        async with session.begin_nested():
            await _save(session, changes.rows, changes.events)
    except Exception as exc:
        if is_outage(exc):
            raise
        log.info("decisions not written with the pass (%s): written after it, row by row", describe(exc))
        return False
    return True


async def write_decisions(db: Database, changes: DecisionChanges, remember: Remember) -> None:
    """Every changed decision and its trail event, after the pass's transaction and in chunks. They are
    derived (a pass after a failure writes them again), and a storm's first decisions are thousands of
    rows: in one transaction they held the SQLite write lock, and every webhook waiting behind it, for a
    quarter of a second. A chunk that fails on its values is written row by row, and `Poisoned` names the
    alerts whose row failed alone."""
    bad: dict[str, str] = {}

    async def save(rows: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
        async with db.write() as session:
            await _save(session, rows, events)
            await session.commit()
        remember((row["fingerprint"], changes.stored[row["fingerprint"]]) for row in rows)

    for start in range(0, len(changes.rows), DECISION_CHUNK):
        rows = changes.rows[start : start + DECISION_CHUNK]
        events = changes.events[start : start + DECISION_CHUNK]
        try:
            await save(rows, events)
        except Exception as exc:
            if is_outage(exc):
                raise
            for row, event in zip(rows, events, strict=True):  # one row's values: only that alert is left out
                try:
                    await save([row], [event])
                except Exception as row_exc:
                    if is_outage(row_exc):
                        raise
                    bad[row["fingerprint"]] = describe(row_exc)
    if bad:
        raise Poisoned(bad)

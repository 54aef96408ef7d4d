"""What a pass writes about each alert (its decision, as a row and a trail event), where it writes them,
and which alerts alone made a pass fail (to be quarantined)."""

from __future__ import annotations

import logging
from collections import ChainMap, Counter, deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.model import NAME_MAX, bounded
from alertrouter.pipeline.evaluate import Evaluator
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.silence import Silence
from alertrouter.pipeline.types import AlertDecision, Decision, EvalResult, IncidentRecord, LiveAlert
from alertrouter.store import Database, is_outage
from alertrouter.store import incidents as store
from alertrouter.store.alerts import insert_events

__all__ = [
    "DecisionChanges",
    "PendingDecisions",
    "Poisoned",
    "decision_changes",
    "describe",
    "find_culprits",
    "fold_decisions",
    "folds",
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

    def add(
        self,
        fp: str,
        decision: AlertDecision,
        stored: tuple[str, dict[str, Any]],
        trail: dict[str, Any],
        *,
        node: str | None,
        now: datetime,
        starts_at: datetime,
        was: tuple[str | None, dict[str, Any] | None] | None,
    ) -> None:
        """One alert's changed decision (`stored`: its value and row detail; `was`: the one stored before):
        its row, its trail event, and the counts of what it became."""
        value, detail = stored
        self.stored[fp] = stored
        # The decision trail: each change, kept as history (the console and the digest read it).
        self.events.append(
            {
                "fingerprint": fp,
                "kind": "decision",
                "at": now,
                "episode_starts_at": starts_at,
                "raw_event_id": None,
                "detail": trail,
            }
        )
        self.rows.append(
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
            self.inhibited[decision.inhibit_rule] += 1
        if decision.decision is Decision.STALE and (was is None or was[0] != Decision.STALE.value):
            self.stale[decision.stale_reason or ""] += 1


def decision_changes(
    result: EvalResult,
    decided: Collection[str],
    now: datetime,
    *,
    previous: Mapping[str, tuple[str | None, dict[str, Any] | None]],
    alerts: Mapping[str, LiveAlert],
    node_of: Callable[[str], str | None],
    rekeyed: Collection[str] = (),
    courtesy: Callable[[], None] | None = None,
) -> DecisionChanges:
    """The decisions of `decided` (the alerts the pass worked out again) that differ from those stored
    (`previous`), as rows and trail events, remembered only once they have committed. The alerts of one
    decision object share its row detail and trail entry (read-only, as every stored detail is).
    `rekeyed`: alerts whose node a learned alias renamed, written even when their decision is the same
    (the row's `node` and `incident_key` are what the console filters on). `courtesy`: called before each
    alert, when this runs in a worker thread (`alertrouter.process.courtesy`)."""
    changes = DecisionChanges()
    shared: dict[bytes, dict[str, Any]] = {}
    # The alerts that count in a node incident share one decision object (`Outcomes.tell_node`): its
    # stored form is worked out once, by identity (every object is held by `result` meanwhile).
    stored_of: dict[int, tuple[tuple[str, dict[str, Any]], dict[str, Any]]] = {}
    for fp in sorted(decided):
        if courtesy is not None:
            courtesy()
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
        was = previous.get(fp)
        if was == stored and fp not in rekeyed:
            continue
        changes.add(fp, decision, stored, trail, node=node_of(fp), now=now, starts_at=alerts[fp].starts_at, was=was)
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


def folds(decided: Sized) -> bool:
    """Whether a pass that decided these alerts may write their changed decisions in its own transaction
    (`fold_decisions`): else they are worked out after it and wait to be written (`PendingDecisions`).
    The same bound for the trail events of its escalations (`PendingDecisions.add_trail`)."""
    return len(decided) <= DECISION_CHUNK


async def fold_decisions(session: AsyncSession, changes: DecisionChanges) -> bool:
    """A pass's changed decisions and their trail events in its own transaction, when the pass `folds`
    (what a webhook's pass changes): one commit per pass instead of two. Under a savepoint: should one
    row's values fail, only the savepoint rolls back, and they are written after the commit as a storm's
    are (`PendingDecisions`, which leaves that alert out). False: not written."""
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


Stored = tuple[str, dict[str, Any]]  # a decision as stored: its value and its detail
Previous = tuple[str | None, dict[str, Any] | None]  # as read back (a row not decided yet: None, None)


@dataclass(slots=True)
class _Waiting:
    fingerprint: str
    row: dict[str, Any]
    event: dict[str, Any]
    stored: Stored


class PendingDecisions:
    """Changed decisions written after their pass's transaction (more than a chunk: a storm's), oldest
    first, a chunk per transaction (`drain`). They are derived (after a failure, a pass works them out and
    writes them again), and a storm's first decisions are ten thousand rows: in one transaction they held
    the SQLite write lock, and every webhook waiting behind it, for a quarter of a second; written before
    the next pass, they held back a newly firing alert's pass for as long.

    So `drain` stops between chunks when asked to (a newly firing alert is waiting), and the passes in
    between see these decisions as if written (`previous`). Of an alert's rows only the newest is
    written, and none once a later pass has written its own (`supersede`); every trail event is (the
    trail is history, read by time). Trail events of no decision (an escalation chain's, one per alert
    of a storm's incident) wait here too when a pass has more than a chunk of them (`add_trail`),
    written after the decisions, a chunk per transaction; a failure of the store loses them (the chain
    itself is stored with the pass, its history included)."""

    def __init__(self) -> None:
        self._waiting: deque[_Waiting] = deque()
        self._latest: dict[str, _Waiting] = {}  # fingerprint -> its newest row waiting: the one to write
        self._stored: dict[str, Previous] = {}  # fingerprint -> that row's decision
        self._trail: deque[dict[str, Any]] = deque()  # trail events of no decision, written after them

    def __len__(self) -> int:
        return len(self._waiting) + len(self._trail)

    def previous(self, written: dict[str, Previous]) -> Mapping[str, Previous]:
        """Each alert's decision as it will be stored: the one waiting here, else `written`'s."""
        return ChainMap(self._stored, written) if self._stored else written

    def add(self, changes: DecisionChanges) -> None:
        """A pass's changed decisions, to be written after those already waiting (of which an alert's older
        row is not written any more: this one is its decision)."""
        for row, event in zip(changes.rows, changes.events, strict=True):
            fp = row["fingerprint"]
            waiting = _Waiting(fp, row, event, changes.stored[fp])
            self._waiting.append(waiting)
            self._latest[fp] = waiting
            self._stored[fp] = waiting.stored

    def add_trail(self, events: Iterable[dict[str, Any]]) -> None:
        """Trail events of no decision (an escalation's), to be written after everything waiting."""
        self._trail.extend(events)

    def supersede(self, fingerprints: Iterable[str]) -> None:
        """Alerts whose newer decision a pass has written itself: none of their waiting rows is written."""
        for fp in fingerprints:
            if self._latest.pop(fp, None) is not None:
                del self._stored[fp]

    async def drain(self, db: Database, remember: Remember, *, until: Callable[[], bool] = lambda: False) -> None:
        """Write what is waiting, a chunk per transaction, stopping between chunks once `until()`. A chunk
        that fails on its values is written row by row, and `Poisoned` names the alerts whose row failed
        alone (a failure of the store itself is raised: the caller forgets what waits, see the runner)."""
        bad: dict[str, str] = {}
        while self._waiting and not until():
            chunk = [self._waiting.popleft() for _ in range(min(DECISION_CHUNK, len(self._waiting)))]
            try:
                await self._save(db, chunk, remember)
            except Exception as exc:
                if is_outage(exc):
                    raise
                for waiting in chunk:  # one row's values: only that alert is left out
                    try:
                        await self._save(db, [waiting], remember)
                    except Exception as row_exc:
                        if is_outage(row_exc):
                            raise
                        bad[waiting.fingerprint] = describe(row_exc)
                        self._written(waiting)
        while self._trail and not self._waiting and not until():
            await self._save_trail(db, [self._trail.popleft() for _ in range(min(DECISION_CHUNK, len(self._trail)))])
        if bad:
            raise Poisoned(bad)

    async def _save_trail(self, db: Database, events: Sequence[dict[str, Any]]) -> None:
        """A chunk of trail events in one transaction. One the store refuses on its values is written event
        by event, and an event refused alone is dropped with a warning: it decides nothing."""
        try:
            async with db.write() as session:
                await insert_events(session, events)
                await session.commit()
        except Exception as exc:
            if is_outage(exc):
                raise
            if len(events) == 1:
                log.warning("trail event of %s dropped: %s", events[0]["fingerprint"], describe(exc))
                return
            for event in events:
                await self._save_trail(db, [event])

    async def _save(self, db: Database, chunk: Sequence[_Waiting], remember: Remember) -> None:
        newest = [w for w in chunk if self._latest.get(w.fingerprint) is w]
        async with db.write() as session:
            await _save(session, [w.row for w in newest], [w.event for w in chunk])
            await session.commit()
        remember((w.fingerprint, w.stored) for w in newest)
        for waiting in newest:
            self._written(waiting)

    def _written(self, waiting: _Waiting) -> None:
        if self._latest.get(waiting.fingerprint) is waiting:
            del self._latest[waiting.fingerprint], self._stored[waiting.fingerprint]

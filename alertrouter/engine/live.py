"""The live alerts the engine holds between passes: read from the store by what changed since the last read
(new ones handed over by this process's ingest instead), each with its decision as last stored, and let go
once resolved for longer than `RECENT`, unless their resolve is not told yet."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.engine.decisions import Previous
from alertrouter.model import AlertStatus
from alertrouter.pipeline.types import Decision, LiveAlert
from alertrouter.store import incidents as store
from alertrouter.store.reads_now import QuickReads

__all__ = ["INSERTED_MAX", "RECENT", "LiveAlerts"]

RECENT = timedelta(hours=1)  # resolved alerts and incidents stay live this long (for resolved messages)
INSERTED_MAX = 200_000  # handed-over new alerts kept at most (each pass takes what it reads)
STALE_RECHECK = timedelta(minutes=1)  # how often a stale alert past RECENT is looked at for eviction
UNTOLD = (Decision.STALE.value, Decision.RESOLVING.value)  # resolved, the resolve not told (pipeline/stale.py)


class LiveAlerts:
    def __init__(self) -> None:
        self.alerts: dict[str, LiveAlert] = {}
        self.updated: dict[str, datetime] = {}  # fingerprint -> `updated_at` of the row as held
        self.decisions: dict[str, Previous] = {}  # each alert's decision and detail as stored
        # Resolved alerts by when to look at them again (when they changed last, at first), with when they
        # changed last (lazily kept: checked when popped), to let them go.
        self._resolved: list[tuple[datetime, datetime, str]] = []
        # New alerts handed over by this process's ingest (`inserted`), with their `updated_at`.
        self.handed: dict[str, tuple[LiveAlert, datetime]] = {}
        self._cursor: int | None = None  # where the next read of alert changes starts (store.change_cursor)

    def __len__(self) -> int:
        return len(self.alerts)

    def inserted(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Alert rows this process's ingest has just committed as new: the next read takes them from here
        instead of reading them back, as long as their `updated_at` is still this one."""
        if len(self.handed) > INSERTED_MAX:  # not the leader, or passes failing: keep memory bounded
            self.handed.clear()
        for row in rows:
            firing = row["status"] == AlertStatus.FIRING.value
            ends_at = None if firing else row.get("ends_at")
            live = LiveAlert(row["fingerprint"], row["labels"], firing, row["starts_at"], row["fired_at"], ends_at)
            self.handed[live.fingerprint] = (live, row["updated_at"])

    async def read(
        self, session: AsyncSession, now: datetime, quick: QuickReads | None = None
    ) -> tuple[list[LiveAlert], dict[str, str]]:
        """The alerts that changed since the last read (every live one at the first), now held; and the node
        incident each was last decided under as stored, for the alerts this process has not placed yet: a
        NodeDown told under its address before a restart, and named by an alias learned since, moves as it
        does within a process. A rolled-up alert's stored key is its storm's, so it is left out. With
        `quick`, the changes since the first read are read outside the session when it can (`store.reads_now`)."""
        read = None
        if self._cursor is not None and quick is not None:
            read = await quick.live_changes(
                since=self._cursor, known=self.updated, inserted=self.handed, held=self.alerts
            )
        if read is None:
            read = await store.load_live_alerts(
                session,
                since=self._cursor,
                resolved_since=now - RECENT,
                known=self.updated,
                inserted=self.handed,
                held=self.alerts,
            )
        changed, cursor = read
        fresh: list[LiveAlert] = []
        placed_before: dict[str, str] = {}
        # One (decision, detail) pair per distinct one, not one per alert (the read shares equal details:
        # their ids stand for them while it holds them): 7.8 MiB of pairs at 108,000 live alerts.
        pairs: dict[tuple[str | None, int], Previous] = {}
        for live, updated_at, decision, detail, key in changed:
            fp = live.fingerprint
            self.handed.pop(fp, None)
            if key is not None and decision != Decision.ROLLED_UP.value:
                placed_before[fp] = key
            self.alerts[fp] = live
            self.updated[fp] = updated_at
            if fp not in self.decisions:
                self.decisions[fp] = pairs.setdefault((decision, id(detail)), (decision, detail))
            if not live.firing:
                heapq.heappush(self._resolved, (updated_at, updated_at, fp))
            fresh.append(live)
        self._cursor = cursor  # no change below it that is not held now
        return fresh, placed_before

    def evict(self, now: datetime, decisions: Mapping[str, Previous]) -> list[str]:
        """Let go of the alerts resolved longer than RECENT ago, but those still stale (by `decisions`, as
        they will be stored: their resolve not told, their incident open on them, a node dark for hours);
        returns their fingerprints."""
        out = []
        heap = self._resolved
        kept = []
        while heap and heap[0][0] < now - RECENT:
            _, updated_at, fp = heapq.heappop(heap)
            alert = self.alerts.get(fp)
            if alert is None or alert.firing or self.updated[fp] != updated_at:
                continue  # changed since: a later entry (if any) stands for it
            if decisions.get(fp, (None, None))[0] in UNTOLD:
                # Stale: its resolve is not told yet, and its incident stays open on it. Looked at again later.
                kept.append((now - RECENT + STALE_RECHECK, updated_at, fp))
                continue
            del self.alerts[fp], self.updated[fp]
            self.decisions.pop(fp, None)
            out.append(fp)
        for entry in kept:
            heapq.heappush(heap, entry)
        return out

    def written(self, stored: Iterable[tuple[str, Previous]]) -> None:
        """Decisions now stored, remembered for the alerts still held (one let go meanwhile, resolved long
        ago, is not held again)."""
        alerts = self.alerts
        self.decisions.update((fp, decision) for fp, decision in stored if fp in alerts)

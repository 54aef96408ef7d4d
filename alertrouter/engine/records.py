"""The incident records the engine holds between passes: read whole once the lease is taken, then kept in
step with what each pass writes, with the keys whose record changed since the evaluator last looked (so
that a pass touches none of the others) and when each was last written (so that old ones are found at one
end, not by a scan)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.pipeline.types import IncidentRecord, RecordChanges, apply_record_changes
from alertrouter.store import incidents as store
from alertrouter.store.reads_now import QuickReads

__all__ = ["RecordBook"]


class RecordBook:
    def __init__(self) -> None:
        self.records: dict[str, IncidentRecord] | None = None  # None: read them at the next pass
        # The keys whose record changed since the evaluator last looked (None: it compares them all).
        self.touched: set[str] | None = None
        self._saved_at: dict[str, datetime] = {}  # in the order they were written (see `written`)
        self._lingering: set[str] = set()  # resolved records past `keep` still described by live alerts
        self._acked: set[str] = set()

    async def read(
        self,
        session: AsyncSession,
        now: datetime,
        keep: timedelta,
        holds: Callable[[str], bool],
        quick: QuickReads | None = None,
    ) -> dict[str, IncidentRecord]:
        """The incident records as stored. Acknowledgements are the one change made elsewhere (the console,
        an acknowledge link, on any replica): read every pass. A resolved record leaves as it does from the
        store's read (`load_incidents`), `keep` after it was last written, unless alerts still describe it
        (`holds`). With `quick`, the acknowledgements are read outside the session when it can
        (`store.reads_now`)."""
        if self.records is None:
            self.records, saved_at = await store.load_incidents(session, resolved_since=now - keep)
            self._saved_at = dict(sorted(saved_at.items(), key=lambda item: item[1]))
            self.touched = None  # a new set of objects: the evaluator compares them all
            self._acked = {k for k, r in self.records.items() if r.acknowledged}
        records = self.records
        touched = self.touched if self.touched is not None else set()
        acked = await quick.acknowledged(resolved_since=now - keep) if quick is not None else None
        if acked is None:
            acked = await store.load_acknowledged(session, resolved_since=now - keep)
        for key in acked ^ self._acked:
            record = records.get(key)
            if record is not None and record.acknowledged != (key in acked):
                records[key] = replace(record, acknowledged=key in acked)
                touched.add(key)
        self._acked = acked
        # A firing record can only stop firing by being written again (`written`): it is not looked at
        # until then. A resolved one its alerts still describe lingers, looked at every pass.
        old = now - keep
        for key, at in self._saved_at.items():
            if at >= old:
                break  # written in time order: the rest are younger
            self._lingering.add(key)
        for key in list(self._lingering):
            self._saved_at.pop(key, None)
            record = records.get(key)
            if record is not None and record.firing:
                self._lingering.discard(key)
            elif record is None or not holds(key):
                records.pop(key, None)
                touched.add(key)
                self._lingering.discard(key)
        return records

    def evaluated(self) -> None:
        """The evaluator has looked at the records as they stand."""
        self.touched = set()

    def written(self, changes: RecordChanges, keys: Sequence[str], now: datetime) -> None:
        """A pass's record changes committed, with the keys of the incidents it wrote: applied in place.
        `_saved_at` is kept in the order of the time written, so that old records are read from its old
        end; a clock that stepped back puts a key at the end anyway (forgotten late, never early)."""
        assert self.records is not None
        apply_record_changes(self.records, changes)
        if self.touched is not None:
            self.touched.update(changes.keys)
        for key in keys:
            self._saved_at.pop(key, None)
            self._saved_at[key] = now
            self._lingering.discard(key)

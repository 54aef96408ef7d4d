"""What the database no longer checks itself: the history tables have no foreign keys (migration
0006), so tests that write through the ingest look for rows pointing at nothing."""

from __future__ import annotations

from sqlalchemy import func, select

from alertrouter.store import Database
from alertrouter.store.tables import AlertEpisodeRow, AlertEventRow, AlertRow, RawEventRow


async def dangling_history(db: Database) -> dict[str, int]:
    """How many episodes and events name an alert that is not stored, and how many events link a raw
    event that is not stored (a pruned one's link must have been cleared)."""
    alerts = select(AlertRow.fingerprint)
    async with db.read() as s:
        episodes = await s.scalar(
            select(func.count()).select_from(AlertEpisodeRow).where(AlertEpisodeRow.fingerprint.not_in(alerts))
        )
        events = await s.scalar(
            select(func.count()).select_from(AlertEventRow).where(AlertEventRow.fingerprint.not_in(alerts))
        )
        links = await s.scalar(
            select(func.count())
            .select_from(AlertEventRow)
            .where(AlertEventRow.raw_event_id.is_not(None), AlertEventRow.raw_event_id.not_in(select(RawEventRow.id)))
        )
    return {"episodes": episodes or 0, "events": events or 0, "raw links": links or 0}

"""What people chose to mute, as a pass reads it: the silences and the nodes' maintenance windows."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.pipeline.maintenance import Window
from alertrouter.pipeline.silence import Silence
from alertrouter.store import incidents as store
from alertrouter.store import maintenance as maintenance_store
from alertrouter.store.reads_now import QuickReads

__all__ = ["Mutes", "read_mutes"]


@dataclass(frozen=True, slots=True)
class Mutes:
    """Compared with the last pass's: a pass with no changed alert and the same mutes is idle."""

    silences: list[Silence] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)


async def read_mutes(session: AsyncSession, quick: QuickReads, now: datetime) -> Mutes:
    """The silences and windows in force now or later. The windows are read through the session: a few
    rows by an index, where the silences take the pass's quick reads (`store.reads_now`)."""
    silences = await quick.silences(now=now)
    if silences is None:
        silences = await store.load_silences(session, now=now)
    return Mutes(silences, await maintenance_store.load_windows(session, now=now))

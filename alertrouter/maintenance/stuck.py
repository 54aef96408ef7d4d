"""Maintenance that lasts too long (a drain or a repair stuck): a node in maintenance longer than
`maintenance.stuck_after` is reported by alertrouter's own alert `NodeMaintenanceStuck`, once per episode.

The alert goes through ingest like any received one (as the heartbeat monitor's does) and is routed
like any other. Its `startsAt` is when the node went over the limit, so the episode is one alert and
one incident whichever replica sends it and however often; a route's `repeat_interval` (or `max_repeats`)
says whether it is told again. It names the node in `maintenance_node`, not in a label the node identity
reads, so the node's own maintenance does not mute it. It is re-sent with an `endsAt` a few checks
ahead, as Alertmanager's API clients do, so it resolves by itself once the window ends, even across a
restart of every replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime, timedelta

from alertrouter.durations import format_duration
from alertrouter.fingerprints import fingerprint
from alertrouter.ingest.batch import IngestBatch, IngestResult
from alertrouter.model import AlertStatus, utcnow
from alertrouter.pipeline.maintenance import Window, cluster_windows
from alertrouter.pipeline.nodes import Discovered
from alertrouter.process.loops import LoopHealth
from alertrouter.store import STORE_ERRORS, Database, describe_error
from alertrouter.store import maintenance as store
from alertrouter.transitions import IncomingAlert

__all__ = ["CHECK_EVERY", "SOURCE", "STUCK_ALERTNAME", "StuckWatch", "stuck_batch"]

log = logging.getLogger(__name__)

STUCK_ALERTNAME = "NodeMaintenanceStuck"
SOURCE = "maintenance"  # the ingest source of the raised alerts (raw events, history)
LOOP = "maintenance_stuck"
CHECK_EVERY = timedelta(minutes=1)
_KEEP = 5  # checks an alert outlives its last re-send (`endsAt`)


def _alert(window: Window, stuck_after: timedelta, now: datetime) -> IncomingAlert:
    labels = {
        "alertname": STUCK_ALERTNAME,
        "severity": "warning",
        "maintenance_node": window.node,
        "maintenance_source": window.source,
    }
    why = f" ({window.reason})" if window.reason else ""
    summary = f"{window.node} has been in maintenance for over {format_duration(stuck_after)}{why}"
    by = f"; started by {window.by}" if window.by else ""
    return IncomingAlert(
        fingerprint=fingerprint(labels),
        labels=labels,
        annotations={"summary": summary, "description": f"in maintenance since {window.starts_at.isoformat()}{by}"},
        status=AlertStatus.FIRING,
        starts_at=window.starts_at + stuck_after,
        ends_at=now + _KEEP * CHECK_EVERY,
    )


def stuck_batch(windows: Iterable[Window], stuck_after: timedelta, now: datetime) -> IngestBatch | None:
    """The alerts of the windows in force for longer than `stuck_after`, as one ingest batch (None: none)."""
    alerts = [_alert(w, stuck_after, now) for w in windows if w.active(now) and now - w.starts_at >= stuck_after]
    if not alerts:
        return None
    body = json.dumps(
        [
            {"labels": dict(a.labels), "annotations": dict(a.annotations), "startsAt": a.starts_at.isoformat()}
            for a in alerts
        ],
        sort_keys=True,
        ensure_ascii=False,
    )
    return IngestBatch(
        source=SOURCE,
        known_digest=hashlib.sha256(f"{SOURCE}\0{body}\0{now.isoformat()}".encode()).hexdigest(),
        body=body,
        alerts=alerts,
        status=AlertStatus.FIRING.value,
    )


class StuckWatch:
    """Checks every `CHECK_EVERY` the windows people started (the store) and the cluster's (the lookup)."""

    def __init__(
        self,
        db: Database,
        ingest: Callable[[IngestBatch], Awaitable[IngestResult]],
        *,
        stuck_after: timedelta,
        discovered: Callable[[], Discovered] | None = None,
        loops: LoopHealth | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._db = db
        self._ingest = ingest
        self.stuck_after = stuck_after
        self._discovered = discovered
        self._loops = loops or LoopHealth()
        self._clock = clock
        self._told: set[tuple[str, datetime]] = set()  # (node, since) logged, so each episode is logged once
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def check_once(self) -> list[str]:
        """Raise (or refresh) the alert of every stuck node; the nodes stuck now."""
        now = self._clock()
        async with self._db.read() as session:
            windows = await store.load_windows(session, now=now)
        if self._discovered is not None:
            windows += cluster_windows(self._discovered().maintenance)
        batch = stuck_batch(windows, self.stuck_after, now)
        if batch is None:
            self._told.clear()
            return []
        await self._ingest(batch)
        stuck = {(a.labels["maintenance_node"], a.starts_at) for a in batch.alerts}
        for node, since in sorted(stuck - self._told):
            log.warning(
                "maintenance of %s stuck: in maintenance since %s", node, (since - self.stuck_after).isoformat()
            )
        self._told = stuck
        return sorted(node for node, _ in stuck)

    async def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                await self.check_once()
            except STORE_ERRORS as exc:
                log.warning("maintenance check failed, will retry: %s", describe_error(exc))
            except Exception as exc:  # supervised: a bug must never end the watch
                self._loops.failed(LOOP, exc)
            else:
                self._loops.passed(LOOP)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), CHECK_EVERY.total_seconds())

    def start(self) -> None:
        self._loops.register(LOOP, interval=CHECK_EVERY.total_seconds())
        self._task = asyncio.create_task(self._loop(), name="alertrouter-maintenance-stuck")

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

"""SQLite's WAL checkpoints, taken off the commits that answer webhooks and end engine passes.

In WAL mode a commit appends the pages it changed to the log. By default the commit after which the log
holds 1,000 pages also copies the log into the database file and syncs it (SQLite's automatic
checkpoint), a cost that grows with the store and was charged to whichever webhook or engine pass it
fell on, every few commits (every other engine pass in the scale benchmark). `serve` leaves that automatic
checkpoint as a safety net only (`store.connections.AUTO_CHECKPOINT_PAGES`, set on every connection) and
checkpoints once a second from a connection of its own, in a worker thread: PASSIVE, so it never waits
for the writer or a reader, nor makes them wait; what it cannot copy yet (pages a reader still needs)
it copies at the next one. The log then starts over from its beginning at the next commit after a
complete checkpoint, and stays about one second of writes long.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from alertrouter.metrics import Metrics
from alertrouter.process.loops import LoopHealth

__all__ = ["CHECKPOINT_EVERY", "Checkpoint", "Checkpointer"]

LOOP = "checkpoint"  # its name in LoopHealth and the loop metrics
CHECKPOINT_EVERY = 1.0  # seconds between two checkpoints


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """What one `PRAGMA wal_checkpoint(PASSIVE)` found: pages in the log and pages now copied from it."""

    busy: bool
    log_pages: int
    copied_pages: int


class Checkpointer:
    """The loop `serve` runs on SQLite in a file: a PASSIVE checkpoint every `interval` seconds."""

    def __init__(
        self,
        path: Path,
        *,
        busy_timeout: float = 5.0,
        interval: float = CHECKPOINT_EVERY,
        metrics: Metrics | None = None,
        loops: LoopHealth | None = None,
    ) -> None:
        self._path = path
        self._busy_timeout = busy_timeout
        self._interval = interval
        self._metrics = metrics
        self._loops = loops or LoopHealth(metrics)
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # one checkpoint at a time on the connection (worker threads vary)
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def _checkpoint(self) -> Checkpoint:
        with self._lock:
            if self._connection is None:
                self._connection = sqlite3.connect(
                    self._path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False
                )
            busy, log_pages, copied = self._connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return Checkpoint(bool(busy), log_pages, copied)

    async def run_once(self) -> Checkpoint:
        started = time.perf_counter()
        done = await asyncio.to_thread(self._checkpoint)
        if self._metrics is not None:
            self._metrics.sqlite_checkpoint.observe(time.perf_counter() - started)
            self._metrics.sqlite_wal_pages.set(max(done.log_pages, 0))
        return done

    async def _loop(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self._interval)
            if self._stop.is_set():
                break
            try:
                await self.run_once()
            except sqlite3.Error as exc:  # the next one tries again; the automatic checkpoint bounds the log
                self._close()
                self._loops.failed(LOOP, exc)
            except Exception as exc:  # supervised
                self._loops.failed(LOOP, exc)
            else:
                self._loops.passed(LOOP)

    def _close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def start(self) -> None:
        self._loops.register(LOOP, interval=self._interval)
        self._task = asyncio.create_task(self._loop(), name="alertrouter-checkpoint")

    async def stop(self) -> None:
        """Let a checkpoint in flight finish, then close the connection (the last connection to close
        checkpoints whatever is left)."""
        if self._task is not None:
            self._stop.set()
            await self._task
            self._task = None
        await asyncio.to_thread(self._close)

"""What a running server holds: settings, rules, store, ingest pipeline, metrics; one per app."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

import httpx
from fastapi import Depends, Request

from alertrouter.auth.keys import Signers
from alertrouter.auth.webhook import Authenticator
from alertrouter.channels.base import Channel
from alertrouter.delivery.worker import DeliveryWorker
from alertrouter.discovery.prometheus import PrometheusLookup
from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.maintenance import Maintenance
from alertrouter.ingest.writer import Ingestor
from alertrouter.liveness.monitor import HeartbeatMonitor
from alertrouter.maintenance.stuck import StuckWatch
from alertrouter.metrics import Metrics
from alertrouter.process.checkpoints import Checkpointer
from alertrouter.process.loops import LoopHealth
from alertrouter.process.scheduler import Scheduler
from alertrouter.ruleset import Ruleset
from alertrouter.settings import Settings
from alertrouter.store import Database
from alertrouter.store.console import FilterChoices

__all__ = ["Runtime", "RuntimeDep"]


@dataclass(slots=True)
class Runtime:
    settings: Settings
    ruleset: Ruleset
    db: Database
    ingestor: Ingestor
    maintenance: Maintenance
    engine: EngineRunner
    metrics: Metrics
    auth: Authenticator
    head_revision: str
    channels: dict[str, Channel]
    delivery: DeliveryWorker | None
    http: httpx.AsyncClient
    loops: LoopHealth
    signers: Signers  # links in messages and console sessions
    scheduler: Scheduler | None = None  # weekly digests and housekeeping, when ALERTROUTER_SCHEDULER
    lookup: PrometheusLookup | None = None  # topology.prometheus, when configured
    filter_choices: FilterChoices = field(default_factory=FilterChoices)  # the console list's menus
    heartbeats: HeartbeatMonitor | None = None  # the `heartbeats:` section (a monitor with none configured idles)
    checkpoints: Checkpointer | None = None  # SQLite in a file: the log's checkpoints, off the commits' path
    stuck: StuckWatch | None = None  # nodes in maintenance longer than `maintenance.stuck_after`


async def _runtime(request: Request) -> Runtime:
    """`async` so that FastAPI calls it on the event loop: a plain `def` dependency is run in a worker
    thread, a thread hop on every request (a third of a re-sent webhook's CPU was that hop)."""
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(_runtime)]

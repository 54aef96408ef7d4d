"""Where a pass reads what changed: once the engine holds the live alerts, outside its session
(`store.reads_now`: on SQLite on the event loop's own connection, on PostgreSQL on a driver connection);
through its session at the first pass, and on SQLite whenever that connection cannot be had; with the
same decisions every way."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

import alertrouter.store.incidents as incidents_module
from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.store import Database
from alertrouter.store.migrate import upgrade
from alertrouter.store.tables import AlertRow, IncidentRow
from support.passes import Clock, rows, run_for
from support.scenario import gpu_labels, shipped_pipeline
from support.webhooks import webhook

SESSION_READS = ("load_live_alerts", "load_silences", "load_acknowledged")


def count_session_reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    calls: Counter[str] = Counter()

    def counted(name: str, read: Callable[..., Any]) -> Callable[..., Any]:
        async def counting(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            return await read(*args, **kwargs)

        return counting

    for name in SESSION_READS:
        monkeypatch.setattr(incidents_module, name, counted(name, getattr(incidents_module, name)))
    return calls


async def decide(db: Database) -> tuple[list[tuple[str, str | None]], list[tuple[str, str]]]:
    """Two nodes' alerts, then one of them resolved: what the store holds after passes over both."""
    clock = Clock()
    ingestor = Ingestor(db, TouchBuffer(), clock=clock)
    runner = EngineRunner(db, shipped_pipeline(), clock=clock)
    labels = [gpu_labels(node, g) for node in ("gpu-node-07", "gpu-node-08") for g in range(2)]
    await ingestor.ingest(parse_webhook(webhook(labels)).batch)
    await run_for(runner, clock, timedelta(minutes=2))
    await ingestor.ingest(parse_webhook(webhook(labels[:1], status="resolved")).batch)
    await run_for(runner, clock, timedelta(minutes=2))
    alerts = sorted((a.fingerprint, a.decision) for a in await rows(db, AlertRow))
    incidents = sorted((i.key, i.status) for i in await rows(db, IncidentRow))
    return alerts, incidents


async def test_passes_after_the_first_read_outside_the_session_and_decide_alike(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = count_session_reads(monkeypatch)
    decided = await decide(db)
    # The first pass reads every live alert through the session (a big read: on SQLite not the event
    # loop's); every other read of every pass goes outside it.
    assert calls == Counter({"load_live_alerts": 1})
    alerts, incidents = decided
    assert len(alerts) == 4
    assert sum(1 for _, status in incidents if status == "firing") == 2  # a node incident each, still firing


async def test_without_the_event_loops_connection_a_pass_reads_through_its_session_and_decides_alike(
    db: Database, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not db.is_sqlite:
        return  # PostgreSQL's driver connection fails as a session's would (tests/store/test_pool_checks.py)
    here = await decide(db)
    other = Database(f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('session') / 'alertrouter.db'}")
    try:
        upgrade(other.url.render_as_string(hide_password=False))
        monkeypatch.setattr(other, "read_now", lambda: None)
        calls = count_session_reads(monkeypatch)
        through_session = await decide(other)
    finally:
        await other.dispose()
    assert min(calls[name] for name in SESSION_READS) > 2
    assert through_session == here

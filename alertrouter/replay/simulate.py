"""`alertrouter simulate`: payload files through the whole engine on an empty throwaway store.

The same code as `serve` runs (ingest, store, engine passes), on a temporary SQLite database and a
simulated clock, so what it prints is what the server would decide and send.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.batch import IngestBatch
from alertrouter.ingest.maintenance import Maintenance
from alertrouter.ingest.payloads import PayloadError, parse_api_v2, parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.message.facts import StormFacts
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.model import AlertStatus, parse_time, utcnow
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.types import EvalResult
from alertrouter.store import Database
from alertrouter.store.migrate import upgrade

__all__ = ["SimulationError", "Step", "message_text", "payload_time", "simulate"]

TICK = timedelta(seconds=5)


class SimulationError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Step:
    name: str
    body: bytes
    at: datetime | None = None


@dataclass(slots=True)
class _Clock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


@dataclass(slots=True)
class Outcome:
    alerts: list[dict[str, Any]] = field(default_factory=list)
    incidents: list[dict[str, Any]] = field(default_factory=list)
    notifications: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"alerts": self.alerts, "incidents": self.incidents, "notifications": self.notifications}


def _parse(step: Step, now: datetime) -> IngestBatch:
    try:
        data = json.loads(step.body)
    except json.JSONDecodeError as exc:
        raise SimulationError(f"{step.name}: invalid JSON: {exc.msg} (line {exc.lineno})") from None
    try:
        parsed = parse_api_v2(step.body, now=now) if isinstance(data, list) else parse_webhook(step.body)
    except PayloadError as exc:
        raise SimulationError(f"{step.name}: " + "; ".join(exc.problems)) from None
    if parsed.problems:
        raise SimulationError(f"{step.name}: " + "; ".join(parsed.problems))
    return parsed.batch


def payload_time(body: bytes) -> datetime | None:
    """When a payload happened, read off its alerts: the latest startsAt, or endsAt of a resolved alert.
    None when it cannot tell (no times, or not JSON at all: parsing the step reports that, by name)."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    alerts = data if isinstance(data, list) else data.get("alerts", []) if isinstance(data, dict) else []
    times: list[datetime] = []
    for alert in alerts:
        if not isinstance(alert, dict):
            continue
        key = "endsAt" if alert.get("status") == AlertStatus.RESOLVED else "startsAt"
        value = alert.get(key) or alert.get("startsAt")
        t = parse_time(value) if isinstance(value, str) else None
        if t is not None and t.year > 1:
            times.append(t)
    return max(times) if times else None


def message_text(message: MessageSnapshot) -> str:
    """A plain rendering of an outbox message (the chat templates render the same snapshot)."""
    status = "RESOLVED" if message.resolved else (message.severity or "alert").upper()
    lines = [f"[{status}] {message.headline}"]
    members = message.summary.members if isinstance(message.summary, StormFacts) else None
    members = members or ()
    for member in members[:10]:
        lines.append(f"  - {member}")
    if len(members) > 10:
        lines.append(f"  ... +{len(members) - 10} more nodes")
    lines.append(f"  incident: {message.incident}  reason: {message.reason}")
    return "\n".join(lines)


async def simulate(
    pipeline: CompiledRules, steps: Sequence[Step], *, run_for: timedelta = timedelta(minutes=10)
) -> Outcome:
    if not steps:
        raise SimulationError("no payloads given")
    with tempfile.TemporaryDirectory(prefix="alertrouter-simulate-") as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'simulate.db'}"
        await asyncio.to_thread(upgrade, url)  # Alembic runs its own event loop
        db = Database(url, sqlite_synchronous="NORMAL")
        try:
            return await _run(db, pipeline, steps, run_for)
        finally:
            await db.dispose()


async def _run(db: Database, pipeline: CompiledRules, steps: Sequence[Step], run_for: timedelta) -> Outcome:
    times = [s.at or payload_time(s.body) for s in steps]
    start = next((t for t in times if t is not None), None) or utcnow()
    clock = _Clock(start)
    touches = TouchBuffer()
    ingestor = Ingestor(db, touches, clock=clock)
    maintenance = Maintenance(db, touches, interval=TICK, retention=timedelta(days=365), clock=clock)
    engine = EngineRunner(db, pipeline, clock=clock, holder="simulate")
    outcome = Outcome()
    result: EvalResult | None = None

    async def advance(until: datetime) -> None:
        nonlocal result
        while clock.now < until:
            clock.now = min(clock.now + TICK, until)
            await maintenance.run_once()
            result = await _pass(engine, clock, outcome)

    for step, at in zip(steps, times, strict=True):
        if at is not None and at > clock.now:
            await advance(at)
        await ingestor.ingest(_parse(step, clock.now))
        result = await _pass(engine, clock, outcome)
    await advance(clock.now + run_for)
    assert result is not None
    _final(result, engine, outcome)
    return outcome


async def _pass(engine: EngineRunner, clock: _Clock, outcome: Outcome) -> EvalResult:
    result = await engine.run_once()
    assert result is not None  # the only replica always holds the lease
    for intent in result.intents:
        outcome.notifications.append(
            {
                "at": clock.now.isoformat(),
                "receiver": intent.receiver,
                "incident": intent.incident,
                "reason": intent.reason.value,
                "headline": intent.message.headline,
                "text": message_text(intent.message),
            }
        )
    return result


def _final(result: EvalResult, engine: EngineRunner, outcome: Outcome) -> None:
    live = engine.live_alerts()
    for fp, decision in sorted(result.decisions.items()):
        alert = live[fp]
        outcome.alerts.append(
            {
                "fingerprint": fp,
                "labels": dict(alert.labels),
                "status": "firing" if alert.firing else "resolved",
                "decision": decision.decision.value,
                "incident": decision.incident,
                **decision.detail(),
            }
        )
    for key, state in sorted(result.incidents.items()):
        outcome.incidents.append(
            {
                "key": key,
                "kind": state.kind,
                "status": "firing" if state.firing else "resolved",
                "severity": state.severity,
                "headline": state.headline,
                "parent": state.parent,
            }
        )

"""Drives a week of alerts through the real Ingestor and EngineRunner on a manual clock, for the
digest's content tests and `tests/bench/digest_sample.py`.

Alerts are sent as Alertmanager webhooks at the clock's time (`fire`/`resolve`); after each change
`settle()` runs engine passes every few simulated seconds past the hold-down and group wait, so
decisions, incidents and the outbox are what `serve` would have written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.store import Database

__all__ = ["ManualClock", "WeekDriver", "iso"]


def iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class ManualClock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


class WeekDriver:
    def __init__(
        self, db: Database, pipeline: CompiledRules, start: datetime, *, step: timedelta = timedelta(seconds=10)
    ):
        self.clock = ManualClock(start)
        self.ingestor = Ingestor(db, TouchBuffer(), clock=self.clock)
        self.engine = EngineRunner(db, pipeline, clock=self.clock, holder="digest-week")
        self.step = step
        self._starts: dict[str, str] = {}

    def _key(self, labels: Mapping[str, str]) -> str:
        return json.dumps(sorted(labels.items()))

    async def _send(self, alerts: list[dict[str, Any]], status: str) -> None:
        for i in range(0, len(alerts), 500):
            body = {
                "version": "4",
                "receiver": "alertrouter",
                "status": status,
                "groupKey": "{}:{}",
                "alerts": alerts[i : i + 500],
            }
            parsed = parse_webhook(json.dumps(body).encode())
            assert not parsed.problems, parsed.problems
            await self.ingestor.ingest(parsed.batch)

    async def fire(self, labels: Sequence[Mapping[str, str]], annotations: Mapping[str, str] | None = None) -> None:
        alerts = []
        for lab in labels:
            start = iso(self.clock.now)
            self._starts[self._key(lab)] = start
            alerts.append(
                {
                    "status": "firing",
                    "labels": dict(lab),
                    "annotations": dict(annotations or {"summary": lab.get("alertname", "")}),
                    "startsAt": start,
                    "endsAt": "0001-01-01T00:00:00Z",
                }
            )
        await self._send(alerts, "firing")

    async def resolve(self, labels: Sequence[Mapping[str, str]]) -> None:
        alerts = [
            {
                "status": "resolved",
                "labels": dict(lab),
                "annotations": {"summary": lab.get("alertname", "")},
                "startsAt": self._starts[self._key(lab)],
                "endsAt": iso(self.clock.now),
            }
            for lab in labels
        ]
        await self._send(alerts, "resolved")

    async def settle(self, duration: timedelta = timedelta(seconds=70)) -> None:
        """Engine passes now and every `step` for `duration` (past hold-down and group wait)."""
        end = self.clock.now + duration
        await self.engine.run_once()
        while self.clock.now < end:
            self.clock.now += self.step
            await self.engine.run_once()

    def at(self, t: datetime) -> None:
        assert t >= self.clock.now, "the clock only moves forward"
        self.clock.now = t

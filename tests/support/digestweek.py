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

from alertrouter.engine.runner import EngineRunner
from alertrouter.ingest.payloads import parse_webhook
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.store import Database
from support.webhooks import OwnFields, Status, webhook

__all__ = ["ManualClock", "WeekDriver", "iso"]


def iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _summary(labels: Mapping[str, str]) -> dict[str, str]:
    """An alert's annotations when the week gives none: its alertname as its summary."""
    return {"summary": labels.get("alertname", "")}


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

    async def _send(
        self, labels: Sequence[Mapping[str, str]], own: Sequence[OwnFields], status: Status, ends: str | None = None
    ) -> None:
        for i in range(0, len(labels), 500):
            body = webhook(labels[i : i + 500], status=status, ends_at=ends, own=own[i : i + 500])
            parsed = parse_webhook(body)
            assert not parsed.problems, parsed.problems
            await self.ingestor.ingest(parsed.batch)

    async def fire(self, labels: Sequence[Mapping[str, str]], annotations: Mapping[str, str] | None = None) -> None:
        start = iso(self.clock.now)
        for lab in labels:
            self._starts[self._key(lab)] = start
        own = [OwnFields(starts_at=start, annotations=annotations or _summary(lab)) for lab in labels]
        await self._send(labels, own, "firing")

    async def resolve(self, labels: Sequence[Mapping[str, str]]) -> None:
        own = [OwnFields(starts_at=self._starts[self._key(lab)], annotations=_summary(lab)) for lab in labels]
        await self._send(labels, own, "resolved", iso(self.clock.now))

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

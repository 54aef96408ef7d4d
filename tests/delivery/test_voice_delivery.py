"""The delivery loop with a voice channel, against real databases and a scripted in-process channel:
which messages call at all, the daily cap per number shared through the store, and a retry that calls
only the numbers a failed attempt had not reached."""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from alertrouter.channels.base import ChannelError, Notification
from alertrouter.delivery.worker import DeliveryWorker
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.metrics import Metrics
from alertrouter.pipeline.throttle import NotifyReason
from alertrouter.pipeline.types import Intent
from alertrouter.ruleset.schema import Ruleset
from alertrouter.store import Database
from alertrouter.store.incidents import insert_intents
from alertrouter.store.tables import DeliveryRow

T0 = datetime(2026, 11, 21, 2, 0, tzinfo=UTC)
ONE, TWO = "+8613800000000", "+8613800000001"


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


class ScriptedVoice:
    """Answers from a script (None = every call placed, an exception = that failure), then accepts."""

    type = "voice"

    def __init__(self, script: Sequence[Exception | None] = ()) -> None:
        self.name = "voice"
        self.script: deque[Exception | None] = deque(script)
        self.seen: list[Notification] = []

    async def send(self, notification: Notification) -> None:
        self.seen.append(notification)
        error = self.script.popleft() if self.script else None
        if error is not None:
            raise error

    async def aclose(self) -> None:
        pass


def rules(cap: int = 10) -> Ruleset:
    voice = {
        "name": "voice",
        "type": "voice",
        "provider": "tencent",
        "tencent": {
            "secret_id": "AKIDunitVoice01",
            "secret_key": "unitVoiceSecretKey01",
            "voice_sdk_app_id": "1400006666",
            "template_id": "4356",
        },
        "daily_cap_per_number": cap,
        "retry": {"initial": "10s", "max": "1m", "give_up_after": "1h"},
    }
    return Ruleset.model_validate(
        {
            "channels": [voice],
            "receivers": [{"name": "oncall-voice", "channels": [{"channel": "voice", "to": [ONE, TWO]}]}],
        }
    )


def intent(n: int, reason: str = "first") -> Intent:
    snapshot: dict[str, Any] = {
        "incident": f"rule/XID79/gpu-node-{n:02d}",
        "kind": "node",
        "reason": reason,
        "status": "resolved" if reason == "resolved" else "firing",
        "severity": "critical",
        "headline": f"gpu-node-{n:02d}: XID 79 on 1/8 GPUs",
        "labels": {"alertname": "XID79", "node": f"gpu-node-{n:02d}", "severity": "critical"},
        "summary": {},
        "alerts": [],
        "opened_at": T0.isoformat(),
        "at": T0.isoformat(),
    }
    return Intent(snapshot["incident"], "oncall-voice", NotifyReason(reason), MessageSnapshot.from_json(snapshot))


async def add(db: Database, intents: list[Intent], at: datetime) -> None:
    async with db.write() as s:
        await insert_intents(s, intents, at)
        await s.commit()


async def deliveries(db: Database) -> list[DeliveryRow]:
    async with db.read() as s:
        return list((await s.scalars(select(DeliveryRow).order_by(DeliveryRow.id))).all())


def worker(
    db: Database, cap: int, voice: ScriptedVoice, clock: Clock, metrics: Metrics | None = None
) -> DeliveryWorker:
    return DeliveryWorker(db, rules(cap), {"voice": voice}, clock=clock, rng=random.Random(0), metrics=metrics)


async def test_only_firing_and_repeat_messages_call(db: Database) -> None:
    clock, voice = Clock(), ScriptedVoice()
    w = worker(db, 10, voice, clock)
    for n, reason in enumerate(("first", "grew", "repeat", "resolved")):
        await add(db, [intent(n, reason)], clock.now)
        await w.run_once()
    assert [n.first.reason for n in voice.seen] == ["first", "repeat"]
    assert [r.status for r in await deliveries(db)] == ["sent", "sent"]


async def test_the_daily_cap_stops_the_next_call_to_a_number(db: Database) -> None:
    clock, voice, metrics = Clock(), ScriptedVoice(), Metrics()
    w = worker(db, 2, voice, clock, metrics)
    for n in range(3):
        await add(db, [intent(n)], clock.now)
        await w.run_once()
        clock.now += timedelta(hours=1)
    assert [n.recipients for n in voice.seen] == [(ONE, TWO), (ONE, TWO)]
    assert [r.status for r in await deliveries(db)] == ["sent", "sent", "capped"]
    sample = metrics.registry.get_sample_value
    assert sample("alertrouter_voice_calls_total", {"channel": "voice"}) == 4
    assert sample("alertrouter_voice_calls_capped_total", {"channel": "voice"}) == 2
    assert sample("alertrouter_notifications_total", {"channel": "voice", "result": "capped"}) == 1
    clock.now = T0 + timedelta(hours=25)  # a day after the first two calls
    await add(db, [intent(9)], clock.now)
    await w.run_once()
    assert len(voice.seen) == 3


async def test_a_retry_calls_only_who_was_not_reached(db: Database) -> None:
    clock, metrics = Clock(), Metrics()
    voice = ScriptedVoice([ChannelError("voice: 1 of 2 called; 138****0001: HTTP 502", reached=(ONE,))])
    w = worker(db, 1, voice, clock, metrics)
    await add(db, [intent(1)], clock.now)
    await w.run_once()
    (row,) = await deliveries(db)
    assert (row.status, row.message["recipients"]) == ("pending", [TWO])
    clock.now = row.next_attempt_at
    await w.run_once()
    assert [n.recipients for n in voice.seen] == [(ONE, TWO), (TWO,)]
    (row,) = await deliveries(db)
    assert row.status == "sent"
    assert metrics.registry.get_sample_value("alertrouter_voice_calls_total", {"channel": "voice"}) == 2
    await add(db, [intent(2)], clock.now)  # each number had its one call of the day: nobody is called
    await w.run_once()
    assert len(voice.seen) == 2
    assert [r.status for r in await deliveries(db)] == ["sent", "capped"]

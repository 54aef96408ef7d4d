"""Poison-proof delivery (issue 18, finding 3) on both stores: a message that cannot be rendered or sent
for an unexpected reason waits alone, on its own schedule, and is a dead letter saying why after
`MAX_UNEXPECTED` failures; the other messages of its channel and of other channels go out in the same
pass; the channel says it is unhealthy; an outbox row whose expansion raises is quarantined. Real
DingTalk channels post to the fake robot over loopback HTTP; the poison is a renderer that raises for
one label value, as the GPU grid did for `gpu="²"`."""

from __future__ import annotations

import logging
import random
import re
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update

from alertrouter.channels.base import Notification
from alertrouter.channels.registry import build_channels
from alertrouter.delivery.policy import MAX_UNEXPECTED
from alertrouter.delivery.worker import DeliveryWorker
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.metrics import Metrics
from alertrouter.pipeline.throttle import NotifyReason
from alertrouter.pipeline.types import Intent
from alertrouter.render.templates import Templates
from alertrouter.ruleset.schema import Ruleset
from alertrouter.store import Database
from alertrouter.store.incidents import insert_intents
from alertrouter.store.tables import ChannelStateRow, DeliveryAttemptRow, DeliveryRow, OutboxRow
from support.fakes.dingtalk import FakeDingTalk

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
CORE, BACKUP = "dt-core-token-8c1e55a0", "dt-backup-token-41d9b7"
POISON = "²"  # str.isdigit() is true, int() raises


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


class GridRenderer:
    """The real templates, behind the GPU-grid step that raised for `gpu="²"`; `leak`: a text the error
    carries (a URL with a token, as an exception from an HTTP library may)."""

    def __init__(self, leak: str = "") -> None:
        self.templates = Templates()
        self.leak = leak

    def _grid(self, notification: Notification) -> None:
        for item in notification.items:
            gpu = item.labels.get("gpu", "")
            if gpu.isdigit():
                try:
                    int(gpu)
                except ValueError as exc:
                    if self.leak:
                        raise ValueError(f"no grid for {gpu!r} ({self.leak})") from OSError(self.leak)
                    raise exc from None

    def render(self, channel: str, fmt: str, notification: Notification, *, limit_bytes: int | None = None) -> str:
        self._grid(notification)
        return self.templates.render(channel, fmt, notification, limit_bytes=limit_bytes)

    def title(self, notification: Notification, *, limit_bytes: int | None = None) -> str:
        self._grid(notification)
        return self.templates.title(notification, limit_bytes=limit_bytes)


def rules(robot: FakeDingTalk, *, messages: int = 20) -> Ruleset:
    def channel(name: str, token: str) -> dict[str, Any]:
        return {
            "name": name, "type": "dingtalk", "url": f"{robot.url}/robot/send", "access_token": token,
            "rate_limit": {"messages": messages, "per": "1m", "block": "10m"},
            "retry": {"initial": "10s", "max": "5m", "give_up_after": "24h"},
        }  # fmt: skip

    return Ruleset.model_validate(
        {
            "channels": [channel("core", CORE), channel("backup", BACKUP)],
            "receivers": [
                {"name": "oncall", "channels": ["core", "backup"]},
                {"name": "core-only", "channels": ["core"]},
            ],
        }
    )


def intent(n: int, *, gpu: str = "3", severity: str = "critical", receiver: str = "oncall") -> Intent:
    node = f"gpu-node-{n:02d}"
    labels = {"alertname": "GPUHighTemp", "node": node, "gpu": gpu, "severity": severity}
    return Intent(
        f"rule/GPUHighTemp/{node}",
        receiver,
        NotifyReason("first"),
        MessageSnapshot.from_json({
            "incident": f"rule/GPUHighTemp/{node}", "kind": "node", "reason": "first", "status": "firing",
            "severity": severity, "headline": f"{node}: GPUHighTemp on 1/8 GPUs", "labels": labels,
            "summary": {}, "alerts": [], "opened_at": T0.isoformat(), "at": T0.isoformat(),
        }),
    )  # fmt: skip


@pytest.fixture
def robot() -> Iterator[FakeDingTalk]:
    fake = FakeDingTalk({CORE: None, BACKUP: None})
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(trust_env=False) as c:
        yield c


def worker(
    db: Database, ruleset: Ruleset, client: httpx.AsyncClient, clock: Clock, renderer: GridRenderer, **kw: Any
) -> DeliveryWorker:
    channels = build_channels(ruleset, client=client, renderer=renderer)
    return DeliveryWorker(db, ruleset, channels, clock=clock, rng=random.Random(0), **kw)


async def add(db: Database, intents: list[Intent], at: datetime = T0) -> None:
    async with db.write() as s:
        await insert_intents(s, intents, at)
        await s.commit()


async def rows(db: Database, table: Any) -> list[Any]:
    async with db.read() as s:
        return list((await s.scalars(select(table).order_by(table.id if hasattr(table, "id") else table.name))).all())


def nodes(robot: FakeDingTalk, token: str) -> list[list[str]]:
    """The nodes each message the robot `token` accepted was about, in order."""
    return [sorted(set(re.findall(r"gpu-node-\d\d", str(m)))) for m in robot.messages(token)]


def by_node(deliveries: list[DeliveryRow], channel: str) -> dict[str, DeliveryRow]:
    return {d.message["items"][0]["labels"]["node"]: d for d in deliveries if d.channel == channel and d.outbox_id}


async def test_a_poisoned_message_waits_alone_and_becomes_a_dead_letter_saying_why(
    db: Database, robot: FakeDingTalk, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    clock, metrics = Clock(), Metrics()
    w = worker(db, rules(robot), client, clock, GridRenderer(), metrics=metrics)
    await add(db, [intent(1, gpu=POISON), intent(2)])  # the poisoned one is first in the queue
    await w.run_once()
    # the healthy message went out on both channels in the very pass the poisoned one failed
    assert nodes(robot, CORE) == [["gpu-node-02"]]
    assert nodes(robot, BACKUP) == [["gpu-node-02"]]
    for channel in ("core", "backup"):
        poisoned = by_node(await rows(db, DeliveryRow), channel)["gpu-node-01"]
        assert (poisoned.status, poisoned.attempts, poisoned.unexpected_failures) == ("pending", 1, 1)
        assert poisoned.next_attempt_at > clock.now  # its own backoff
        assert poisoned.last_error is not None
        assert "ValueError: invalid literal for int() with base 10: '²'" in poisoned.last_error
    states = {s.name: s for s in await rows(db, ChannelStateRow)}
    assert {n: (s.retry_at, s.consecutive_failures) for n, s in states.items()} == {
        "core": (None, 0),
        "backup": (None, 0),
    }  # the channels themselves are not held back ...

    await add(db, [intent(3)], at=clock.now)
    clock.now += timedelta(seconds=1)  # ... so a later page goes out at once, long before the retry
    await w.run_once()
    assert nodes(robot, CORE)[-1] == ["gpu-node-03"]
    assert nodes(robot, BACKUP)[-1] == ["gpu-node-03"]

    for _ in range(20):  # retried on its own schedule until the bound
        due = [d.next_attempt_at for d in await rows(db, DeliveryRow) if d.status == "pending"]
        if not due:
            break
        clock.now = max(clock.now, min(due))
        await w.run_once()
    for channel in ("core", "backup"):
        dead = by_node(await rows(db, DeliveryRow), channel)["gpu-node-01"]
        assert (dead.status, dead.attempts, dead.unexpected_failures) == ("dead", MAX_UNEXPECTED, MAX_UNEXPECTED)
        assert dead.last_error == (
            f"dead letter after {MAX_UNEXPECTED} unexpected failures: "
            "ValueError: invalid literal for int() with base 10: '²'"
        )
    assert clock.now - T0 < timedelta(hours=1)  # bounded by the count, not by give_up_after (24 h)
    outcomes = [a.outcome for a in await rows(db, DeliveryAttemptRow) if a.channel == "core"]
    assert outcomes.count("error") == MAX_UNEXPECTED - 1
    assert outcomes.count("dead") == 1
    assert outcomes.count("sent") == 2
    assert nodes(robot, CORE) == [["gpu-node-02"], ["gpu-node-03"]]  # nothing else, nothing twice

    sample = metrics.registry.get_sample_value
    for channel in ("core", "backup"):
        assert sample("alertrouter_notifications_total", {"channel": channel, "result": "error"}) == MAX_UNEXPECTED
        assert sample("alertrouter_notifications_total", {"channel": channel, "result": "dead"}) == 1
    assert sample("alertrouter_loop_errors_total", {"loop": "delivery"}) == 2 * MAX_UNEXPECTED
    tracebacks = [r for r in caplog.records if r.exc_info and "int() with base 10" in r.getMessage()]
    assert len(tracebacks) == 1  # one distinct error: its traceback once, repeats as single lines


async def test_a_combined_message_that_fails_is_retried_message_by_message(
    db: Database, robot: FakeDingTalk, client: httpx.AsyncClient
) -> None:
    clock = Clock()
    w = worker(db, rules(robot, messages=3), client, clock, GridRenderer())
    only = "core-only"
    await add(
        db,
        [
            intent(1, receiver=only),
            intent(2, receiver=only),
            intent(3, gpu=POISON, severity="warning", receiver=only),
            intent(4, severity="warning", receiver=only),
        ],
    )
    await w.run_once()  # 4 due, budget 3: one coalesced message, which raises on the poisoned item
    deliveries = await rows(db, DeliveryRow)
    (split,) = [d for d in deliveries if d.kind == "coalesced"]
    assert split.status == "split"
    assert split.last_error is not None
    assert "ValueError" in split.last_error
    # in the same pass, within the budget left (2), worst first and each alone
    assert nodes(robot, CORE) == [["gpu-node-01"], ["gpu-node-02"]]
    clock.now += timedelta(seconds=61)
    await w.run_once()
    assert nodes(robot, CORE)[2:] == [["gpu-node-04"]]  # the poisoned one failed again, alone
    members = by_node(await rows(db, DeliveryRow), "core")
    assert {n: d.status for n, d in members.items()} == {
        "gpu-node-01": "sent",
        "gpu-node-02": "sent",
        "gpu-node-03": "pending",
        "gpu-node-04": "sent",
    }
    assert members["gpu-node-03"].unexpected_failures == 2
    assert all(d.parent_id is None for d in members.values())


async def test_the_channel_is_unhealthy_while_a_message_fails_unexpectedly(
    db: Database, robot: FakeDingTalk, client: httpx.AsyncClient
) -> None:
    clock = Clock()
    w = worker(db, rules(robot), client, clock, GridRenderer())

    async def core() -> ChannelStateRow:
        states: dict[str, ChannelStateRow] = {s.name: s for s in await rows(db, ChannelStateRow)}
        return states["core"]

    await add(db, [intent(1, receiver="core-only")])
    await w.run_once()
    assert (await core()).healthy
    await add(db, [intent(2, gpu=POISON, receiver="core-only"), intent(3, receiver="core-only")], at=clock.now)
    clock.now += timedelta(seconds=1)
    await w.run_once()
    state = await core()
    assert nodes(robot, CORE)[-1] == ["gpu-node-03"]  # sent after the poisoned one failed ...
    assert not state.healthy  # ... and yet the channel is not healthy: one of its messages fails
    assert state.last_error is not None
    assert "ValueError" in state.last_error
    async with db.write() as s:  # the poisoned message reaches its bound
        await s.execute(update(DeliveryRow).where(DeliveryRow.status == "pending").values(unexpected_failures=4))
        await s.commit()
    clock.now += timedelta(hours=1)
    await w.run_once()
    assert [d.status for d in await rows(db, DeliveryRow)] == ["sent", "dead", "sent"]
    assert not (await core()).healthy  # a dead letter of that kind: unhealthy until a send succeeds
    await add(db, [intent(4, receiver="core-only")], at=clock.now)
    await w.run_once()
    assert (await core()).healthy


async def test_no_secret_in_a_stored_error_or_a_log_record(
    db: Database, robot: FakeDingTalk, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    clock = Clock()
    leak = f"{robot.url}/robot/send?access_token={CORE}"
    w = worker(db, rules(robot), client, clock, GridRenderer(leak=leak))
    await add(db, [intent(1, gpu=POISON, receiver="core-only")])
    await w.run_once()
    clock.now += timedelta(hours=1)
    await w.run_once()
    (row,) = await rows(db, DeliveryRow)
    texts = [row.last_error or ""] + [a.error or "" for a in await rows(db, DeliveryAttemptRow)]
    texts += [s.last_error or "" for s in await rows(db, ChannelStateRow)]
    assert all("access_token=***" in t for t in texts[:3])  # the error is there, masked
    formatter = logging.Formatter()
    texts += [formatter.format(r) for r in caplog.records]
    assert any("Traceback" in t for t in texts)
    assert [t for t in texts if CORE in t] == []


async def test_an_outbox_row_whose_expansion_raises_is_quarantined(
    db: Database, robot: FakeDingTalk, client: httpx.AsyncClient
) -> None:
    clock = Clock()
    w = worker(db, rules(robot), client, clock, GridRenderer())
    await add(db, [intent(1), intent(2)])
    async with db.write() as s:  # a damaged row: an alert that is not one
        damaged = {**intent(1).message.to_json(), "alerts": [7]}
        await s.execute(update(OutboxRow).where(OutboxRow.incident_key.endswith("gpu-node-01")).values(message=damaged))
        await s.commit()
    await w.run_once()
    assert nodes(robot, CORE) == [["gpu-node-02"]]
    outbox = {r.incident_key[-11:]: r for r in await rows(db, OutboxRow)}
    assert outbox["gpu-node-01"].status == "quarantined"
    assert outbox["gpu-node-01"].last_error == "expansion failed: MessageError: alerts[0]: expected an object, got int"
    assert outbox["gpu-node-02"].status == "dispatched"
    await add(db, [intent(3)], at=clock.now)
    clock.now += timedelta(seconds=1)
    await w.run_once()  # later passes skip it and go on
    assert nodes(robot, CORE) == [["gpu-node-02"], ["gpu-node-03"]]
    assert {r.status for r in await rows(db, OutboxRow)} == {"quarantined", "dispatched"}

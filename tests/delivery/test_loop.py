"""The started delivery loop: a nudge is worked at once, and a channel slow to answer holds back no
other channel's messages (no timings: events and polling with a deadline)."""

from __future__ import annotations

import asyncio

from delivery.test_worker import Clock, ScriptedChannel, add, deliveries, intent, ruleset, worker

from alertrouter.channels.base import Notification
from alertrouter.store import Database

DEADLINE = 10.0


class WatchedChannel(ScriptedChannel):
    """Lets a test wait for its messages."""

    def __init__(self, name: str, type_: str = "dingtalk") -> None:
        super().__init__(name, type_)
        self._changed = asyncio.Condition()

    async def send(self, notification: Notification) -> None:
        await super().send(notification)
        async with self._changed:
            self._changed.notify_all()

    async def sent_within(self, count: int) -> None:
        async with asyncio.timeout(DEADLINE), self._changed:
            await self._changed.wait_for(lambda: len(self.sent) >= count)


class HangingChannel(WatchedChannel):
    """Takes each message and answers only once released (a vendor that stopped answering)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def send(self, notification: Notification) -> None:
        self.entered.set()
        await self.release.wait()
        await super().send(notification)


async def test_a_channel_slow_to_answer_holds_back_no_other_channels_message(db: Database) -> None:
    robot, sms = HangingChannel("robot"), WatchedChannel("sms", type_="sms")
    w = worker(db, ruleset(), {"robot": robot, "sms": sms}, Clock())
    await add(db, [intent(1)])  # to the robot, which will not answer for now
    w.start()
    try:
        async with asyncio.timeout(DEADLINE):
            await robot.entered.wait()
        await add(db, [intent(2, receiver="pager")])  # an SMS, while the robot's request hangs
        w.nudge()
        await sms.sent_within(1)
        assert robot.sent == []
        # a second message for the hanging robot is taken once its request is answered
        await add(db, [intent(3)])
        w.nudge()
        robot.release.set()
        await robot.sent_within(2)
    finally:
        robot.release.set()
        await w.stop()
    assert [n.items[0].headline for n in robot.sent] == [
        "gpu-node-01: GPUHighTemp on 1/8 GPUs",
        "gpu-node-03: GPUHighTemp on 1/8 GPUs",
    ]


async def test_stop_lets_a_send_in_flight_finish_and_be_recorded(db: Database) -> None:
    robot = HangingChannel("robot")
    w = worker(db, ruleset(), {"robot": robot}, Clock())
    await add(db, [intent(1)])
    w.start()
    async with asyncio.timeout(DEADLINE):
        await robot.entered.wait()
    stopping = asyncio.create_task(w.stop())
    robot.release.set()
    await stopping
    assert len(robot.sent) == 1
    assert [d.status for d in await deliveries(db)] == ["sent"]

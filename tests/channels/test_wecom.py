"""WeCom channel against a fake robot over real loopback HTTP: formats, size limits, pings, answers, secrets."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from alertrouter.channels.base import Channel, ChannelError, Mentions, Notification, truncate_utf8
from alertrouter.channels.wecom import MARKDOWN_MAX_BYTES, TEXT_MAX_BYTES, WeComChannel
from alertrouter.ruleset.channels import WeComChannelConfig
from support.channels import ManualClock, notification
from support.contract import HTTP_FAULTS, ChannelContract, Fault, assert_no_secret_leaks, assert_transient
from support.fakes.wecom import FakeWeCom

KEY = "6a1f9c3e-0b7d-4e2a-9c5f-wecom-key-81"
OTHER_KEY = "0d3b7e21-55aa-4c19-8e60-wecom-key-07"
MOBILE = "13800000000"


def sample(**changes: Any) -> Notification:
    return notification(**({"mentions": Mentions(mobiles=(MOBILE,))} | changes))


class StubRenderer:
    """Keeps the Renderer contract the way the real one does: never more than `limit_bytes`."""

    def __init__(self, text: str | None = None) -> None:
        self.text = text
        self.calls: list[tuple[str, str, int | None]] = []

    def render(self, channel: str, fmt: str, notification: Notification, *, limit_bytes: int | None = None) -> str:
        self.calls.append((channel, fmt, limit_bytes))
        text = self.text if self.text is not None else f"## {notification.first.headline} ({fmt})"
        return text if limit_bytes is None else truncate_utf8(text, limit_bytes)

    def title(self, notification: Notification, *, limit_bytes: int | None = None) -> str:
        return str(notification.first.headline)


@pytest.fixture
def robot() -> Iterator[FakeWeCom]:
    fake = FakeWeCom({KEY, OTHER_KEY})
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(trust_env=False) as c:
        yield c


def channel_for(
    url: str, client: httpx.AsyncClient, renderer: StubRenderer | None = None, *, key: str = KEY, **extra: Any
) -> WeComChannel:
    config = WeComChannelConfig.model_validate(
        {"name": "gpu-oncall", "type": "wecom", "url": f"{url}/cgi-bin/webhook/send", "key": key} | extra
    )
    return WeComChannel(config, client=client, renderer=renderer or StubRenderer())


DELETED_KEY = "deleted-robot-key-0000"


def contract(client: httpx.AsyncClient) -> ChannelContract[FakeWeCom]:
    """The shared checks' view of this channel: a robot, and one whose key was deleted."""
    return ChannelContract(
        vendor=lambda: FakeWeCom({KEY}),
        channel=lambda robot, timeout: channel_for(robot.url, client, timeout=timeout),
        delivered=lambda robot: len(robot.accepted),
        notification=sample(),
        secrets=(KEY, DELETED_KEY),
        mistakes={"deleted robot": lambda robot: channel_for(robot.url, client, key=DELETED_KEY)},
    )


async def test_markdown_mentions_user_ids_inside_the_content(robot: FakeWeCom, client: httpx.AsyncClient) -> None:
    renderer = StubRenderer()
    channel: Channel = channel_for(robot.url, client, renderer)

    await channel.send(sample(mentions=Mentions(user_ids=("zhangsan", "lisi"))))

    (body,) = robot.messages(KEY)
    assert body == {
        "msgtype": "markdown",
        "markdown": {"content": "## gpu-node-07: GPUHighTemp on 6/8 GPUs (md)\n<@zhangsan> <@lisi>"},
    }
    assert renderer.calls[0][:2] == ("wecom", "md")
    assert [p.user_ids for p in robot.pings] == [("zhangsan", "lisi")]
    assert channel.type == "wecom"


@pytest.mark.parametrize(
    ("mentions", "mentioned"),
    [
        (Mentions(mobiles=(MOBILE,)), {"mentioned_mobile_list": [MOBILE]}),
        (Mentions(all=True), {"mentioned_list": ["@all"]}),
        (
            Mentions(mobiles=(MOBILE,), user_ids=("zhangsan",)),
            {"mentioned_list": ["zhangsan"], "mentioned_mobile_list": [MOBILE]},
        ),
    ],
)
async def test_pings_markdown_cannot_carry_are_sent_as_text(
    robot: FakeWeCom, client: httpx.AsyncClient, mentions: Mentions, mentioned: dict[str, list[str]]
) -> None:
    renderer = StubRenderer()
    channel = channel_for(robot.url, client, renderer)

    await channel.send(sample(mentions=mentions))

    (body,) = robot.messages(KEY)
    assert body == {
        "msgtype": "text",
        "text": {"content": "## gpu-node-07: GPUHighTemp on 6/8 GPUs (txt)", **mentioned},
    }
    assert renderer.calls == [("wecom", "txt", TEXT_MAX_BYTES)]
    assert len(robot.pings) == 1


async def test_text_msgtype_is_used_when_configured(robot: FakeWeCom, client: httpx.AsyncClient) -> None:
    channel = channel_for(robot.url, client, msgtype="text")

    await channel.send(sample(mentions=Mentions(user_ids=("zhangsan",))))

    (body,) = robot.messages(KEY)
    assert body["msgtype"] == "text"
    assert body["text"]["mentioned_list"] == ["zhangsan"]


HUGE = '节点 gpu-node-07 "过热"\n' * 3000


@pytest.mark.parametrize(
    ("mentions", "msgtype", "limit"),
    [
        (Mentions(user_ids=("zhangsan",)), "markdown", MARKDOWN_MAX_BYTES),
        (Mentions(), "markdown", MARKDOWN_MAX_BYTES),
        (Mentions(mobiles=(MOBILE,)), "text", TEXT_MAX_BYTES),
    ],
)
async def test_content_stays_within_the_msgtype_limit(
    robot: FakeWeCom, client: httpx.AsyncClient, mentions: Mentions, msgtype: str, limit: int
) -> None:
    channel = channel_for(robot.url, client, StubRenderer(HUGE))

    await channel.send(sample(mentions=mentions))

    (body,) = robot.messages(KEY)
    assert body["msgtype"] == msgtype
    size = len(body[msgtype]["content"].encode())
    assert limit - 100 < size <= limit


async def test_unknown_key_is_permanent(robot: FakeWeCom, client: httpx.AsyncClient) -> None:
    channel = channel_for(robot.url, client, key=DELETED_KEY)

    with pytest.raises(ChannelError) as caught:
        await channel.send(sample())

    assert caught.value.permanent
    assert caught.value.code == "93000"
    assert caught.value.message.startswith("WeCom robot gpu-oncall: errcode 93000 invalid webhook url")


async def test_the_21st_message_in_a_minute_is_rate_limited(robot: FakeWeCom, client: httpx.AsyncClient) -> None:
    channel = channel_for(robot.url, client)
    for _ in range(20):
        await channel.send(sample())

    with pytest.raises(ChannelError) as caught:
        await channel.send(sample())

    assert caught.value.rate_limited
    assert not caught.value.permanent
    assert caught.value.code == "45009"
    await channel_for(robot.url, client, key=OTHER_KEY).send(sample())  # another robot is not blocked


@pytest.mark.parametrize("fault", HTTP_FAULTS, ids=str)
async def test_faults_are_transient(client: httpx.AsyncClient, fault: Fault) -> None:
    await assert_transient(contract(client), fault)


ANSWERS = [
    ({"errcode": 0, "errmsg": "ok"}, None),
    ({"errcode": 93000, "errmsg": "invalid webhook url"}, "permanent"),
    ({"errcode": 40058, "errmsg": "content exceed max length"}, "permanent"),
    ({"errcode": 45009, "errmsg": "api freq out of limit"}, "rate_limited"),
    ({"errcode": 45033, "errmsg": "api freq out of limit, too many concurrent"}, "rate_limited"),
    ({"errcode": -1, "errmsg": "system busy"}, "transient"),
    ({"errmsg": "ok"}, "transient"),
]


@pytest.mark.parametrize(("answer", "expected"), ANSWERS)
async def test_answers_map_to_outcomes(answer: dict[str, Any], expected: str | None) -> None:
    async with httpx.AsyncClient(transport=httpx.MockTransport(lambda r: httpx.Response(200, json=answer))) as client:
        channel = channel_for("https://qyapi.example", client)
        if expected is None:
            await channel.send(sample())
            return
        with pytest.raises(ChannelError) as caught:
            await channel.send(sample())
    outcome = "rate_limited" if caught.value.rate_limited else "permanent" if caught.value.permanent else "transient"
    assert outcome == expected


async def test_no_key_reaches_an_error_or_a_log_record(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    seen = await assert_no_secret_leaks(contract(client), caplog)

    assert any("webhook/send?key=***" in line for line in seen.logs)  # httpx logged the URL, redacted


# -- the fake itself --------------------------------------------------------------------------------


def errcode(fake: FakeWeCom, body: dict[str, Any], key: str = KEY) -> int:
    answer = httpx.post(f"{fake.url}/cgi-bin/webhook/send", params={"key": key}, json=body, trust_env=False)
    code: int = answer.json()["errcode"]
    return code


def test_fake_blocks_a_robot_for_block_seconds() -> None:
    clock = ManualClock(50.0)
    fake = FakeWeCom({KEY}, clock=clock, block=300)
    text = {"msgtype": "text", "text": {"content": "x"}}
    with fake:
        assert [errcode(fake, text) for _ in range(21)] == [0] * 20 + [45009]
        clock.now += 299
        assert errcode(fake, text) == 45009
        clock.now += 2
        assert errcode(fake, text) == 0


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"msgtype": "markdown", "markdown": {"content": "x" * 4096}}, 0),
        ({"msgtype": "markdown", "markdown": {"content": "x" * 4097}}, 40058),
        ({"msgtype": "markdown", "markdown": {"content": "节" * 1366}}, 40058),  # 4,098 bytes, 1,366 characters
        ({"msgtype": "text", "text": {"content": "x" * 2049}}, 40058),
        ({"msgtype": "text", "markdown": {"content": "x"}}, 40008),
        ({"msgtype": "text", "text": {"content": ""}}, 44004),
    ],
)
def test_fake_checks_content(robot: FakeWeCom, body: dict[str, Any], expected: int) -> None:
    assert errcode(robot, body) == expected


def test_fake_refuses_unknown_keys_without_counting_them() -> None:
    fake = FakeWeCom({KEY}, limit=1)
    with fake:
        assert errcode(fake, {"msgtype": "text", "text": {"content": "x"}}, key="nope") == 93000
        assert errcode(fake, {"msgtype": "text", "text": {"content": "x"}}) == 0

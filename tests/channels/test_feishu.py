"""Feishu channel against a fake bot over real loopback HTTP: body signing, answers, size, secrets."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from alertrouter.channels.base import Channel, ChannelError, Mentions, Notification, truncate_utf8
from alertrouter.channels.feishu import MAX_BODY_BYTES, FeishuChannel, feishu_sign
from alertrouter.ruleset.channels import FeishuChannelConfig
from support.channels import ManualClock, notification
from support.contract import HTTP_FAULTS, ChannelContract, Fault, assert_no_secret_leaks, assert_transient
from support.fakes.feishu import HOOK_PATH, TOO_LARGE, FakeFeishu

HOOK = "3f2a9b1c-7d4e-4f60-8a2b-feishu-hook-19"
PLAIN_HOOK = "9e8d7c6b-5a49-4382-9170-feishu-hook-02"
SECRET = "feishu-secret-Zk3"

# Computed once with a separate script (hmac/hashlib/base64) and pasted.
KNOWN_SIGN = (SECRET, 1700000000, "MVITWnAUMbs9f0NclOxQluwiG4KoVUPWiHUwVno4qIM=")


def sample(**changes: Any) -> Notification:
    return notification(**({"mentions": Mentions(mobiles=("13800000000",))} | changes))


class StubRenderer:
    """Keeps the Renderer contract the way the real one does: never more than `limit_bytes`."""

    def __init__(self, text: str | None = None) -> None:
        self.text = text
        self.calls: list[tuple[str, str, int | None]] = []

    def render(self, channel: str, fmt: str, notification: Notification, *, limit_bytes: int | None = None) -> str:
        self.calls.append((channel, fmt, limit_bytes))
        text = self.text if self.text is not None else f"{notification.first.headline}\n{notification.link}"
        return text if limit_bytes is None else truncate_utf8(text, limit_bytes)

    def title(self, notification: Notification, *, limit_bytes: int | None = None) -> str:
        return str(notification.first.headline)


@pytest.fixture
def bot() -> Iterator[FakeFeishu]:
    fake = FakeFeishu({HOOK: SECRET, PLAIN_HOOK: None})
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
    url: str,
    client: httpx.AsyncClient,
    renderer: StubRenderer | None = None,
    *,
    hook: str = HOOK,
    secret: str | None = SECRET,
    clock: Any = time.time,
    **extra: Any,
) -> FeishuChannel:
    data = {"name": "gpu-oncall", "type": "feishu", "url": f"{url}{HOOK_PATH}", "hook": hook} | extra
    config = FeishuChannelConfig.model_validate(data | ({"secret": secret} if secret else {}))
    return FeishuChannel(config, client=client, renderer=renderer or StubRenderer(), clock=clock)


WRONG_SECRET = "not-the-secret-4411"
DELETED_HOOK = "deleted-hook-0000"


def contract(client: httpx.AsyncClient) -> ChannelContract[FakeFeishu]:
    """The shared checks' view of this channel: a signing bot, and two set up wrong."""
    return ChannelContract(
        vendor=lambda: FakeFeishu({HOOK: SECRET}),
        channel=lambda bot, timeout: channel_for(bot.url, client, timeout=timeout),
        delivered=lambda bot: len(bot.accepted),
        notification=sample(),
        secrets=(HOOK, SECRET, WRONG_SECRET, DELETED_HOOK),
        mistakes={
            "wrong secret": lambda bot: channel_for(bot.url, client, secret=WRONG_SECRET),
            "deleted hook": lambda bot: channel_for(bot.url, client, hook=DELETED_HOOK),
        },
        wire_secrets=lambda bot: {r.json()["sign"] for r in bot.received if "sign" in r.json()},
    )


@pytest.mark.parametrize(("secret", "timestamp_s"), [(SECRET, 1700000000), ("s", 0), ("密钥", 1763719230)])
def test_sign_is_hmac_sha256_keyed_by_timestamp_and_secret_over_nothing(secret: str, timestamp_s: int) -> None:
    digest = hmac.new(f"{timestamp_s}\n{secret}".encode(), b"", hashlib.sha256).digest()
    assert feishu_sign(secret, timestamp_s) == base64.b64encode(digest).decode()
    dingtalk_style = hmac.new(secret.encode(), f"{timestamp_s}\n{secret}".encode(), hashlib.sha256).digest()
    assert feishu_sign(secret, timestamp_s) != base64.b64encode(dingtalk_style).decode()


def test_sign_matches_a_known_vector() -> None:
    secret, timestamp_s, expected = KNOWN_SIGN
    assert feishu_sign(secret, timestamp_s) == expected


async def test_signed_text_message_is_delivered(bot: FakeFeishu, client: httpx.AsyncClient) -> None:
    renderer = StubRenderer()
    channel: Channel = channel_for(bot.url, client, renderer, clock=lambda: 1763719230.9)
    bot.wall_clock = lambda: 1763719231.0

    await channel.send(sample(mentions=Mentions(user_ids=("ou_123",), all=True)))

    (body,) = bot.messages(HOOK)
    assert body == {
        "timestamp": "1763719230",
        "sign": feishu_sign(SECRET, 1763719230),
        "msg_type": "text",
        "content": {
            "text": "gpu-node-07: GPUHighTemp on 6/8 GPUs\nhttp://alertrouter.example/incidents/12\n"
            '<at user_id="ou_123"></at> <at user_id="all">所有人</at>'
        },
    }
    assert renderer.calls == [("feishu", "txt", 20_000)]
    assert channel.type == "feishu"


async def test_unsigned_bot_gets_no_timestamp_or_sign(bot: FakeFeishu, client: httpx.AsyncClient) -> None:
    await channel_for(bot.url, client, hook=PLAIN_HOOK, secret=None).send(sample())

    (body,) = bot.messages(PLAIN_HOOK)
    assert set(body) == {"msg_type", "content"}


async def test_wrong_secret_is_permanent(bot: FakeFeishu, client: httpx.AsyncClient) -> None:
    with pytest.raises(ChannelError) as caught:
        await channel_for(bot.url, client, secret="not-the-secret").send(sample())

    assert caught.value.permanent
    assert caught.value.code == "19021"
    assert caught.value.message.startswith("Feishu bot gpu-oncall: code 19021 sign match fail")


async def test_unknown_hook_is_permanent(bot: FakeFeishu, client: httpx.AsyncClient) -> None:
    with pytest.raises(ChannelError) as caught:
        await channel_for(bot.url, client, hook=DELETED_HOOK).send(sample())

    assert caught.value.permanent
    assert caught.value.code == "19001"


async def test_over_the_limit_is_rate_limited(client: httpx.AsyncClient) -> None:
    fake = FakeFeishu({HOOK: SECRET}, limit=3, burst=None)
    with fake:
        channel = channel_for(fake.url, client)
        for _ in range(3):
            await channel.send(sample())
        with pytest.raises(ChannelError) as caught:
            await channel.send(sample())

    assert caught.value.rate_limited
    assert caught.value.code == "9499"
    assert caught.value.retry_after == 60.0


async def test_huge_text_keeps_the_body_under_the_limit(bot: FakeFeishu, client: httpx.AsyncClient) -> None:
    channel = channel_for(bot.url, client, StubRenderer('节点 "gpu-node-07"\n\t过热 ' * 5000))

    await channel.send(sample())

    (request,) = bot.accepted
    assert len(request.body) <= MAX_BODY_BYTES
    assert len(json.loads(request.body)["content"]["text"].encode()) <= 20_000


@pytest.mark.parametrize("fault", HTTP_FAULTS, ids=str)
async def test_faults_are_transient(client: httpx.AsyncClient, fault: Fault) -> None:
    await assert_transient(contract(client), fault)


ANSWERS = [
    (200, {"code": 0, "data": {}, "msg": "success"}, None),
    (200, {"Extra": None, "StatusCode": 0, "StatusMessage": "success"}, None),
    (200, {"code": 19021, "msg": "sign match fail"}, "permanent"),
    (200, {"code": 19001, "msg": "param invalid: incoming webhook access token invalid"}, "permanent"),
    (200, {"code": 19024, "msg": "Key Words Not Found"}, "permanent"),
    (200, {"code": 9499, "msg": "too many request"}, "rate_limited"),
    (400, {"code": 11232, "msg": "frequency limited"}, "rate_limited"),  # the open API's 400 + code
    (400, {"code": 19002, "msg": "params error"}, "permanent"),
    (200, {"code": 2200, "msg": "internal error"}, "transient"),
    (200, {"msg": "ok"}, "transient"),
]


@pytest.mark.parametrize(("status", "answer", "expected"), ANSWERS)
async def test_answers_map_to_outcomes(status: int, answer: dict[str, Any], expected: str | None) -> None:
    transport = httpx.MockTransport(lambda r: httpx.Response(status, json=answer))
    async with httpx.AsyncClient(transport=transport) as client:
        channel = channel_for("https://open.feishu.example", client)
        if expected is None:
            await channel.send(sample())
            return
        with pytest.raises(ChannelError) as caught:
            await channel.send(sample())
    outcome = "rate_limited" if caught.value.rate_limited else "permanent" if caught.value.permanent else "transient"
    assert outcome == expected


async def test_no_hook_or_secret_reaches_an_error_or_a_log_record(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    seen = await assert_no_secret_leaks(contract(client), caplog)

    assert any("/bot/v2/hook/***" in line for line in seen.logs)  # httpx logged the URL, redacted


# -- the fake itself --------------------------------------------------------------------------------


def code_for(fake: FakeFeishu, body: dict[str, Any] | bytes, hook: str = PLAIN_HOOK) -> tuple[int, int]:
    url = f"{fake.url}{HOOK_PATH}{hook}"
    answer = (
        httpx.post(url, content=body, trust_env=False)
        if isinstance(body, bytes)
        else httpx.post(url, json=body, trust_env=False)
    )
    code: int = answer.json()["code"]
    return answer.status_code, code


TEXT = {"msg_type": "text", "content": {"text": "x"}}


def test_fake_limits_five_a_second_and_a_hundred_a_minute() -> None:
    clock = ManualClock(10.0)
    fake = FakeFeishu({PLAIN_HOOK: None}, clock=clock, limit=100, block=60)
    with fake:
        assert [code_for(fake, TEXT)[1] for _ in range(6)] == [0] * 5 + [9499]
        for _ in range(19):  # 5 a second up to 100 in the minute
            clock.now += 1.0
            assert [code_for(fake, TEXT)[1] for _ in range(5)] == [0] * 5
        clock.now += 1.0
        assert code_for(fake, TEXT)[1] == 9499  # the 101st within the minute starts the block
        clock.now += 59.5
        assert code_for(fake, TEXT)[1] == 9499
        clock.now += 1.0
        assert code_for(fake, TEXT)[1] == 0


def test_fake_checks_hook_signature_window_and_size() -> None:
    wall = ManualClock(1763719230.0)
    fake = FakeFeishu({HOOK: SECRET}, wall_clock=wall)
    signed = {"timestamp": "1763719230", "sign": feishu_sign(SECRET, 1763719230)} | TEXT
    with fake:
        assert code_for(fake, signed, hook=HOOK) == (200, 0)
        assert code_for(fake, TEXT, hook=HOOK) == (200, 19021)
        assert code_for(fake, signed, hook="unknown") == (200, 19001)
        wall.now += 3601
        assert code_for(fake, signed, hook=HOOK) == (200, 19021)
        assert code_for(fake, b"x" * 30_001, hook=HOOK) == (400, TOO_LARGE)

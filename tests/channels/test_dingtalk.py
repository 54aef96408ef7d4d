"""DingTalk channel against a fake robot over real loopback HTTP: signing, answers, size, pings, secrets."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import quote_plus

import httpx
import pytest

from alertrouter.channels.base import Channel, ChannelError, Mentions, Notification, truncate_utf8
from alertrouter.channels.dingtalk import BUTTON_TITLE, MAX_BODY_BYTES, DingTalkChannel, dingtalk_sign
from alertrouter.ruleset.channels import DingTalkChannelConfig
from support.channels import ManualClock, notification
from support.contract import HTTP_FAULTS, ChannelContract, Fault, assert_no_secret_leaks, assert_transient
from support.fakes.dingtalk import BAD_REQUEST, FakeDingTalk

TOKEN = "dt-token-5b1f9e0c7a"
SECRET = "SEC2f1f0c9d3b6e4a7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2"
PLAIN = "dt-plain-token-77aa31"  # a robot that does not sign
KEYWORD_TOKEN = "dt-keyword-token-3c9d"
KEYWORD = "GPU告警"
MOBILE = "13800000000"

# Computed once with a separate script (hmac/hashlib/base64/urllib.parse.quote_plus) and pasted.
KNOWN_SIGNS = {
    1700000000000: "frnbfJPF4xBiGpN8tM0r9NDE3RZ1K2TFv10JaB1IQ8c%3D",
    1700000000004: "apKE8FE%2B%2Fj8cxINqnSDGuOPv1ULVnw%2FiKHNn1V7eeQc%3D",  # holds + and /
}


def sample(**changes: Any) -> Notification:
    return notification(**({"mentions": Mentions(mobiles=(MOBILE,))} | changes))


class StubRenderer:
    """Keeps the Renderer contract the way the real one does: never more than `limit_bytes`."""

    def __init__(self, text: str | None = None) -> None:
        self.text = text
        self.limits: list[int | None] = []

    def render(self, channel: str, fmt: str, notification: Notification, *, limit_bytes: int | None = None) -> str:
        self.limits.append(limit_bytes)
        text = self.text
        if text is None:
            text = f"### {notification.first.headline}\n\n- region: north\n\n[details]({notification.link})"
        return text if limit_bytes is None else truncate_utf8(text, limit_bytes)

    def title(self, notification: Notification, *, limit_bytes: int | None = None) -> str:
        title = f"[{notification.severity}] {notification.first.headline}"
        return title if limit_bytes is None else truncate_utf8(title, limit_bytes)


def make_config(url: str, *, token: str = TOKEN, secret: str | None = SECRET, **extra: Any) -> DingTalkChannelConfig:
    return DingTalkChannelConfig.model_validate(
        {"name": "gpu-oncall", "type": "dingtalk", "url": f"{url}/robot/send", "access_token": token}
        | ({"secret": secret} if secret else {})
        | extra
    )


@pytest.fixture
def robot() -> Iterator[FakeDingTalk]:
    fake = FakeDingTalk({TOKEN: SECRET, PLAIN: None, KEYWORD_TOKEN: None}, keywords={KEYWORD_TOKEN: KEYWORD})
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
    robot: FakeDingTalk, client: httpx.AsyncClient, renderer: StubRenderer | None = None, **kw: Any
) -> DingTalkChannel:
    clock = kw.pop("clock", time.time)
    return DingTalkChannel(
        make_config(robot.url, **kw), client=client, renderer=renderer or StubRenderer(), clock=clock
    )


WRONG_SECRET = "SECnot-the-robots-secret-9f"
DELETED_TOKEN = "dt-token-deleted-robot"


def contract(client: httpx.AsyncClient) -> ChannelContract[FakeDingTalk]:
    """The shared checks' view of this channel: a signing robot, and two set up wrong."""
    return ChannelContract(
        vendor=lambda: FakeDingTalk({TOKEN: SECRET}),
        channel=lambda robot, timeout: channel_for(robot, client, timeout=timeout),
        delivered=lambda robot: len(robot.accepted),
        notification=sample(),
        secrets=(TOKEN, SECRET, WRONG_SECRET, DELETED_TOKEN),
        mistakes={
            "wrong secret": lambda robot: channel_for(robot, client, secret=WRONG_SECRET),
            "deleted robot": lambda robot: channel_for(robot, client, token=DELETED_TOKEN),
        },
        wire_secrets=lambda robot: {r.query["sign"] for r in robot.received if "sign" in r.query},
    )


# -- signing ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("secret", "timestamp_ms"),
    [(SECRET, 1700000000000), (SECRET, 1763719230123), ("SECabc", 1), ("SEC签名", 1763719230000)],
)
def test_sign_is_hmac_sha256_of_timestamp_and_secret_base64_then_url_encoded_once(
    secret: str, timestamp_ms: int
) -> None:
    digest = hmac.new(secret.encode(), f"{timestamp_ms}\n{secret}".encode(), hashlib.sha256).digest()
    assert dingtalk_sign(secret, timestamp_ms) == quote_plus(base64.b64encode(digest))


@pytest.mark.parametrize(("timestamp_ms", "expected"), sorted(KNOWN_SIGNS.items()))
def test_sign_matches_known_vectors(timestamp_ms: int, expected: str) -> None:
    assert dingtalk_sign(SECRET, timestamp_ms) == expected


async def test_sign_with_plus_and_slash_reaches_the_robot_encoded_exactly_once(
    robot: FakeDingTalk, client: httpx.AsyncClient
) -> None:
    robot.wall_clock = lambda: 1700000000.004
    channel = channel_for(robot, client, clock=lambda: 1700000000.004)

    await channel.send(sample())

    (request,) = robot.accepted
    assert request.query["timestamp"] == "1700000000004"
    assert request.query["sign"] == "apKE8FE+/j8cxINqnSDGuOPv1ULVnw/iKHNn1V7eeQc="  # decoded once by the robot


def test_fake_refuses_a_double_encoded_sign(robot: FakeDingTalk) -> None:
    timestamp = int(time.time() * 1000)
    once = dingtalk_sign(SECRET, timestamp)
    body = {"msgtype": "markdown", "markdown": {"title": "t", "text": "x"}}
    answers = []
    for sign in (once, quote_plus(once)):
        url = f"{robot.url}/robot/send?access_token={TOKEN}&timestamp={timestamp}&sign={sign}"
        answers.append(httpx.post(url, json=body, trust_env=False).json()["errcode"])
    assert answers == [0, 310000]


# -- delivery ---------------------------------------------------------------------------------------


async def test_markdown_message_is_delivered_with_msgtype_matching_its_body(
    robot: FakeDingTalk, client: httpx.AsyncClient
) -> None:
    channel: Channel = channel_for(robot, client)

    await channel.send(sample())

    (body,) = robot.messages(TOKEN)
    assert body["msgtype"] == "markdown"
    assert set(body) == {"msgtype", "markdown", "at"}
    assert body["markdown"]["title"] == "[critical] gpu-node-07: GPUHighTemp on 6/8 GPUs"
    assert body["markdown"]["text"].startswith("### gpu-node-07: GPUHighTemp on 6/8 GPUs")
    assert channel.type == "dingtalk"
    assert channel.name == "gpu-oncall"


async def test_mentions_are_in_at_and_written_in_the_text(robot: FakeDingTalk, client: httpx.AsyncClient) -> None:
    channel = channel_for(robot, client)

    await channel.send(sample(mentions=Mentions(mobiles=(MOBILE,), user_ids=("u-oncall",))))

    (body,) = robot.messages(TOKEN)
    assert body["at"] == {"atMobiles": [MOBILE], "atUserIds": ["u-oncall"], "isAtAll": False}
    assert body["markdown"]["text"].splitlines()[-1] == f"@{MOBILE} @u-oncall"
    (ping,) = robot.pings
    assert (ping.mobiles, ping.user_ids) == ((MOBILE,), ("u-oncall",))


async def test_action_card_carries_the_link_as_a_button(robot: FakeDingTalk, client: httpx.AsyncClient) -> None:
    channel = channel_for(robot, client, msgtype="actionCard")

    await channel.send(sample(mentions=Mentions()))

    (body,) = robot.messages(TOKEN)
    assert body["msgtype"] == "actionCard"
    assert "at" not in body
    assert body["actionCard"]["btns"] == [
        {"title": BUTTON_TITLE, "actionURL": "http://alertrouter.example/incidents/12"}
    ]


@pytest.mark.parametrize(
    "changes", [{"mentions": Mentions(mobiles=(MOBILE,))}, {"mentions": Mentions(), "link": None}], ids=str
)
async def test_action_card_falls_back_to_markdown_when_it_must_ping_or_has_no_link(
    robot: FakeDingTalk, client: httpx.AsyncClient, changes: dict[str, Any]
) -> None:
    channel = channel_for(robot, client, msgtype="actionCard")

    await channel.send(sample(**changes))

    (body,) = robot.messages(TOKEN)
    assert body["msgtype"] == "markdown"
    assert len(robot.pings) == 1


async def test_keyword_is_added_when_the_text_lacks_it(robot: FakeDingTalk, client: httpx.AsyncClient) -> None:
    channel = channel_for(robot, client, token=KEYWORD_TOKEN, secret=None, keyword=KEYWORD)

    await channel.send(sample())

    (body,) = robot.messages(KEYWORD_TOKEN)
    assert body["markdown"]["text"].count(KEYWORD) == 1


async def test_keyword_is_not_repeated_when_the_text_has_it(robot: FakeDingTalk, client: httpx.AsyncClient) -> None:
    renderer = StubRenderer(f"### {KEYWORD}: gpu-node-07 hot")
    channel = channel_for(robot, client, renderer, token=KEYWORD_TOKEN, secret=None, keyword=KEYWORD)

    await channel.send(sample())

    (body,) = robot.messages(KEYWORD_TOKEN)
    assert body["markdown"]["text"].count(KEYWORD) == 1


async def test_a_robot_with_a_keyword_refuses_text_without_it(robot: FakeDingTalk, client: httpx.AsyncClient) -> None:
    channel = channel_for(robot, client, token=KEYWORD_TOKEN, secret=None)

    with pytest.raises(ChannelError) as caught:
        await channel.send(sample())

    assert caught.value.permanent
    assert caught.value.code == "310000"


# Newlines, quotes, backslashes and control characters grow under JSON escaping (up to 6x).
HUGE_TEXTS = {
    "cjk": "节点 gpu-node-07 温度过高。\n" * 4000,
    "escapes": '"quoted" \\path\\ \n\t' * 6000,
    "control": "\x01\x02" * 20000,
    "plain": "x" * 100_000,
}


@pytest.mark.parametrize("name", sorted(HUGE_TEXTS))
@pytest.mark.parametrize("msgtype", ["markdown", "actionCard"])
async def test_body_never_exceeds_20000_bytes(
    robot: FakeDingTalk, client: httpx.AsyncClient, name: str, msgtype: str
) -> None:
    renderer = StubRenderer(HUGE_TEXTS[name])
    mentions = Mentions() if msgtype == "actionCard" else Mentions(mobiles=(MOBILE,) * 3, user_ids=("u1", "u2"))
    channel = channel_for(robot, client, renderer, msgtype=msgtype)

    await channel.send(sample(mentions=mentions))

    (request,) = robot.accepted
    assert MAX_BODY_BYTES - 2000 < len(request.body) <= MAX_BODY_BYTES  # full, not over-cut
    assert json.loads(request.body)["msgtype"] == msgtype
    assert renderer.limits[0] is not None
    assert renderer.limits[0] < MAX_BODY_BYTES


async def test_a_message_that_cannot_fit_is_refused_before_sending(
    robot: FakeDingTalk, client: httpx.AsyncClient
) -> None:
    mobiles = tuple(f"1380000{i:04d}" for i in range(2000))  # the `at` list alone is over 20,000 bytes
    channel = channel_for(robot, client)

    with pytest.raises(ChannelError) as caught:
        await channel.send(sample(mentions=Mentions(mobiles=mobiles)))

    assert caught.value.permanent
    assert robot.received == []


# -- failures ---------------------------------------------------------------------------------------


async def test_wrong_secret_is_a_permanent_sign_mismatch(robot: FakeDingTalk, client: httpx.AsyncClient) -> None:
    channel = channel_for(robot, client, secret="SECnot-the-robots-secret")

    with pytest.raises(ChannelError) as caught:
        await channel.send(sample())

    error = caught.value
    assert error.permanent
    assert not error.rate_limited
    assert error.code == "310000"
    assert error.message.startswith("DingTalk robot gpu-oncall: errcode 310000 sign not match")


async def test_timestamp_older_than_an_hour_is_refused(robot: FakeDingTalk, client: httpx.AsyncClient) -> None:
    channel = channel_for(robot, client, clock=lambda: time.time() - 3700)

    with pytest.raises(ChannelError) as caught:
        await channel.send(sample())

    assert caught.value.permanent
    assert caught.value.code == "310000"


async def test_unknown_token_is_permanent(robot: FakeDingTalk, client: httpx.AsyncClient) -> None:
    channel = channel_for(robot, client, token="dt-token-deleted-robot")

    with pytest.raises(ChannelError) as caught:
        await channel.send(sample())

    assert caught.value.permanent
    assert caught.value.code == "300001"


async def test_the_21st_message_in_a_minute_is_rate_limited(robot: FakeDingTalk, client: httpx.AsyncClient) -> None:
    channel = channel_for(robot, client, token=PLAIN, secret=None)
    for _ in range(20):
        await channel.send(sample())

    for _ in range(2):  # the limit, then the block
        with pytest.raises(ChannelError) as caught:
            await channel.send(sample())
        assert caught.value.rate_limited
        assert not caught.value.permanent
        assert caught.value.code == "130101"
        assert caught.value.retry_after == 600.0

    assert len(robot.messages(PLAIN)) == 20


@pytest.mark.parametrize("fault", HTTP_FAULTS, ids=str)
async def test_faults_are_transient(client: httpx.AsyncClient, fault: Fault) -> None:
    await assert_transient(contract(client), fault)


ANSWERS = [
    (200, {"errcode": 0, "errmsg": "ok"}, None),
    (200, {"errcode": "0", "errmsg": "ok"}, None),
    (200, {"errcode": 130101, "errmsg": "send too fast, exceed 20 times per minute"}, "rate_limited"),
    (200, {"errcode": 410100, "errmsg": "send too fast"}, "rate_limited"),
    (200, {"errcode": 310000, "errmsg": "keywords not in content"}, "permanent"),
    (200, {"errcode": 300001, "errmsg": "token is not exist"}, "permanent"),
    (200, {"errcode": 300005, "errmsg": "token is not exist"}, "permanent"),
    (200, {"errcode": 40035, "errmsg": "缺少参数 json"}, "permanent"),
    (200, {"errcode": 460101, "errmsg": "message too long"}, "permanent"),
    (200, {"errcode": 101002, "errmsg": "message too long"}, "permanent"),
    (200, {"errcode": 999999, "errmsg": "system busy"}, "transient"),
    (200, {"errmsg": "ok"}, "transient"),
    (200, b"<html>captive portal</html>", "transient"),
    (502, b"<html>bad gateway</html>", "transient"),
    (429, b"", "rate_limited"),
    (404, b"not found", "permanent"),
    (302, b"", "permanent"),
]


@pytest.mark.parametrize(("status", "answer", "expected"), ANSWERS)
async def test_answers_map_to_outcomes(status: int, answer: dict[str, Any] | bytes, expected: str | None) -> None:
    def reply(request: httpx.Request) -> httpx.Response:
        return (
            httpx.Response(status, content=answer) if isinstance(answer, bytes) else httpx.Response(status, json=answer)
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(reply)) as client:
        channel = DingTalkChannel(make_config("https://oapi.example"), client=client, renderer=StubRenderer())
        if expected is None:
            await channel.send(sample())
            return
        with pytest.raises(ChannelError) as caught:
            await channel.send(sample())
    outcome = "rate_limited" if caught.value.rate_limited else "permanent" if caught.value.permanent else "transient"
    assert outcome == expected


# -- secrets ----------------------------------------------------------------------------------------


async def test_no_secret_reaches_an_error_or_a_log_record(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    seen = await assert_no_secret_leaks(contract(client), caplog)

    assert any("robot/send?access_token=***" in line for line in seen.logs)  # httpx did log the URL, redacted


# -- the fake itself --------------------------------------------------------------------------------


MARKDOWN = {"msgtype": "markdown", "markdown": {"title": "t", "text": "x"}}


def errcode(robot: FakeDingTalk, body: dict[str, Any] | bytes, token: str = PLAIN) -> int:
    url = f"{robot.url}/robot/send"
    params = {"access_token": token}
    if isinstance(body, bytes):
        answer = httpx.post(url, params=params, content=body, trust_env=False)
    else:
        answer = httpx.post(url, params=params, json=body, trust_env=False)
    code: int = answer.json()["errcode"]
    return code


def test_fake_blocks_the_robot_for_block_seconds_after_the_21st_message() -> None:
    clock = ManualClock(1000.0)
    fake = FakeDingTalk({PLAIN: None, TOKEN: None}, clock=clock, block=600)
    with fake:
        assert [errcode(fake, MARKDOWN) for _ in range(20)] == [0] * 20
        assert errcode(fake, MARKDOWN) == 130101
        clock.now += 120  # the minute is long over, the block is not
        assert errcode(fake, MARKDOWN) == 130101
        assert errcode(fake, MARKDOWN, token=TOKEN) == 0  # per robot
        clock.now += 479.9
        assert errcode(fake, MARKDOWN) == 130101
        clock.now += 0.2
        assert errcode(fake, MARKDOWN) == 0
    assert fake.rate.violations == [(PLAIN, 1000.0)]
    assert len(fake.messages(PLAIN)) == 21


def card(**fields: Any) -> dict[str, Any]:
    return {"msgtype": "actionCard", "actionCard": {"title": "t", "text": "x", **fields}}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"msgtype": "text", "markdown": {"title": "t", "text": "x"}}, BAD_REQUEST),  # the known mismatch bug
        ({"msgtype": "markdown", "markdown": {"title": "t"}}, BAD_REQUEST),
        ({"msgtype": "actionCard", "actionCard": {"title": "t", "text": "x"}}, BAD_REQUEST),  # no button
        (card(btns=[{"title": "b"}]), BAD_REQUEST),
        (card(btns=[{"actionURL": "http://x"}]), BAD_REQUEST),
        (card(btns=[{"title": "b", "actionURL": "javascript:x"}]), BAD_REQUEST),
        (card(btns=[{"title": "b", "actionURL": "http://x"}], btnOrientation="2"), BAD_REQUEST),
        (card(btns=[{"title": "b", "actionURL": "http://x"}], btnOrientation="1"), 0),
        (b"not json", BAD_REQUEST),
        ({"msgtype": "markdown", "markdown": {"title": "t", "text": "x" * 20_000}}, 460101),
        (MARKDOWN, 0),
    ],
)
def test_fake_checks_the_body(robot: FakeDingTalk, body: dict[str, Any] | bytes, expected: int) -> None:
    assert errcode(robot, body) == expected
    assert len(robot.accepted) == (1 if expected == 0 else 0)


def test_fake_pings_only_people_named_in_at_and_in_the_text(robot: FakeDingTalk) -> None:
    at = {"atMobiles": [MOBILE, "13900000000"], "atUserIds": ["u1"], "isAtAll": False}
    errcode(robot, {"msgtype": "markdown", "markdown": {"title": "t", "text": f"hot\n\n@{MOBILE}"}, "at": at})
    card = {"title": "t", "text": f"@{MOBILE}", "btns": [{"title": "b", "actionURL": "http://x"}]}
    errcode(robot, {"msgtype": "actionCard", "actionCard": card, "at": at})

    assert [(p.mobiles, p.user_ids) for p in robot.pings] == [((MOBILE,), ())]

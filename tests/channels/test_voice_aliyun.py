"""Aliyun SingleCallByTts: the request as the vendor documents it, signature v1 over a voice request
against a vector computed with the published algorithm (checked first on Aliyun's own example), and the
channel against a fake that verifies the signature and answers like the vendor, over loopback HTTP."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from alertrouter.channels.base import ChannelError, Notification
from alertrouter.channels.sms_aliyun import aliyun_signature, aliyun_string_to_sign
from alertrouter.channels.voice import VoiceChannel
from alertrouter.channels.voice_aliyun import (
    AliyunVoice,
    aliyun_called_number,
    aliyun_voice_error,
    aliyun_voice_params,
)
from alertrouter.ruleset.channels import VoiceChannelConfig
from support.channels import notification
from support.contract import (
    HTTP_FAULTS,
    ChannelContract,
    Fault,
    assert_no_secret,
    assert_no_secret_leaks,
    assert_transient,
)
from support.fakes.aliyun_voice import FakeAliyunVoice

KEY_ID = "LTAI5tVoiceKeyId0001"
SECRET = "aliyunVoiceSecret/+*~01"
WRONG_SECRET = "wrong-" + SECRET
OTHER_KEY_ID = "LTAI5tSomebodyElse01"
SECRETS = (KEY_ID, SECRET, WRONG_SECRET, OTHER_KEY_ID)
TTS = "TTS_100000001"
SAMPLE = notification(recipients=("+8613800000000",), delivery_id=4217)


@pytest.fixture
def fake() -> Iterator[FakeAliyunVoice]:
    vendor = FakeAliyunVoice({KEY_ID: SECRET}, templates={TTS: ("headline",)}, show_numbers=("057100005678",))
    vendor.hang = 5.0
    vendor.start()
    try:
        yield vendor
    finally:
        vendor.stop()


def config(url: str, *, timeout: str = "1s", **aliyun: Any) -> VoiceChannelConfig:
    settings = {"access_key_id": KEY_ID, "access_key_secret": SECRET, "tts_code": TTS, "endpoint": url + "/", **aliyun}
    return VoiceChannelConfig.model_validate(
        {"name": "voice-aliyun", "type": "voice", "provider": "aliyun", "aliyun": settings, "timeout": timeout}
    )


async def send(cfg: VoiceChannelConfig, n: Notification = SAMPLE, **kwargs: Any) -> None:
    async with httpx.AsyncClient() as client:
        await VoiceChannel(cfg, client=client, **kwargs).send(n)


async def failure(cfg: VoiceChannelConfig, n: Notification = SAMPLE, **kwargs: Any) -> ChannelError:
    with pytest.raises(ChannelError) as caught:
        await send(cfg, n, **kwargs)
    assert_no_secret(SECRETS, errors=[caught.value])
    return caught.value


def contract(client: httpx.AsyncClient) -> ChannelContract[FakeAliyunVoice]:
    def channel(fake: FakeAliyunVoice, timeout: str = "1s", **aliyun: str) -> VoiceChannel:
        return VoiceChannel(config(fake.url, timeout=timeout, **aliyun), client=client)

    def echoing(fake: FakeAliyunVoice) -> VoiceChannel:
        fake.error_next("isv.INVALID_PARAMETERS", 200, f"bad request from {KEY_ID}")
        return channel(fake)

    return ChannelContract(
        vendor=lambda: FakeAliyunVoice({KEY_ID: SECRET}, templates={TTS: ("headline",)}),
        channel=channel,
        delivered=lambda fake: len(fake.calls),
        notification=SAMPLE,
        secrets=SECRETS,
        mistakes={
            "wrong secret": lambda fake: channel(fake, access_key_secret=WRONG_SECRET),
            "unknown key": lambda fake: channel(fake, access_key_id=OTHER_KEY_ID),
            "vendor echoes the key": echoing,
        },
        wire_secrets=lambda fake: {r.form().get("Signature", "") for r in fake.received} - {""},
    )


# -- the request and its signature ---------------------------------------------------------------

# A voice request with fixed inputs: the parameters SingleCallByTts documents, and the common ones.
VOICE_PARAMS = {
    "Action": "SingleCallByTts",
    "Version": "2017-05-25",
    "RegionId": "cn-hangzhou",
    "CalledNumber": "13800000000",
    "CalledShowNumber": "057100005678",
    "TtsCode": "TTS_100000001",
    "TtsParam": '{"headline":"gpu node 07 XID 79 GPU 3","severity":"critical"}',
    "PlayTimes": "2",
    "OutId": "4217",
    "AccessKeyId": "LTAI5tExampleKeyId",
    "Timestamp": "2026-11-21T10:00:00Z",
    "SignatureMethod": "HMAC-SHA1",
    "SignatureVersion": "1.0",
    "SignatureNonce": "6a3f0c1e-2b4d-4e8f-9a01-5c7d9e2f4b60",
    "Format": "JSON",
}


def test_request_params() -> None:
    cfg = config("http://127.0.0.1:9", access_key_id="LTAI5tExampleKeyId", called_show_number="057100005678")
    assert cfg.aliyun is not None
    params = aliyun_voice_params(
        cfg.aliyun,
        "+8613800000000",
        {"headline": "gpu node 07 XID 79 GPU 3", "severity": "critical"},
        play_times=2,
        timestamp=1795255200,
        nonce="6a3f0c1e-2b4d-4e8f-9a01-5c7d9e2f4b60",
        out_id="4217",
    )
    assert params == VOICE_PARAMS


def test_optional_params_only_when_set() -> None:
    cfg = config("http://127.0.0.1:9", volume=80, speed=-100)
    assert cfg.aliyun is not None
    params = aliyun_voice_params(cfg.aliyun, "13800000000", {"h": "x"}, play_times=3, timestamp=0, nonce="n")
    assert "CalledShowNumber" not in params  # the shared ("public") mode: the vendor picks the shown number
    assert "OutId" not in params
    assert (params["Volume"], params["Speed"], params["PlayTimes"]) == ("80", "-100", "3")
    long_id = aliyun_voice_params(cfg.aliyun, "1", {}, play_times=1, timestamp=0, nonce="n", out_id="9" * 20)
    assert long_id["OutId"] == "9" * 15  # OutId is 1-15 bytes


@pytest.mark.parametrize(
    ("number", "called"),
    [
        ("+8613800000000", "13800000000"),
        ("8613800000000", "13800000000"),
        ("008613800000000", "13800000000"),
        ("13800000000", "13800000000"),
        ("057100005678", "057100005678"),
        ("+85200000000", "85200000000"),
    ],
)
def test_called_number(number: str, called: str) -> None:
    assert aliyun_called_number(number) == called


def test_signature_of_a_voice_request() -> None:
    """Signature v1 over the voice request, computed with the published recipe (quote_plus, then + -> %20,
    * -> %2A, %7E -> ~; HMAC-SHA1 keyed with secret + "&"), first checked on Aliyun's own example."""

    def pct(s: str) -> str:
        return quote(s, safe="~")  # equal to the recipe: keeps exactly A-Z a-z 0-9 - _ . ~

    def published(params: dict[str, str], secret: str, method: str) -> str:
        query = "&".join(f"{pct(k)}={pct(v)}" for k, v in sorted(params.items()))
        to_sign = f"{method}&%2F&{pct(query)}"
        return base64.b64encode(hmac.new((secret + "&").encode(), to_sign.encode(), hashlib.sha1).digest()).decode()

    example = {
        "TimeStamp": "2016-02-23T12:46:24Z",
        "Format": "XML",
        "AccessKeyId": "testid",
        "Action": "DescribeRegions",
        "SignatureMethod": "HMAC-SHA1",
        "SignatureNonce": "3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf",
        "Version": "2014-05-26",
        "SignatureVersion": "1.0",
    }
    assert published(example, "testsecret", "GET") == "CT9X0VtwR86fNWSnsc6v8YGOjuE="  # the documented value
    assert aliyun_signature(VOICE_PARAMS, "ExampleSecret/+*~") == published(VOICE_PARAMS, "ExampleSecret/+*~", "POST")


def test_signature_literal_vector() -> None:
    """Computed once with a separate one-off script (the published recipe, checked on the documented
    example before use) from the same fixed inputs."""
    assert aliyun_string_to_sign(VOICE_PARAMS) == (
        "POST&%2F&AccessKeyId%3DLTAI5tExampleKeyId%26Action%3DSingleCallByTts%26CalledNumber%3D13800000000"
        "%26CalledShowNumber%3D057100005678%26Format%3DJSON%26OutId%3D4217%26PlayTimes%3D2%26RegionId%3Dcn-hangzhou"
        "%26SignatureMethod%3DHMAC-SHA1%26SignatureNonce%3D6a3f0c1e-2b4d-4e8f-9a01-5c7d9e2f4b60"
        "%26SignatureVersion%3D1.0%26Timestamp%3D2026-11-21T10%253A00%253A00Z%26TtsCode%3DTTS_100000001"
        "%26TtsParam%3D%257B%2522headline%2522%253A%2522gpu%2520node%252007%2520XID%252079%2520GPU%25203%2522"
        "%252C%2522severity%2522%253A%2522critical%2522%257D%26Version%3D2017-05-25"
    )
    assert aliyun_signature(VOICE_PARAMS, "ExampleSecret/+*~") == "zrLMts4nmqpSjoZGCh+FbEzwxAU="


async def test_posts_the_signed_form() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"Code": "OK", "Message": "OK", "RequestId": "r", "CallId": "1^2"})

    cfg = config("https://dyvmsapi.aliyuncs.com")
    assert cfg.aliyun is not None
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        provider = AliyunVoice(cfg.aliyun, client=client, clock=lambda: 1795255200.0, nonce=lambda: "n-1")
        assert await provider.call("+8613800000000", {"headline": "x"}, reference="12") == "1^2"
    (request,) = seen
    assert (request.method, str(request.url)) == ("POST", "https://dyvmsapi.aliyuncs.com/")
    form = dict(httpx.QueryParams(request.content.decode()))
    assert form["Signature"] == aliyun_signature(form, SECRET)
    assert (form["Action"], form["CalledNumber"], form["OutId"]) == ("SingleCallByTts", "13800000000", "12")


@pytest.mark.parametrize(
    ("code", "status", "permanent", "rate_limited"),
    [
        ("isv.BUSINESS_LIMIT_CONTROL", 200, False, True),
        ("isv.TTS_TEMPLATE_ILLEGAL", 200, True, False),
        ("isv.TEMPLATE_PARAMS_ILLEGAL", 200, True, False),
        ("isv.PARAM_NOT_SUPPORT_URL", 200, True, False),
        ("isv.MOBILE_NUMBER_ILLEGAL", 200, True, False),
        ("isv.DISPLAY_NUMBER_ILLEGAL", 200, True, False),
        ("isv.OUT_OF_SERVICE", 200, True, False),
        ("isv.AMOUNT_NOT_ENOUGH", 200, True, False),
        ("isv.COMPLAINT_REJECT", 200, True, False),
        ("isp.RAM_PERMISSION_DENY", 200, True, False),
        ("SignatureDoesNotMatch", 400, True, False),
        ("InvalidAccessKeyId.NotFound", 404, True, False),
        ("isv.VOICE_CALL_FAIL", 200, False, False),
        ("isv.VOICE_ROBOT_NOT_PERIOD", 200, False, False),
        ("isp.SYSTEM_ERROR", 500, False, False),
        ("isp.GATEWAY_ERROR", 500, False, False),
    ],
)
def test_error_classes(code: str, status: int, permanent: bool, rate_limited: bool) -> None:
    error = aliyun_voice_error(code, "message", status=status)
    assert (error.permanent, error.rate_limited, error.code) == (permanent, rate_limited, code)
    assert "SingleCallByTts" in error.message


# -- against the fake ----------------------------------------------------------------------------


async def test_one_signed_call_per_number(fake: FakeAliyunVoice) -> None:
    fake.windows = []  # two calls to each number within a second: beyond the vendor's default flow control
    two = dataclasses.replace(SAMPLE, recipients=("+8613800000000", "138 0000 0001", "+8613800000000"))
    await send(config(fake.url, called_show_number="057100005678"), two)
    # "gpu-node-07: GPUHighTemp on 6/8 GPUs" said with spaces for its symbols, cut to 30 characters
    spoken = {"headline": "gpu node 07 GPUHighTemp on 6.."}
    assert [(n, p, t, o) for n, p, t, o in fake.calls] == [
        ("13800000000", spoken, 2, "4217"),
        ("13800000001", spoken, 2, "4217"),
    ]
    nonces = {r.form()["SignatureNonce"] for r in fake.accepted}
    assert len(nonces) == 2


async def test_bad_secret_is_permanent(fake: FakeAliyunVoice) -> None:
    error = await failure(config(fake.url, access_key_secret=WRONG_SECRET))
    assert (error.permanent, error.code) == (True, "SignatureDoesNotMatch")
    assert not fake.calls


async def test_clock_skew_is_permanent(fake: FakeAliyunVoice) -> None:
    error = await failure(config(fake.url), clock=lambda: time.time() - 20 * 60)
    assert (error.permanent, error.code) == (True, "InvalidTimeStamp.Expired")


async def test_unknown_template_is_permanent(fake: FakeAliyunVoice) -> None:
    error = await failure(config(fake.url, tts_code="TTS_000"))
    assert (error.permanent, error.code) == (True, "isv.TTS_TEMPLATE_ILLEGAL")


async def test_the_vendor_flow_control_is_a_rate_limit(fake: FakeAliyunVoice) -> None:
    await send(config(fake.url))
    error = await failure(config(fake.url))  # a second call within the minute: 1 call/minute/number
    assert (error.permanent, error.rate_limited, error.code) == (False, True, "isv.BUSINESS_LIMIT_CONTROL")
    assert len(fake.calls) == 1


async def test_a_partial_failure_names_who_was_reached(fake: FakeAliyunVoice) -> None:
    both = dataclasses.replace(SAMPLE, recipients=("13800000000", "12345"))
    error = await failure(config(fake.url), both)
    assert error.reached == ("13800000000",)
    assert (error.permanent, error.code) == (True, "isv.MOBILE_NUMBER_ILLEGAL")
    assert "1 of 2 called" in error.message
    assert [n for n, *_ in fake.calls] == ["13800000000"]


@pytest.mark.parametrize("fault", HTTP_FAULTS, ids=str)
async def test_faults_are_transient(fault: Fault) -> None:
    async with httpx.AsyncClient() as client:
        await assert_transient(contract(client), fault)


async def test_faults_leak_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    async with httpx.AsyncClient() as client:
        seen = await assert_no_secret_leaks(contract(client), caplog)
    assert "***" in seen.errors["vendor echoes the key"].message

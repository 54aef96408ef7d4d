"""Aliyun SendSms: signature v1 against documented and hand-computed vectors, and the channel against
a fake that verifies signatures, nonces, timestamps, templates and per-number rates over loopback."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from alertrouter.channels.base import ChannelError, Notification
from alertrouter.channels.sms import SmsChannel
from alertrouter.channels.sms_aliyun import (
    AliyunSms,
    aliyun_error,
    aliyun_params,
    aliyun_signature,
    aliyun_string_to_sign,
    percent_encode,
)
from alertrouter.ruleset.channels import SmsChannelConfig
from support.channels import notification
from support.contract import (
    HTTP_FAULTS,
    ChannelContract,
    Fault,
    assert_no_secret,
    assert_no_secret_leaks,
    assert_transient,
)
from support.fakes.aliyun import FakeAliyunSms

KEY_ID = "LTAI5tTestKeyId0001"
SECRET = "aliyun-Secret/+*~0001"  # characters that percent-encoding must handle
SAMPLE = notification(recipients=("+8613800000000",))
WRONG_SECRET = "wrong-" + SECRET
OTHER_KEY_ID = "LTAI5tSomebodyElse"
SECRETS = (KEY_ID, SECRET, WRONG_SECRET, OTHER_KEY_ID)


class NoRenderer:
    def render(self, channel: str, fmt: str, notification: Notification, *, limit_bytes: int | None = None) -> str:
        raise AssertionError("template providers do not render free text")

    def title(self, notification: Notification, *, limit_bytes: int | None = None) -> str:
        raise AssertionError("no title for SMS")


@pytest.fixture
def fake() -> Iterator[FakeAliyunSms]:
    vendor = FakeAliyunSms({KEY_ID: SECRET}, templates={"SMS_480000001": ("headline",)})
    vendor.hang = 5.0
    vendor.start()
    try:
        yield vendor
    finally:
        vendor.stop()


def config(url: str, *, timeout: str = "1s", **aliyun: str) -> SmsChannelConfig:
    settings = {
        "access_key_id": KEY_ID,
        "access_key_secret": SECRET,
        "sign_name": "GPU告警",
        "template_code": "SMS_480000001",
        "endpoint": url + "/",
        **aliyun,
    }
    return SmsChannelConfig.model_validate(
        {"name": "sms-aliyun", "type": "sms", "provider": "aliyun", "aliyun": settings, "timeout": timeout}
    )


async def send(cfg: SmsChannelConfig, notification: Notification = SAMPLE, **kwargs: Any) -> None:
    async with httpx.AsyncClient() as client:
        await SmsChannel(cfg, client=client, renderer=NoRenderer(), **kwargs).send(notification)


async def failure(cfg: SmsChannelConfig, notification: Notification = SAMPLE, **kwargs: Any) -> ChannelError:
    with pytest.raises(ChannelError) as caught:
        await send(cfg, notification, **kwargs)
    assert_no_secret(SECRETS, errors=[caught.value])
    return caught.value


def contract(client: httpx.AsyncClient) -> ChannelContract[FakeAliyunSms]:
    """The shared checks' view of this channel: an account, and four ways for a send to be refused."""

    def channel(fake: FakeAliyunSms, timeout: str = "1s", **aliyun: str) -> SmsChannel:
        return SmsChannel(config(fake.url, timeout=timeout, **aliyun), client=client, renderer=NoRenderer())

    def echoing(fake: FakeAliyunSms) -> SmsChannel:  # a vendor's message quoting the key
        fake.error_next("isv.UNHEARD_OF", message=f"access key {KEY_ID} is not allowed")
        return channel(fake)

    def rate_limited(fake: FakeAliyunSms) -> SmsChannel:
        fake.rate.limit = 0
        return channel(fake)

    return ChannelContract(
        vendor=lambda: FakeAliyunSms({KEY_ID: SECRET}, templates={"SMS_480000001": ("headline",)}),
        channel=channel,
        delivered=lambda fake: len(fake.accepted),
        notification=SAMPLE,
        secrets=SECRETS,
        mistakes={
            "wrong secret": lambda fake: channel(fake, access_key_secret=WRONG_SECRET),
            "unknown key": lambda fake: channel(fake, access_key_id=OTHER_KEY_ID),
            "vendor echoes the key": echoing,
            "rate limited": rate_limited,
        },
        wire_secrets=lambda fake: {r.form().get("Signature", "") for r in fake.received} - {""},
    )


# -- signing -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "encoded"),
    [
        ("AZaz09-_.~", "AZaz09-_.~"),
        ("a b", "a%20b"),
        ("*", "%2A"),
        ("+", "%2B"),
        ("/", "%2F"),
        ("=&", "%3D%26"),
        (":", "%3A"),
        ("告", "%E5%91%8A"),
        ('{"a":"b c"}', "%7B%22a%22%3A%22b%20c%22%7D"),
    ],
)
def test_percent_encode(raw: str, encoded: str) -> None:
    assert percent_encode(raw) == encoded


def test_documented_example() -> None:
    """help.aliyun.com signature mechanism: DescribeRegions with testid/testsecret (a GET)."""
    params = {
        "TimeStamp": "2016-02-23T12:46:24Z",
        "Format": "XML",
        "AccessKeyId": "testid",
        "Action": "DescribeRegions",
        "SignatureMethod": "HMAC-SHA1",
        "SignatureNonce": "3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf",
        "Version": "2014-05-26",
        "SignatureVersion": "1.0",
    }
    assert aliyun_string_to_sign(params, method="GET") == (
        "GET&%2F&AccessKeyId%3Dtestid%26Action%3DDescribeRegions%26Format%3DXML%26SignatureMethod%3DHMAC-SHA1"
        "%26SignatureNonce%3D3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf%26SignatureVersion%3D1.0"
        "%26TimeStamp%3D2016-02-23T12%253A46%253A24Z%26Version%3D2014-05-26"
    )
    assert aliyun_signature(params, "testsecret", method="GET") == "CT9X0VtwR86fNWSnsc6v8YGOjuE="


VECTOR_PARAMS = {
    "Action": "SendSms",
    "Version": "2017-05-25",
    "RegionId": "cn-hangzhou",
    "PhoneNumbers": "8613800000000,8613900000001",
    "SignName": "GPU告警",
    "TemplateCode": "SMS_480000001",
    "TemplateParam": '{"headline":"gpu-node-07: GPUHighTemp","severity":"critical"}',
    "AccessKeyId": "LTAI5tExampleKeyId",
    "Timestamp": "2026-11-21T10:00:00Z",
    "SignatureMethod": "HMAC-SHA1",
    "SignatureVersion": "1.0",
    "SignatureNonce": "6a3f0c1e-2b4d-4e8f-9a01-5c7d9e2f4b60",
    "Format": "JSON",
}


def test_signature_by_hand() -> None:
    """The documented steps spelled out with the standard library, Signature itself left out."""

    def pct(s: str) -> str:
        return quote(s, safe="~")  # Python's quote keeps exactly A-Z a-z 0-9 - _ . ~

    query = "&".join(f"{pct(k)}={pct(v)}" for k, v in sorted(VECTOR_PARAMS.items()))
    to_sign = "POST&%2F&" + pct(query)
    expected = base64.b64encode(hmac.new(b"ExampleSecret/+*~&", to_sign.encode(), hashlib.sha1).digest()).decode()
    signed = {**VECTOR_PARAMS, "Signature": "ignored"}
    assert aliyun_string_to_sign(signed) == to_sign
    assert aliyun_signature(signed, "ExampleSecret/+*~") == expected


def test_signature_literal_vector() -> None:
    """Computed once with a separate one-off script from the same fixed inputs."""
    assert aliyun_string_to_sign(VECTOR_PARAMS) == (
        "POST&%2F&AccessKeyId%3DLTAI5tExampleKeyId%26Action%3DSendSms%26Format%3DJSON"
        "%26PhoneNumbers%3D8613800000000%252C8613900000001%26RegionId%3Dcn-hangzhou"
        "%26SignName%3DGPU%25E5%2591%258A%25E8%25AD%25A6%26SignatureMethod%3DHMAC-SHA1"
        "%26SignatureNonce%3D6a3f0c1e-2b4d-4e8f-9a01-5c7d9e2f4b60%26SignatureVersion%3D1.0"
        "%26TemplateCode%3DSMS_480000001%26TemplateParam%3D%257B%2522headline%2522%253A%2522gpu-node-07%253A"
        "%2520GPUHighTemp%2522%252C%2522severity%2522%253A%2522critical%2522%257D"
        "%26Timestamp%3D2026-11-21T10%253A00%253A00Z%26Version%3D2017-05-25"
    )
    assert aliyun_signature(VECTOR_PARAMS, "ExampleSecret/+*~") == "DsbdGLAlVEIy+AuSjD4Taky2gEc="


def test_request_params() -> None:
    cfg = config("http://127.0.0.1:9", access_key_id="LTAI5tExampleKeyId")
    assert cfg.aliyun is not None
    params = aliyun_params(
        cfg.aliyun,
        ["+8613800000000", "8613900000001"],
        {"headline": "gpu-node-07: GPUHighTemp", "severity": "critical"},
        timestamp=1795255200,
        nonce="6a3f0c1e-2b4d-4e8f-9a01-5c7d9e2f4b60",
    )
    assert params == VECTOR_PARAMS


def test_chinese_template_param_is_not_escaped() -> None:
    cfg = config("http://127.0.0.1:9")
    assert cfg.aliyun is not None
    params = aliyun_params(cfg.aliyun, ["+8613800000000"], {"headline": "温度过高"}, timestamp=0, nonce="n")
    assert params["TemplateParam"] == '{"headline":"温度过高"}'


@pytest.mark.parametrize(
    ("code", "status", "permanent", "rate_limited"),
    [
        ("isv.BUSINESS_LIMIT_CONTROL", 200, False, True),
        ("isv.DAY_LIMIT_CONTROL", 200, False, True),
        ("InvalidAccessKeyId.NotFound", 404, True, False),
        ("SignatureDoesNotMatch", 400, True, False),
        ("isv.SMS_TEMPLATE_ILLEGAL", 200, True, False),
        ("isv.SMS_SIGNATURE_ILLEGAL", 200, True, False),
        ("isv.MOBILE_NUMBER_ILLEGAL", 200, True, False),
        ("isv.TEMPLATE_MISSING_PARAMETERS", 200, True, False),
        ("isv.PARAM_LENGTH_LIMIT", 200, True, False),
        ("isv.OUT_OF_SERVICE", 200, True, False),
        ("isp.RAM_PERMISSION_DENY", 200, True, False),
        ("InvalidTimeStamp.Expired", 400, True, False),
        ("isp.SYSTEM_ERROR", 200, False, False),
        ("Throttling.User", 400, False, False),
        ("SignatureNonceUsed", 400, False, False),
        ("ServiceUnavailable", 503, False, False),
        ("", 502, False, False),
        ("", 404, True, False),
        ("", 429, False, True),
    ],
)
def test_error_classes(code: str, status: int, permanent: bool, rate_limited: bool) -> None:
    error = aliyun_error(code, "message", status=status)
    assert (error.permanent, error.rate_limited) == (permanent, rate_limited)


# -- against the fake ----------------------------------------------------------------------------


async def test_send(fake: FakeAliyunSms) -> None:
    await send(config(fake.url))
    await send(config(fake.url))
    assert len(fake.accepted) == 2
    assert fake.sent == [("8613800000000", {"headline": "gpu-node-07: GPUHi.."})] * 2
    forms = [r.form() for r in fake.accepted]
    assert forms[0]["SignatureNonce"] != forms[1]["SignatureNonce"]
    assert forms[0]["SignName"] == "GPU告警"
    assert fake.received[0].headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert not fake.received[0].query  # everything in the body


async def test_bad_secret_is_permanent(fake: FakeAliyunSms) -> None:
    error = await failure(config(fake.url, access_key_secret=WRONG_SECRET))
    assert error.permanent
    assert error.code == "SignatureDoesNotMatch"
    assert not fake.accepted


async def test_unknown_key_is_permanent(fake: FakeAliyunSms) -> None:
    error = await failure(config(fake.url, access_key_id=OTHER_KEY_ID))
    assert error.permanent
    assert error.code == "InvalidAccessKeyId.NotFound"


async def test_clock_skew_is_permanent(fake: FakeAliyunSms) -> None:
    error = await failure(config(fake.url), clock=lambda: time.time() - 20 * 60)
    assert error.permanent
    assert error.code == "InvalidTimeStamp.Expired"


async def test_unknown_template_is_permanent(fake: FakeAliyunSms) -> None:
    error = await failure(config(fake.url, template_code="SMS_000"))
    assert error.permanent
    assert error.code == "isv.SMS_TEMPLATE_ILLEGAL"


async def test_variable_longer_than_vendor_allows_is_permanent(fake: FakeAliyunSms) -> None:
    fake.param_limit = 10  # the channel's param_max_length (20) is set too high for this template
    error = await failure(config(fake.url))
    assert error.permanent
    assert error.code == "isv.PARAM_LENGTH_LIMIT"


async def test_replayed_nonce_is_refused() -> None:
    vendor = FakeAliyunSms({KEY_ID: SECRET}).start()
    try:
        assert isinstance(vendor, FakeAliyunSms)
        cfg = config(vendor.url)
        assert cfg.aliyun is not None
        async with httpx.AsyncClient() as client:
            provider = AliyunSms(cfg.aliyun, client=client, nonce=lambda: "same-nonce")
            await provider.send(["+8613800000000"], {"headline": "x"})
            with pytest.raises(ChannelError) as caught:
                await provider.send(["+8613800000000"], {"headline": "x"})
    finally:
        vendor.stop()
    assert caught.value.code == "SignatureNonceUsed"
    assert not caught.value.permanent


async def test_per_number_rate_is_rate_limited(fake: FakeAliyunSms) -> None:
    fake.rate.limit = 1
    await send(config(fake.url))
    error = await failure(config(fake.url))
    assert error.rate_limited
    assert not error.permanent
    assert error.code == "isv.BUSINESS_LIMIT_CONTROL"


@pytest.mark.parametrize("fault", HTTP_FAULTS, ids=str)
async def test_faults_are_transient(fault: Fault) -> None:
    async with httpx.AsyncClient() as client:
        await assert_transient(contract(client), fault)


@pytest.mark.parametrize(("code", "status"), [("isp.SYSTEM_ERROR", 200), ("Throttling.User", 400)])
async def test_vendor_side_errors_are_transient(fake: FakeAliyunSms, code: str, status: int) -> None:
    fake.error_next(code, status)
    error = await failure(config(fake.url))
    assert (error.permanent, error.rate_limited, error.code) == (False, False, code)


async def test_long_number_list_is_split(fake: FakeAliyunSms) -> None:
    numbers = tuple(f"+86138{i:08d}" for i in range(1501))
    await send(config(fake.url), dataclasses.replace(SAMPLE, recipients=numbers))
    sizes = [len(r.form()["PhoneNumbers"].split(",")) for r in fake.accepted]
    assert sizes == [1000, 501]
    assert [n for n, _ in fake.sent] == [n.removeprefix("+") for n in numbers]


async def test_faults_leak_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    async with httpx.AsyncClient() as client:
        seen = await assert_no_secret_leaks(contract(client), caplog)

    assert "***" in seen.errors["vendor echoes the key"].message
    assert json.dumps([e.message for e in seen.errors.values()])  # plain text, nothing odd attached

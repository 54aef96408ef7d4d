"""Tencent Cloud SendTtsVoice: the body of the vendor's own example, TC3-HMAC-SHA256 with the service
`vms` against a vector computed with the published algorithm (checked first on Tencent's own example),
and the channel against a fake that verifies the signature and answers like the vendor."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from alertrouter.channels.base import ChannelError, Notification
from alertrouter.channels.sms_tencent import tc3_authorization
from alertrouter.channels.voice import VoiceChannel
from alertrouter.channels.voice_tencent import (
    TencentVoice,
    tencent_called_number,
    tencent_voice_body,
    tencent_voice_error,
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
from support.fakes.tencent_voice import FakeTencentVoice

SECRET_ID = "AKIDvoiceSecretId0001"
SECRET_KEY = "tencentVoiceSecretKey01"
WRONG_KEY = "wrong-" + SECRET_KEY
OTHER_ID = "AKIDsomebodyElse0001"
SECRETS = (SECRET_ID, SECRET_KEY, WRONG_KEY, OTHER_ID)
SAMPLE = notification(recipients=("13800000000",), delivery_id=4217)


@pytest.fixture
def fake() -> Iterator[FakeTencentVoice]:
    vendor = FakeTencentVoice({SECRET_ID: SECRET_KEY}, templates={"4356": 2})
    vendor.hang = 5.0
    vendor.start()
    try:
        yield vendor
    finally:
        vendor.stop()


def config(url: str, *, timeout: str = "1s", **tencent: Any) -> VoiceChannelConfig:
    settings = {
        "secret_id": SECRET_ID,
        "secret_key": SECRET_KEY,
        "voice_sdk_app_id": "1400006666",
        "template_id": "4356",
        "endpoint": url + "/",
        **tencent,
    }
    return VoiceChannelConfig.model_validate(
        {
            "name": "voice-tencent",
            "type": "voice",
            "provider": "tencent",
            "tencent": settings,
            "params": {"1": "headline", "2": "severity"},
            "play_times": 3,
            "timeout": timeout,
        }
    )


async def send(cfg: VoiceChannelConfig, n: Notification = SAMPLE, **kwargs: Any) -> None:
    async with httpx.AsyncClient() as client:
        await VoiceChannel(cfg, client=client, **kwargs).send(n)


async def failure(cfg: VoiceChannelConfig, n: Notification = SAMPLE, **kwargs: Any) -> ChannelError:
    with pytest.raises(ChannelError) as caught:
        await send(cfg, n, **kwargs)
    assert_no_secret(SECRETS, errors=[caught.value])
    return caught.value


def signature(headers: dict[str, str]) -> str:
    return {k.lower(): v for k, v in headers.items()}.get("authorization", "").rpartition("Signature=")[2]


def contract(client: httpx.AsyncClient) -> ChannelContract[FakeTencentVoice]:
    def channel(fake: FakeTencentVoice, timeout: str = "1s", **tencent: str) -> VoiceChannel:
        return VoiceChannel(config(fake.url, timeout=timeout, **tencent), client=client)

    return ChannelContract(
        vendor=lambda: FakeTencentVoice({SECRET_ID: SECRET_KEY}, templates={"4356": 2}),
        channel=channel,
        delivered=lambda fake: len(fake.calls),
        notification=SAMPLE,
        secrets=SECRETS,
        mistakes={
            "wrong key": lambda fake: channel(fake, secret_key=WRONG_KEY),
            "unknown id": lambda fake: channel(fake, secret_id=OTHER_ID),
        },
        wire_secrets=lambda fake: {signature(r.headers) for r in fake.received} - {""},
    )


# -- the request and its signature ---------------------------------------------------------------


def test_body_of_the_documented_example() -> None:
    """cloud.tencent.com/document/api/1128/51558, 示例1 指定模板发送语音通知: the same inputs give that body."""
    cfg = config("https://vms.tencentcloudapi.com")
    assert cfg.tencent is not None
    body = tencent_voice_body(cfg.tencent, "+8613788888888", ["7652"], play_times=2, session="sc-t")
    documented = """{"TemplateId": "4356", "TemplateParamSet": ["7652"], "PlayTimes": 2,
                     "CalledNumber": "+8613788888888", "SessionContext": "sc-t", "VoiceSdkAppid": "1400006666"}"""
    assert body == json.loads(documented)


@pytest.mark.parametrize(
    ("number", "called"),
    [
        ("+8613800000000", "+8613800000000"),
        ("13800000000", "+8613800000000"),
        ("008613800000000", "+8613800000000"),
        ("8613800000000", "+8613800000000"),
        ("+85200000000", "+85200000000"),
    ],
)
def test_called_number_is_e164(number: str, called: str) -> None:
    assert tencent_called_number(number) == called


VOICE_PAYLOAD = (
    '{"TemplateId":"4356","CalledNumber":"+8613800000000","VoiceSdkAppid":"1400006666",'
    '"TemplateParamSet":["gpu node 07 XID 79 GPU 3"],"PlayTimes":2,"SessionContext":"4217"}'
)


def _published_tc3(secret: str, service: str, timestamp: int, date: str, host: str, payload: str) -> str:
    """The documented steps (Signature v3: canonical request, string to sign, derived key), by hand."""
    canonical = (
        f"POST\n/\n\ncontent-type:application/json; charset=utf-8\nhost:{host}\n\ncontent-type;host\n"
        f"{hashlib.sha256(payload.encode()).hexdigest()}"
    )
    to_sign = (
        f"TC3-HMAC-SHA256\n{timestamp}\n{date}/{service}/tc3_request\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    )

    def step(key: bytes, msg: str) -> bytes:
        return hmac.new(key, msg.encode(), hashlib.sha256).digest()

    key = step(step(step(("TC3" + secret).encode(), date), service), "tc3_request")
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def test_signature_of_a_voice_request() -> None:
    doc_payload = '{"Limit": 1, "Filters": [{"Values": ["\\u672a\\u547d\\u540d"], "Name": "instance-name"}]}'
    documented = _published_tc3(
        "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE", "cvm", 1551113065, "2019-02-25", "cvm.tencentcloudapi.com", doc_payload
    )
    assert documented == "72e494ea809ad7a8c8f7a4507b9bddcbaa8e581f516e8da2f66e2c5a96525168"  # Tencent's example
    expected = _published_tc3(
        "ExampleTencentSecretKey", "vms", 1795255200, "2026-11-21", "vms.tencentcloudapi.com", VOICE_PAYLOAD
    )
    assert expected == "a6680c654fc1e98b6fbfd89cd325d8643e3b88befac894174c67dc3fab2d4d4d"  # one-off script, same inputs
    assert tc3_authorization(
        secret_id="AKIDExampleSecretId", secret_key="ExampleTencentSecretKey", host="vms.tencentcloudapi.com",
        payload=VOICE_PAYLOAD.encode(), timestamp=1795255200, service="vms",
    ) == (
        "TC3-HMAC-SHA256 Credential=AKIDExampleSecretId/2026-11-21/vms/tc3_request, SignedHeaders=content-type;host, "
        f"Signature={expected}"
    )  # fmt: skip


async def test_request_body_and_headers() -> None:
    cfg = config(
        "https://vms.tencentcloudapi.com", secret_id="AKIDExampleSecretId", secret_key="ExampleTencentSecretKey"
    )
    assert cfg.tencent is not None
    async with httpx.AsyncClient() as client:
        provider = TencentVoice(cfg.tencent, client=client, play_times=2, clock=lambda: 1795255200.0)
        payload, headers = provider.request("13800000000", {"1": "gpu node 07 XID 79 GPU 3"}, reference="4217")
    assert payload == VOICE_PAYLOAD.encode()
    assert headers["X-TC-Action"] == "SendTtsVoice"
    assert headers["X-TC-Version"] == "2020-09-02"
    assert headers["X-TC-Timestamp"] == "1795255200"
    assert headers["X-TC-Region"] == "ap-guangzhou"
    assert headers["Host"] == "vms.tencentcloudapi.com"
    assert signature(headers) == "a6680c654fc1e98b6fbfd89cd325d8643e3b88befac894174c67dc3fab2d4d4d"


@pytest.mark.parametrize(
    ("code", "permanent", "rate_limited"),
    [
        ("LimitExceeded.DeliveryFrequencyLimit", False, True),
        ("RequestLimitExceeded", False, True),
        ("AuthFailure.SignatureFailure", True, False),
        ("AuthFailure.SecretIdNotFound", True, False),
        ("FailedOperation.TemplateIncorrectOrUnapproved", True, False),
        ("FailedOperation.InsufficientBalanceInVoicePackage", True, False),
        ("FailedOperation.ContainSensitiveWord", True, False),
        ("FailedOperation.PhonenumberUnappliedOrExpired", True, False),
        ("InvalidParameterValue.CalledNumberVerifyFail", True, False),
        ("InvalidParameterValue.ContentLengthLimit", True, False),
        ("UnauthorizedOperation.SdkAppidIsDisabled", True, False),
        ("UnauthorizedOperation.ServiceSuspendDueToArrears", True, False),
        ("InternalError.RequestTimeException", True, False),
        ("InternalError.SigVerificationFail", True, False),
        ("InternalError.AccessUpstreamTimeout", False, False),
        ("InternalError.UpstreamError", False, False),
    ],
)
def test_error_classes(code: str, permanent: bool, rate_limited: bool) -> None:
    error = tencent_voice_error(code, "message")
    assert (error.permanent, error.rate_limited, error.code) == (permanent, rate_limited, code)
    assert "SendTtsVoice" in error.message


# -- against the fake ----------------------------------------------------------------------------


async def test_one_signed_call_per_number(fake: FakeTencentVoice) -> None:
    two = dataclasses.replace(SAMPLE, recipients=("13800000000", "+86 138-0000-0001"))
    await send(config(fake.url), two)
    values = ["gpu node 07 GPUHighTemp on 6..", "critical"]
    assert fake.calls == [("+8613800000000", values, 3, "4217"), ("+8613800000001", values, 3, "4217")]


async def test_wrong_key_is_permanent(fake: FakeTencentVoice) -> None:
    error = await failure(config(fake.url, secret_key=WRONG_KEY))
    assert (error.permanent, error.code) == (True, "AuthFailure.SignatureFailure")
    assert not fake.calls


async def test_a_variable_longer_than_the_template_takes_is_permanent(fake: FakeTencentVoice) -> None:
    fake.param_limit = 12  # the channel's param_max_length (30) is set too high for this account
    error = await failure(config(fake.url))
    assert (error.permanent, error.code) == (True, "InvalidParameterValue.ContentLengthLimit")


async def test_frequency_limit_is_a_rate_limit(fake: FakeTencentVoice) -> None:
    fake.rate.limit = 1
    await send(config(fake.url))
    error = await failure(config(fake.url))
    assert (error.permanent, error.rate_limited, error.code) == (False, True, "LimitExceeded.DeliveryFrequencyLimit")


async def test_a_rate_limit_on_one_number_still_calls_the_others(fake: FakeTencentVoice) -> None:
    fake.rate.limit = 1
    await send(config(fake.url))  # 13800000000 has had its call
    both = dataclasses.replace(SAMPLE, recipients=("13800000000", "13800000001"))
    error = await failure(config(fake.url), both)
    assert error.rate_limited
    assert error.reached == ("13800000001",)
    assert [n for n, *_ in fake.calls] == ["+8613800000000", "+8613800000001"]


@pytest.mark.parametrize("fault", HTTP_FAULTS, ids=str)
async def test_faults_are_transient(fault: Fault) -> None:
    async with httpx.AsyncClient() as client:
        await assert_transient(contract(client), fault)


async def test_faults_leak_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    async with httpx.AsyncClient() as client:
        await assert_no_secret_leaks(contract(client), caplog)

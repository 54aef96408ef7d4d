"""Tencent Cloud SendSms: TC3-HMAC-SHA256 against the documented and hand-computed vectors, and the
channel against a fake that verifies the signature and answers per number, over loopback HTTP."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from alertrouter.channels.base import ChannelError, Notification
from alertrouter.channels.sms import SmsChannel
from alertrouter.channels.sms_tencent import (
    TencentSms,
    tc3_authorization,
    tc3_canonical_request,
    tc3_credential_scope,
    tc3_signature,
    tc3_string_to_sign,
    tencent_error,
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
from support.fakes.server import Received
from support.fakes.tencent import FakeTencentSms

SECRET_ID = "AKIDtestSecretId0001"
SECRET_KEY = "tencentSecretKey0001"
SAMPLE = notification(recipients=("+8613800000000",))
WRONG_KEY = "wrong-" + SECRET_KEY
OTHER_ID = "AKIDsomebodyElse"
SECRETS = (SECRET_ID, SECRET_KEY, WRONG_KEY, OTHER_ID)


class NoRenderer:
    def render(self, channel: str, fmt: str, notification: Notification, *, limit_bytes: int | None = None) -> str:
        raise AssertionError("template providers do not render free text")

    def title(self, notification: Notification, *, limit_bytes: int | None = None) -> str:
        raise AssertionError("no title for SMS")


@pytest.fixture
def fake() -> Iterator[FakeTencentSms]:
    vendor = FakeTencentSms({SECRET_ID: SECRET_KEY}, templates={"1110": 3})
    vendor.hang = 5.0
    vendor.start()
    try:
        yield vendor
    finally:
        vendor.stop()


def config(url: str, *, timeout: str = "1s", **tencent: str) -> SmsChannelConfig:
    settings = {
        "secret_id": SECRET_ID,
        "secret_key": SECRET_KEY,
        "sdk_app_id": "1400006666",
        "sign_name": "GPU告警",
        "template_id": "1110",
        "endpoint": url + "/",
        **tencent,
    }
    return SmsChannelConfig.model_validate(
        {
            "name": "sms-tencent",
            "type": "sms",
            "provider": "tencent",
            "tencent": settings,
            "params": {"1": "node", "2": "alertname", "3": "gpus"},
            "timeout": timeout,
        }
    )


async def send(cfg: SmsChannelConfig, notification: Notification = SAMPLE, **kwargs: Any) -> None:
    async with httpx.AsyncClient() as client:
        await SmsChannel(cfg, client=client, renderer=NoRenderer(), **kwargs).send(notification)


async def failure(cfg: SmsChannelConfig, notification: Notification = SAMPLE, **kwargs: Any) -> ChannelError:
    with pytest.raises(ChannelError) as caught:
        await send(cfg, notification, **kwargs)
    assert_no_secret(SECRETS, errors=[caught.value])
    return caught.value


def signature(request: Received) -> str:
    authorization = {k.lower(): v for k, v in request.headers.items()}.get("authorization", "")
    return authorization.rpartition("Signature=")[2]


def contract(client: httpx.AsyncClient) -> ChannelContract[FakeTencentSms]:
    """The shared checks' view of this channel: an account, and three ways for a send to be refused."""

    def channel(fake: FakeTencentSms, timeout: str = "1s", **tencent: str) -> SmsChannel:
        return SmsChannel(config(fake.url, timeout=timeout, **tencent), client=client, renderer=NoRenderer())

    def rate_limited(fake: FakeTencentSms) -> SmsChannel:
        fake.rate.limit = 0
        return channel(fake)

    return ChannelContract(
        vendor=lambda: FakeTencentSms({SECRET_ID: SECRET_KEY}, templates={"1110": 3}),
        channel=channel,
        delivered=lambda fake: len(fake.accepted),
        notification=SAMPLE,
        secrets=SECRETS,
        mistakes={
            "wrong key": lambda fake: channel(fake, secret_key=WRONG_KEY),
            "unknown id": lambda fake: channel(fake, secret_id=OTHER_ID),
            "rate limited": rate_limited,
        },
        wire_secrets=lambda fake: {signature(r) for r in fake.received} - {""},
    )


# -- signing -------------------------------------------------------------------------------------

# The worked example of Tencent Cloud's "Signature v3" page (CVM DescribeInstances).
DOC_PAYLOAD = '{"Limit": 1, "Filters": [{"Values": ["\\u672a\\u547d\\u540d"], "Name": "instance-name"}]}'
DOC_KEY = "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE"
DOC_ID = "AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE"


def test_documented_example() -> None:
    canonical = tc3_canonical_request(host="cvm.tencentcloudapi.com", payload=DOC_PAYLOAD)
    assert canonical == (
        "POST\n/\n\ncontent-type:application/json; charset=utf-8\nhost:cvm.tencentcloudapi.com\n\n"
        "content-type;host\n35e9c5b0e3ae67532d3c9f17ead6c90222632e5b1ff7f6e89887f1398934f064"
    )
    scope = tc3_credential_scope(1551113065, "cvm")
    assert scope == "2019-02-25/cvm/tc3_request"  # 2019-02-26 00:44 in UTC+8, still the 25th in UTC
    to_sign = tc3_string_to_sign(1551113065, scope, canonical)
    assert to_sign == (
        "TC3-HMAC-SHA256\n1551113065\n2019-02-25/cvm/tc3_request\n"
        "5ffe6a04c0664d6b969fab9a13bdab201d63ee709638e2749d62a09ca18d7031"
    )
    signature = "72e494ea809ad7a8c8f7a4507b9bddcbaa8e581f516e8da2f66e2c5a96525168"
    assert tc3_signature(DOC_KEY, "2019-02-25", "cvm", to_sign) == signature
    assert tc3_authorization(
        secret_id=DOC_ID, secret_key=DOC_KEY, host="cvm.tencentcloudapi.com", payload=DOC_PAYLOAD,
        timestamp=1551113065, service="cvm",
    ) == (
        f"TC3-HMAC-SHA256 Credential={DOC_ID}/2019-02-25/cvm/tc3_request, "
        f"SignedHeaders=content-type;host, Signature={signature}"
    )  # fmt: skip


SMS_PAYLOAD = (
    '{"PhoneNumberSet":["+8613800000000"],"SmsSdkAppId":"1400006666","SignName":"GPU告警",'
    '"TemplateId":"1110","TemplateParamSet":["gpu-node-07: GPUHighTemp","critical"]}'
).encode()


def test_signature_by_hand() -> None:
    """The documented steps spelled out with hashlib/hmac for an SMS request."""
    payload_hash = hashlib.sha256(SMS_PAYLOAD).hexdigest()
    canonical = (
        "POST\n/\n\ncontent-type:application/json; charset=utf-8\nhost:sms.tencentcloudapi.com\n\n"
        f"content-type;host\n{payload_hash}"
    )
    to_sign = (
        f"TC3-HMAC-SHA256\n1795255200\n2026-11-21/sms/tc3_request\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    )

    def step(key: bytes, msg: str) -> bytes:
        return hmac.new(key, msg.encode(), hashlib.sha256).digest()

    key = step(step(step(b"TC3ExampleTencentSecretKey", "2026-11-21"), "sms"), "tc3_request")
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    assert tc3_canonical_request(host="sms.tencentcloudapi.com", payload=SMS_PAYLOAD) == canonical
    assert tc3_string_to_sign(1795255200, "2026-11-21/sms/tc3_request", canonical) == to_sign
    assert tc3_signature("ExampleTencentSecretKey", "2026-11-21", "sms", to_sign) == expected


def test_signature_literal_vector() -> None:
    """Computed once with a separate one-off script from the same fixed inputs."""
    authorization = tc3_authorization(
        secret_id="AKIDExampleSecretId",
        secret_key="ExampleTencentSecretKey",
        host="sms.tencentcloudapi.com",
        payload=SMS_PAYLOAD,
        timestamp=1795255200,
    )
    assert authorization == (
        "TC3-HMAC-SHA256 Credential=AKIDExampleSecretId/2026-11-21/sms/tc3_request, SignedHeaders=content-type;host, "
        "Signature=20b21eda6aaf3e4052c334808f5171067b61d7722927aeac13ca014a9f4ec6b4"
    )


async def test_request_body_and_headers() -> None:
    cfg = config("https://sms.tencentcloudapi.com")
    assert cfg.tencent is not None
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        status = {"PhoneNumber": "+8613800000000", "Code": "Ok", "Message": "send success"}
        return httpx.Response(200, json={"Response": {"SendStatusSet": [status], "RequestId": "r-1"}})

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        provider = TencentSms(cfg.tencent, client=client, clock=lambda: 1795255200.0)
        await provider.send(["+8613800000000"], {"a": "gpu-node-07: GPUHighTemp", "b": "critical"})
    (request,) = seen
    assert request.content == SMS_PAYLOAD
    assert str(request.url) == "https://sms.tencentcloudapi.com/"
    assert request.headers["Host"] == "sms.tencentcloudapi.com"
    assert request.headers["X-TC-Action"] == "SendSms"
    assert request.headers["X-TC-Version"] == "2021-01-11"
    assert request.headers["X-TC-Timestamp"] == "1795255200"
    assert request.headers["X-TC-Region"] == "ap-guangzhou"
    assert request.headers["Content-Type"] == "application/json; charset=utf-8"
    assert request.headers["Authorization"] == tc3_authorization(
        secret_id=SECRET_ID,
        secret_key=SECRET_KEY,
        host="sms.tencentcloudapi.com",
        payload=SMS_PAYLOAD,
        timestamp=1795255200,
    )


@pytest.mark.parametrize(
    ("code", "permanent", "rate_limited"),
    [
        ("AuthFailure.SignatureFailure", True, False),
        ("AuthFailure.SecretIdNotFound", True, False),
        ("AuthFailure.SignatureExpire", True, False),
        ("LimitExceeded.PhoneNumberDailyLimit", False, True),
        ("LimitExceeded.PhoneNumberThirtySecondLimit", False, True),
        ("LimitExceeded.DeliveryFrequencyLimit", False, True),
        ("LimitExceeded.PhoneNumberCountLimit", True, False),
        ("RequestLimitExceeded", False, True),
        ("FailedOperation.SignatureIncorrectOrUnapproved", True, False),
        ("FailedOperation.TemplateIncorrectOrUnapproved", True, False),
        ("FailedOperation.PhoneNumberInBlacklist", True, False),
        ("FailedOperation.InsufficientBalanceInSmsPackage", True, False),
        ("FailedOperation", False, False),
        ("InvalidParameterValue.IncorrectPhoneNumber", True, False),
        ("UnauthorizedOperation.SmsSdkAppIdVerifyFail", True, False),
        ("InternalError", False, False),
        ("InternalError.Timeout", False, False),
        ("SomethingNew.NeverSeen", False, False),
    ],
)
def test_error_classes(code: str, permanent: bool, rate_limited: bool) -> None:
    error = tencent_error(code)
    assert (error.permanent, error.rate_limited) == (permanent, rate_limited)


# -- against the fake ----------------------------------------------------------------------------


async def test_send(fake: FakeTencentSms) -> None:
    await send(config(fake.url))
    assert len(fake.accepted) == 1
    body = fake.accepted[0].json()
    assert body["TemplateParamSet"] == ["gpu-node-07", "GPUHighTemp", "2/8"]  # in the order of config.params
    assert body["PhoneNumberSet"] == ["+8613800000000"]
    assert fake.sent == [("+8613800000000", ["gpu-node-07", "GPUHighTemp", "2/8"])]


async def test_bad_secret_key_is_permanent(fake: FakeTencentSms) -> None:
    error = await failure(config(fake.url, secret_key=WRONG_KEY))
    assert error.permanent
    assert error.code == "AuthFailure.SignatureFailure"
    assert not fake.accepted


async def test_unknown_secret_id_is_permanent(fake: FakeTencentSms) -> None:
    error = await failure(config(fake.url, secret_id=OTHER_ID))
    assert error.permanent
    assert error.code == "AuthFailure.SecretIdNotFound"


async def test_clock_skew_is_permanent(fake: FakeTencentSms) -> None:
    error = await failure(config(fake.url), clock=lambda: time.time() - 600)
    assert error.permanent
    assert error.code == "AuthFailure.SignatureExpire"


async def test_wrong_number_of_variables_is_permanent(fake: FakeTencentSms) -> None:
    fake.templates["1110"] = 2
    error = await failure(config(fake.url))
    assert error.permanent
    assert error.code == "FailedOperation.TemplateParamSetNotMatchApprovedTemplate"


async def test_per_number_rate_is_rate_limited(fake: FakeTencentSms) -> None:
    fake.rate.limit = 1
    await send(config(fake.url))
    error = await failure(config(fake.url))
    assert error.rate_limited
    assert not error.permanent
    assert error.code == "LimitExceeded.PhoneNumberDailyLimit"
    assert "+8613800000000" in error.message


async def test_some_numbers_refused_permanently(fake: FakeTencentSms) -> None:
    fake.blacklist.add("+8613900000001")
    recipients = ("+8613800000000", "+8613900000001", "12345")
    error = await failure(config(fake.url), dataclasses.replace(SAMPLE, recipients=recipients))
    assert error.permanent  # every failure was permanent; the good number got its message
    assert "2 of 3 numbers failed" in error.message
    assert "+8613900000001 FailedOperation.PhoneNumberInBlacklist" in error.message
    assert "InvalidParameterValue.IncorrectPhoneNumber" in error.message
    assert [n for n, _ in fake.sent] == ["+8613800000000"]


async def test_mixed_failures_are_not_permanent(fake: FakeTencentSms) -> None:
    fake.blacklist.add("+8613900000001")
    fake.rate.limit = 1
    await send(config(fake.url))  # uses up +8613800000000's allowance
    recipients = ("+8613800000000", "+8613900000001")
    error = await failure(config(fake.url), dataclasses.replace(SAMPLE, recipients=recipients))
    assert not error.permanent
    assert error.rate_limited


@pytest.mark.parametrize(
    ("code", "permanent", "rate_limited"),
    [("InternalError", False, False), ("RequestLimitExceeded", False, True), ("FailedOperation", False, False)],
)
async def test_request_errors(fake: FakeTencentSms, code: str, permanent: bool, rate_limited: bool) -> None:
    fake.error_next(code)
    error = await failure(config(fake.url))
    assert (error.permanent, error.rate_limited, error.code) == (permanent, rate_limited, code)


@pytest.mark.parametrize("fault", HTTP_FAULTS, ids=str)
async def test_faults_are_transient(fault: Fault) -> None:
    async with httpx.AsyncClient() as client:
        await assert_transient(contract(client), fault)


async def test_long_number_list_is_split(fake: FakeTencentSms) -> None:
    numbers = tuple(f"+86138{i:08d}" for i in range(401))
    await send(config(fake.url), dataclasses.replace(SAMPLE, recipients=numbers))
    assert [len(r.json()["PhoneNumberSet"]) for r in fake.accepted] == [200, 200, 1]
    assert [n for n, _ in fake.sent] == list(numbers)


async def test_faults_leak_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    async with httpx.AsyncClient() as client:
        await assert_no_secret_leaks(contract(client), caplog)

"""The generic SMS gateway channel against a fake gateway over loopback HTTP."""

from __future__ import annotations

import time
from collections.abc import Iterator
from email.utils import formatdate
from typing import Any

import httpx
import pytest

from alertrouter.channels.base import ChannelError, Notification
from alertrouter.channels.sms import TEXT_LIMIT_BYTES, SmsChannel
from alertrouter.channels.sms_generic import generic_status_error, retry_after_seconds
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
from support.fakes.smsgateway import FakeSmsGateway

TOKEN = "gw-token-0123456789abcdef"
WRONG_TOKEN = "not-" + TOKEN
SAMPLE = notification(recipients=("+8613800000000",))


class TextRenderer:
    def __init__(self, text: str = "[CRITICAL] gpu-node-07: GPUHighTemp on 6/8 GPUs") -> None:
        self.text = text
        self.calls: list[tuple[str, str, int | None]] = []

    def render(self, channel: str, fmt: str, notification: Notification, *, limit_bytes: int | None = None) -> str:
        self.calls.append((channel, fmt, limit_bytes))
        return self.text

    def title(self, notification: Notification, *, limit_bytes: int | None = None) -> str:
        raise AssertionError("no title for SMS")


@pytest.fixture
def gateway() -> Iterator[FakeSmsGateway]:
    vendor = FakeSmsGateway(TOKEN)
    vendor.hang = 5.0
    vendor.start()
    try:
        yield vendor
    finally:
        vendor.stop()


def config(url: str, token: str | None = TOKEN, *, timeout: str = "1s") -> SmsChannelConfig:
    generic: dict[str, Any] = {"url": url + "/sms/send"}
    if token is not None:
        generic["token"] = token
    return SmsChannelConfig.model_validate(
        {
            "name": "sms-gateway",
            "type": "sms",
            "provider": "generic",
            "generic": generic,
            "params": {"what": "headline", "sev": "severity"},
            "timeout": timeout,
        }
    )


async def send(cfg: SmsChannelConfig, renderer: TextRenderer | None = None) -> None:
    async with httpx.AsyncClient() as client:
        await SmsChannel(cfg, client=client, renderer=renderer or TextRenderer()).send(SAMPLE)


async def failure(cfg: SmsChannelConfig) -> ChannelError:
    with pytest.raises(ChannelError) as caught:
        await send(cfg)
    assert_no_secret([TOKEN, WRONG_TOKEN], errors=[caught.value])
    return caught.value


def contract(client: httpx.AsyncClient) -> ChannelContract[FakeSmsGateway]:
    """The shared checks' view of this channel: a gateway, a wrong token, and its rate limit."""

    def channel(gateway: FakeSmsGateway, timeout: str = "1s", token: str = TOKEN) -> SmsChannel:
        return SmsChannel(config(gateway.url, token, timeout=timeout), client=client, renderer=TextRenderer())

    def rate_limited(gateway: FakeSmsGateway) -> SmsChannel:
        gateway.fail_next("429")
        return channel(gateway)

    return ChannelContract(
        vendor=lambda: FakeSmsGateway(TOKEN),
        channel=channel,
        delivered=lambda gateway: len(gateway.accepted),
        notification=SAMPLE,
        secrets=(TOKEN, WRONG_TOKEN),
        mistakes={"wrong token": lambda gateway: channel(gateway, token=WRONG_TOKEN), "rate limited": rate_limited},
    )


async def test_send(gateway: FakeSmsGateway) -> None:
    renderer = TextRenderer("GPU\u00a0hot \u2014 \u201cgpu-node-07\u201d\u200b\u2026")
    await send(config(gateway.url), renderer)
    (request,) = gateway.accepted
    assert request.path == "/sms/send"
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert request.headers["Content-Type"] == "application/json; charset=utf-8"
    assert request.json() == {
        "to": ["+8613800000000"],
        "text": 'GPU hot - "gpu-node-07"...',
        "params": {"what": "gpu-node-07: GPUHi..", "sev": "critical"},
    }
    assert renderer.calls == [("sms", "txt", TEXT_LIMIT_BYTES)]


async def test_no_token_no_authorization_header() -> None:
    vendor = FakeSmsGateway(None).start()
    try:
        await send(config(vendor.url, token=None))
        assert "Authorization" not in vendor.accepted[0].headers
    finally:
        vendor.stop()


async def test_wrong_token_is_permanent(gateway: FakeSmsGateway) -> None:
    error = await failure(config(gateway.url, token=WRONG_TOKEN))
    assert error.permanent
    assert error.code == "http-401"
    assert WRONG_TOKEN not in error.message


async def test_rate_limit_honours_retry_after(gateway: FakeSmsGateway) -> None:
    gateway.rate.limit = 1
    gateway.rate.block = 42
    await send(config(gateway.url))
    error = await failure(config(gateway.url))
    assert error.rate_limited
    assert not error.permanent
    assert error.retry_after == 42


@pytest.mark.parametrize("fault", HTTP_FAULTS, ids=str)
async def test_faults_are_transient(fault: Fault) -> None:
    async with httpx.AsyncClient() as client:
        await assert_transient(contract(client), fault)


@pytest.mark.parametrize("fault", ["400", "403", "404"])
async def test_other_client_errors_are_permanent(gateway: FakeSmsGateway, fault: str) -> None:
    gateway.fail_next(fault)
    error = await failure(config(gateway.url))
    assert error.permanent


@pytest.mark.parametrize(
    ("status", "permanent", "rate_limited"),
    [(429, False, True), (500, False, False), (502, False, False), (408, False, False), (400, True, False)],
)
def test_status_classes(status: int, permanent: bool, rate_limited: bool) -> None:
    error = generic_status_error(status)
    assert (error.permanent, error.rate_limited) == (permanent, rate_limited)


def test_retry_after_forms() -> None:
    now = time.time()
    assert retry_after_seconds("120", now) == 120
    assert retry_after_seconds(" 1.5 ", now) == 1.5
    date = retry_after_seconds(formatdate(now + 90, usegmt=True), now)
    assert date is not None
    assert 88 <= date <= 91
    assert retry_after_seconds(formatdate(now - 90, usegmt=True), now) == 0
    assert retry_after_seconds("soon", now) is None
    assert retry_after_seconds(None, now) is None


async def test_faults_leak_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    async with httpx.AsyncClient() as client:
        await assert_no_secret_leaks(contract(client), caplog)

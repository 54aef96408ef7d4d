"""Tencent Cloud voice messages: VMS `SendTtsVoice`, API 3.0, Version 2020-09-02, one number a call.

Request (cloud.tencent.com/document/api/1128/51558, "指定模板发送语音通知"): POST JSON to
vms.tencentcloudapi.com, `X-TC-Action: SendTtsVoice`, with `TemplateId` (an approved template),
`CalledNumber` (E.164: "+[国家或地区码][用户号码]", e.g. +8613711112222), `VoiceSdkAppid` (the voice
application, e.g. 1400006666), `TemplateParamSet` (positional variables, an empty list for a template
without any; "语音消息的内容长度不超过350字"), `PlayTimes` (at most 3, default 2) and `SessionContext`
(given back as is). Default rate: 20 requests a second. Signed with TC3-HMAC-SHA256 exactly as `SendSms`
(`alertrouter.channels.sms_tencent`) but with the service `vms` in the credential scope.

Answer: HTTP 200 either way, `Response.SendStatus.CallId` when the call was placed, `Response.Error.Code`
otherwise. The codes of this API (tencentcloud-sdk-go, vms/v20200902/errors.go): `LimitExceeded.
DeliveryFrequencyLimit` (the frequency limit per number), `FailedOperation.*` (template not approved,
sensitive words, voice package used up, no number applied for), `InvalidParameterValue.*` (a bad called
number, `ContentLengthLimit`: one variable too long, an unknown app id), `UnauthorizedOperation.*` (app
disabled or unpaid), `InternalError.*`; plus the common `AuthFailure.*` and `RequestLimitExceeded`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from alertrouter.channels.base import ChannelError
from alertrouter.channels.sms_tencent import tc3_post, tc3_request, tencent_error
from alertrouter.ruleset.channels import TencentVoiceConfig

__all__ = ["ACTION", "SERVICE", "TencentVoice", "tencent_called_number", "tencent_voice_body", "tencent_voice_error"]

log = logging.getLogger(__name__)

ACTION = "SendTtsVoice"
SERVICE = "vms"
VERSION = "2020-09-02"

# InternalError.* is transient for SMS, but these three are ours to fix and a retry repeats them.
_VOICE_PERMANENT = frozenset(
    {
        "InternalError.RequestTimeException",  # our clock is more than 10 minutes off: fix NTP
        "InternalError.SigVerificationFail",
        "InternalError.RestApiInterfaceNotExist",
    }
)

Clock = Callable[[], float]


def tencent_called_number(number: str) -> str:
    """E.164 as the API wants it: `+8613800000000` stays, `13800000000` (a mainland mobile) and
    `008613800000000` become `+8613800000000`, any other run of digits gets its `+`."""
    if number.startswith("+"):
        return number
    if number.startswith("00"):
        return "+" + number[2:]
    if len(number) == 11 and number.startswith("1"):
        return "+86" + number
    return "+" + number


def tencent_voice_body(
    config: TencentVoiceConfig, number: str, values: list[str], *, play_times: int, session: str | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "TemplateId": config.template_id,
        "CalledNumber": tencent_called_number(number),
        "VoiceSdkAppid": config.voice_sdk_app_id,
        "TemplateParamSet": values,
        "PlayTimes": play_times,
    }
    if session:
        body["SessionContext"] = session
    return body


def tencent_voice_error(code: str, message: str = "") -> ChannelError:
    """Tencent's classes (see `sms_tencent.tencent_error`: `LimitExceeded*` rate-limited, `AuthFailure*`,
    `FailedOperation.*` and bad parameters permanent) with the clock and signature faults above permanent."""
    error = tencent_error(code, message, action=ACTION)
    if code in _VOICE_PERMANENT:
        return ChannelError(error.message, permanent=True, code=code)
    return error


class TencentVoice:
    """One `SendTtsVoice` per number."""

    def __init__(
        self,
        config: TencentVoiceConfig,
        *,
        client: httpx.AsyncClient,
        play_times: int = 2,
        timeout: float = 10.0,
        clock: Clock = time.time,
    ) -> None:
        self.config = config
        self._client = client
        self._play_times = play_times
        self._timeout = timeout
        self._clock = clock
        self._host = httpx.URL(config.endpoint).netloc.decode("ascii")

    def request(
        self, number: str, params: Mapping[str, str], *, reference: str | None = None
    ) -> tuple[bytes, dict[str, str]]:
        """The signed body and headers of one call (variables in the order of `params`)."""
        body = tencent_voice_body(
            self.config, number, list(params.values()), play_times=self._play_times, session=reference
        )
        return tc3_request(
            body,
            secret_id=self.config.secret_id.get_secret_value(),
            secret_key=self.config.secret_key.get_secret_value(),
            region=self.config.region,
            host=self._host,
            action=ACTION,
            version=VERSION,
            timestamp=int(self._clock()),
            service=SERVICE,
        )

    async def call(self, number: str, params: Mapping[str, str], *, reference: str | None = None) -> str:
        """Places the call; returns the vendor's CallId, or raises `ChannelError`."""
        result = await tc3_post(
            self._client,
            self.config.endpoint,
            self.request(number, params, reference=reference),
            action=ACTION,
            wait=self._timeout,
        )
        error = result.get("Error")
        if isinstance(error, Mapping):
            raise tencent_voice_error(str(error.get("Code") or ""), str(error.get("Message") or ""))
        status_ = result.get("SendStatus")
        call_id = status_.get("CallId") if isinstance(status_, Mapping) else None
        if not call_id:
            raise ChannelError(f"tencent {ACTION}: an answer without SendStatus.CallId", code="no-call-id")
        return str(call_id)

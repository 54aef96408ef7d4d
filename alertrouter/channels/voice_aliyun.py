"""Aliyun (Alibaba Cloud) voice: Dyvms `SingleCallByTts`, RPC style, Version 2017-05-25, one number a call.

Request (help.aliyun.com/document_detail/393519, "SingleCallByTts - 发送语音验证码或文本转语音类型的语音
通知", and the English page help.aliyun.com/en/vms/developer-reference/api-dyvmsapi-2017-05-25-singlecallbytts):
POST to dyvmsapi.aliyuncs.com with `CalledNumber` (one number a request: "调用一次接口仅支持添加一个被叫号码",
a mainland mobile written without a country code, e.g. 159****0000), `TtsCode` (an approved TTS
template), `TtsParam` (its variables as a JSON string; "模板变量整体长度必须小于 250 个字符", no link
allowed), `CalledShowNumber` (the number shown; left out in the shared "public" mode), `PlayTimes`
(1-3, default 3), `Volume` (0-100), `Speed` (-500..500) and `OutId` (the caller's id, 1-15 bytes, given
back in the call receipt). The common parameters and the signature are those of every RPC API, the
same signature v1 (HMAC-SHA1) that `SendSms` uses: see `alertrouter.channels.sms_aliyun`.

Answer: `{"Code": "OK", "Message": "OK", "RequestId": ..., "CallId": "116012354148^1..."}`; `OK` means the
call was placed, not that anyone answered. Error codes (help.aliyun.com/document_detail/178344, "API错误码"):
`isv.BUSINESS_LIMIT_CONTROL` is the per-number flow control, "1次/分钟、5次/小时、20次/24小时" for
one qualification and purpose, successful and failed calls alike; `isv.TTS_TEMPLATE_ILLEGAL`,
`isv.TEMPLATE_PARAMS_ILLEGAL`, `isv.PARAM_NOT_SUPPORT_URL`, `isv.OUT_OF_SERVICE`, `isv.AMOUNT_NOT_ENOUGH`,
`isv.COMPLAINT_REJECT` (the shown number blocked after complaints) need a person; `isv.VOICE_CALL_FAIL`
("呼叫发起失败") and the call-period codes may pass; `isp.*` are the vendor's own faults.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

import httpx

from alertrouter.channels.base import ChannelError
from alertrouter.channels.sms_aliyun import aliyun_error, aliyun_post
from alertrouter.ruleset.channels import AliyunVoiceConfig

__all__ = ["ACTION", "AliyunVoice", "aliyun_called_number", "aliyun_voice_error", "aliyun_voice_params"]

log = logging.getLogger(__name__)

ACTION = "SingleCallByTts"
VERSION = "2017-05-25"
MAX_OUT_ID = 15  # bytes

# Voice codes that the SMS classes would get wrong: they are about when or how a call was placed, and a
# later attempt may go through (bounded by the channel's retry policy).
_VOICE_TRANSIENT = frozenset(
    {
        "isv.VOICE_CALL_FAIL",  # "呼叫发起失败": the console's statistics say why
        "isv.VOICE_CALL_PERIOD_ERROR",  # "获取语音呼叫时段失败"
        "isv.VOICE_ROBOT_NOT_PERIOD",  # "发送时间不能在限制时段内": outside the allowed calling hours
    }
)

Clock = Callable[[], float]


def aliyun_called_number(number: str) -> str:
    """`CalledNumber` as Aliyun writes it: no `+`, and a mainland mobile without its 86 (`+8613800000000`
    becomes `13800000000`); other international numbers keep their country code (`85200000000`)."""
    digits = number.removeprefix("+")
    if digits.startswith("0086"):
        digits = digits[2:]
    if digits.startswith("86") and len(digits) == 13 and digits[2] == "1":
        return digits[2:]
    return digits


def aliyun_voice_params(
    config: AliyunVoiceConfig,
    number: str,
    params: Mapping[str, str],
    *,
    play_times: int,
    timestamp: float,
    nonce: str,
    out_id: str | None = None,
) -> dict[str, str]:
    """The unsigned `SingleCallByTts` parameters for one number; optional ones only when set."""
    form = {
        "Action": ACTION,
        "Version": VERSION,
        "RegionId": config.region_id,
        "CalledNumber": aliyun_called_number(number),
        "TtsCode": config.tts_code,
        "TtsParam": json.dumps(dict(params), ensure_ascii=False, separators=(",", ":")),
        "PlayTimes": str(play_times),
        "AccessKeyId": config.access_key_id.get_secret_value(),
        "Timestamp": datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "SignatureMethod": "HMAC-SHA1",
        "SignatureVersion": "1.0",
        "SignatureNonce": nonce,
        "Format": "JSON",
    }
    if config.called_show_number:
        form["CalledShowNumber"] = config.called_show_number
    if config.volume is not None:
        form["Volume"] = str(config.volume)
    if config.speed is not None:
        form["Speed"] = str(config.speed)
    if out_id:
        form["OutId"] = out_id.encode("utf-8")[:MAX_OUT_ID].decode("utf-8", errors="ignore")
    return form


def aliyun_voice_error(code: str, message: str = "", *, status: int = 200) -> ChannelError:
    """Aliyun's classes (see `sms_aliyun.aliyun_error`: flow control rate-limited, `isv.*` permanent,
    `isp.*` transient) with the call-placing codes above made transient."""
    error = aliyun_error(code, message, status=status, action=ACTION)
    if code in _VOICE_TRANSIENT:
        return ChannelError(error.message, code=code)
    return error


class AliyunVoice:
    """One `SingleCallByTts` per number."""

    def __init__(
        self,
        config: AliyunVoiceConfig,
        *,
        client: httpx.AsyncClient,
        play_times: int = 2,
        timeout: float = 10.0,
        clock: Clock = time.time,
        nonce: Callable[[], str] = lambda: uuid.uuid4().hex,
    ) -> None:
        self.config = config
        self._client = client
        self._play_times = play_times
        self._timeout = timeout
        self._clock = clock
        self._nonce = nonce

    async def call(self, number: str, params: Mapping[str, str], *, reference: str | None = None) -> str:
        """Places the call; returns the vendor's CallId, or raises `ChannelError`."""
        form = aliyun_voice_params(
            self.config,
            number,
            params,
            play_times=self._play_times,
            timestamp=self._clock(),
            nonce=self._nonce(),
            out_id=reference,
        )
        status, code, answer = await aliyun_post(
            self._client,
            self.config.endpoint,
            form,
            self.config.access_key_secret.get_secret_value(),
            action=ACTION,
            wait=self._timeout,
        )
        if status == 200 and code == "OK":
            return str(answer.get("CallId") or "")
        raise aliyun_voice_error(code, str(answer.get("Message") or ""), status=status)

"""A fake Aliyun Dyvms `SingleCallByTts` (RPC style, 2017-05-25) that checks what the real one checks.

The common part (parameters, signature v1 recomputed with Aliyun's own recipe, key, timestamp, nonce)
is the SMS fake's (`support.fakes.aliyun`). Then the call (help.aliyun.com/document_detail/393519 and
its error codes, document_detail/178344): one `CalledNumber` (a mainland mobile without +86, or digits
with a country code), an approved `TtsCode`, `TtsParam` a JSON object of strings holding the template's
variables, all together under 250 characters and without a link, `PlayTimes` 1-3, `CalledShowNumber`
one of the account's numbers when given, `OutId` at most 15 bytes, and the per-number flow control
("1次/分钟、5次/小时、20次/24小时") answered with isv.BUSINESS_LIMIT_CONTROL.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence

from support.fakes.aliyun import COMMON, FakeAliyunSms
from support.fakes.server import RateWindow, Reply

__all__ = ["VENDOR_FLOW_CONTROL", "FakeAliyunVoice"]

_NUMBER = re.compile(r"^1[3-9]\d{9}$|^0\d{9,11}$|^(?!86)[1-9]\d{7,14}$")
VENDOR_FLOW_CONTROL = ((1, 60.0), (5, 3600.0), (20, 86400.0))  # calls per window per called number


class FakeAliyunVoice(FakeAliyunSms):
    """`access_keys`: AccessKeyId -> AccessKeySecret. `templates`: TtsCode -> its variables.

    `calls` holds (CalledNumber, TtsParam, PlayTimes, OutId) of every call placed. `flow_control`:
    (calls, seconds) windows per number; the vendor's defaults unless a test says otherwise (a
    dedicated-mode account may have them raised).
    """

    name = "aliyun-voice"
    action = "SingleCallByTts"
    required = (*COMMON, "CalledNumber", "TtsCode")
    host = "dyvmsapi.aliyuncs.com"

    def __init__(
        self,
        access_keys: dict[str, str],
        *,
        clock: Callable[[], float] = time.time,
        templates: dict[str, tuple[str, ...]] | None = None,
        show_numbers: tuple[str, ...] = (),
        flow_control: Sequence[tuple[int, float]] = VENDOR_FLOW_CONTROL,
    ) -> None:
        super().__init__(access_keys, clock=clock)
        self.templates = templates if templates is not None else {"TTS_100000001": ("headline",)}
        self.show_numbers = set(show_numbers)
        self.windows = [RateWindow(limit, per, 0.0, clock) for limit, per in flow_control]
        self.calls: list[tuple[str, dict[str, str], int, str]] = []

    def _business(self, form: Mapping[str, str]) -> Reply:
        variables = self.templates.get(form["TtsCode"])
        if variables is None:
            return self._answer("isv.TTS_TEMPLATE_ILLEGAL", "TTS模板不合法")
        show = form.get("CalledShowNumber")
        if show and show not in self.show_numbers:
            return self._answer("isv.DISPLAY_NUMBER_ILLEGAL", "号显不合法")
        try:
            params = json.loads(form.get("TtsParam") or "{}")
        except ValueError:
            return self._answer("isv.INVALID_PARAMETERS", "参数异常")
        if not isinstance(params, dict) or not all(isinstance(v, str) for v in params.values()):
            return self._answer("isv.INVALID_PARAMETERS", "参数异常")
        if any(not params.get(v) for v in variables):
            return self._answer("isv.TEMPLATE_MISSING_PARAMETERS", "文本转语音模板参数缺失")
        if sum(len(v) for v in params.values()) >= 250:
            return self._answer("isv.PARAM_LENGTH_LIMIT", "参数长度受限")
        if any(re.search(r"https?|://", v, re.IGNORECASE) for v in params.values()):
            return self._answer("isv.PARAM_NOT_SUPPORT_URL", "变量不支持URL参数")
        play_times = form.get("PlayTimes", "3")
        if play_times not in ("1", "2", "3") or len(form.get("OutId", "").encode()) > 15:
            return self._answer("isv.INVALID_PARAMETERS", "参数异常")
        number = form["CalledNumber"]
        if not _NUMBER.match(number):
            return self._answer("isv.MOBILE_NUMBER_ILLEGAL", "号码格式非法")
        if any(window.hit(number) != "ok" for window in self.windows):
            return self._answer("isv.BUSINESS_LIMIT_CONTROL", "触发流控")
        with self._guard:
            self.calls.append((number, dict(params), int(play_times), form.get("OutId", "")))
        body = {"RequestId": str(uuid.uuid4()).upper(), "Code": "OK", "Message": "OK", "CallId": _call_id()}
        return Reply(200, body)


def _call_id() -> str:
    return f"{uuid.uuid4().int % 10**12}^{uuid.uuid4().int % 10**12}"

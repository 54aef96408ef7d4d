"""A fake Tencent Cloud VMS `SendTtsVoice` (API 3.0, 2020-09-02) that checks what the real one checks.

TC3-HMAC-SHA256 is recomputed with the documented steps (`support.fakes.tencent.check_tc3`, the scope's
service `vms`). Then the call (cloud.tencent.com/document/api/1128/51558 and the API's error codes in
tencentcloud-sdk-go vms/v20200902/errors.go): the voice app id, an approved `TemplateId` with as many
`TemplateParamSet` values as its variables, each at most `param_limit` characters
(InvalidParameterValue.ContentLengthLimit) and all together at most 350, `CalledNumber` in E.164
(`+8613800000000`), `PlayTimes` 1-3, and a per-number frequency limit
(LimitExceeded.DeliveryFrequencyLimit). HTTP 200 in every case, errors in `Response.Error`.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from support.fakes.server import FakeVendor, Received, Reply
from support.fakes.tencent import check_tc3

__all__ = ["FakeTencentVoice"]

_E164 = re.compile(r"^\+[1-9]\d{7,14}$")


class FakeTencentVoice(FakeVendor):
    """`secrets`: SecretId -> SecretKey. `templates`: TemplateId -> number of its variables.

    `calls` holds (CalledNumber, TemplateParamSet, PlayTimes, SessionContext) of every call placed;
    `error_next(code)` makes the next requests answer with `Response.Error`.
    """

    name = "tencent-voice"

    def __init__(
        self,
        secrets: dict[str, str],
        *,
        clock: Callable[[], float] = time.time,
        app_ids: tuple[str, ...] = ("1400006666",),
        templates: dict[str, int] | None = None,
        param_limit: int = 30,
        per_number_limit: int = 20,
        per_number_window: float = 86400.0,
    ) -> None:
        super().__init__(clock=clock, limit=per_number_limit, per=per_number_window, block=0.0)
        self.secrets = secrets
        self.app_ids = set(app_ids)
        self.templates = templates if templates is not None else {"4356": 1}
        self.param_limit = param_limit
        self.calls: list[tuple[str, list[str], int, str]] = []
        self._errors: list[str] = []
        self._guard = threading.Lock()

    def error_next(self, code: str) -> None:
        with self._guard:
            self._errors.append(code)

    def _accepts(self, reply: Reply) -> bool:
        result = reply.body.get("Response", {}) if isinstance(reply.body, dict) else {}
        return "Error" not in result and bool(result.get("SendStatus"))

    @staticmethod
    def _error(code: str, message: str) -> Reply:
        return Reply(200, {"Response": {"Error": {"Code": code, "Message": message}, "RequestId": str(uuid.uuid4())}})

    def handle(self, request: Received) -> Reply:
        headers = {k.lower(): v for k, v in request.headers.items()}
        if headers.get("x-tc-action") != "SendTtsVoice":
            return self._error("InvalidAction", "The action requested does not exist.")
        if headers.get("x-tc-version") != "2020-09-02":
            return self._error("NoSuchVersion", "The requested version does not exist.")
        if not headers.get("x-tc-region"):
            return self._error("MissingParameter", "The request is missing a required parameter `Region`.")
        problem = check_tc3(request, headers, self.secrets, now=self.clock(), service="vms")
        if problem is not None:
            return self._error(*problem)
        with self._guard:
            scripted = self._errors.pop(0) if self._errors else None
        if scripted is not None:
            return self._error(scripted, "scripted")
        try:
            body = request.json()
        except ValueError:
            return self._error("FailedOperation.JsonParseFail", "解析请求包体时候失败")
        if not isinstance(body, dict):
            return self._error("FailedOperation.JsonParseFail", "解析请求包体时候失败")
        return self._business(body)

    def _business(self, body: Mapping[str, Any]) -> Reply:
        for name in ("TemplateId", "CalledNumber", "VoiceSdkAppid"):
            if not isinstance(body.get(name), str) or not body[name]:
                return self._error("MissingParameter", f"The request is missing a required parameter `{name}`.")
        if body["VoiceSdkAppid"] not in self.app_ids:
            return self._error("InvalidParameterValue.SdkAppidNotExist", "SDK AppID 不存在")
        count = self.templates.get(body["TemplateId"])
        values = body.get("TemplateParamSet", [])
        if count is None or not isinstance(values, list) or len(values) != count:
            return self._error("FailedOperation.TemplateIncorrectOrUnapproved", "模版未审核或内容不匹配")
        if not all(isinstance(v, str) and v for v in values):
            return self._error("FailedOperation.InvalidParameters", "无效参数")
        if any(len(v) > self.param_limit for v in values) or sum(len(v) for v in values) > 350:
            return self._error("InvalidParameterValue.ContentLengthLimit", "语音模板中单个变量长度超过限制")
        play_times = body.get("PlayTimes", 2)
        if not isinstance(play_times, int) or not 1 <= play_times <= 3:
            return self._error("FailedOperation.InvalidParameters", "无效参数")
        number = body["CalledNumber"]
        if not _E164.match(number):
            return self._error("InvalidParameterValue.CalledNumberVerifyFail", "被叫手机号码格式校验失败")
        if self.rate.hit(number) != "ok":
            return self._error("LimitExceeded.DeliveryFrequencyLimit", "下发语音消息时命中频率限制策略")
        session = str(body.get("SessionContext", ""))
        with self._guard:
            self.calls.append((number, list(values), play_times, session))
        status = {"CallId": str(uuid.uuid4()), "SessionContext": session}
        return Reply(200, {"Response": {"SendStatus": status, "RequestId": str(uuid.uuid4())}})

"""A fake Tencent Cloud `SendSms` (API 3.0, 2021-01-11) that checks what the real one checks.

TC3-HMAC-SHA256 is recomputed from the received headers and body with the documented steps (not with
the code under test): `X-TC-Action/Version/Timestamp`, the credential's SecretId and date, the
timestamp within 5 minutes, the signature. Then the body: app id, sign name, template, the number of
TemplateParamSet values and their length, at most 200 numbers. Each number gets its own
`SendStatusSet` entry: "Ok", a bad-number code, the do-not-disturb list, or a per-number rate limit.
Like the real service it answers HTTP 200 in every case, errors in `Response.Error`.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from support.fakes.server import FakeVendor, Received, Reply

__all__ = ["FakeTencentSms", "check_tc3"]

_AUTH = re.compile(
    r"^TC3-HMAC-SHA256 Credential=(?P<id>[^/]+)/(?P<date>\d{4}-\d{2}-\d{2})/(?P<service>[^/]+)/tc3_request, "
    r"SignedHeaders=(?P<signed>[a-z0-9;-]+), Signature=(?P<sig>[0-9a-f]{64})$"
)
_E164 = re.compile(r"^\+[1-9]\d{7,14}$|^(?:0086|86)?1[3-9]\d{9}$")


def _sign(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


def check_tc3(
    request: Received, headers: Mapping[str, str], secrets: Mapping[str, str], *, now: float, service: str
) -> tuple[str, str] | None:
    """The (code, message) Tencent answers for a request whose TC3 signature does not hold, or None.
    `headers` are the request's, names lower-cased; `service` is the API's (sms, vms) in the scope."""
    match = _AUTH.match(headers.get("authorization", ""))
    if match is None:
        return "AuthFailure.InvalidAuthorization", "Authorization header is not in TC3 format."
    secret = secrets.get(match["id"])
    if secret is None:
        return "AuthFailure.SecretIdNotFound", "The SecretId is not found, please ensure it is correct."
    try:
        stamp = int(headers.get("x-tc-timestamp", ""))
    except ValueError:
        return "AuthFailure.InvalidAuthorization", "X-TC-Timestamp is not an integer."
    if abs(stamp - now) > 300:
        return "AuthFailure.SignatureExpire", "Signature expired, timestamp differs by over 5 minutes."
    if match["date"] != datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d") or match["service"] != service:
        return "AuthFailure.SignatureFailure", "The provided credentials could not be validated."
    signed = match["signed"].split(";")
    if "content-type" not in signed or "host" not in signed:
        return "AuthFailure.InvalidAuthorization", "SignedHeaders must include content-type and host."
    canonical_headers = "".join(f"{name}:{headers.get(name, '').strip().lower()}\n" for name in signed)
    canonical = "\n".join(
        [request.method, "/", "", canonical_headers, match["signed"], hashlib.sha256(request.body).hexdigest()]
    )
    scope = f"{match['date']}/{service}/tc3_request"
    to_sign = f"TC3-HMAC-SHA256\n{stamp}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    key = _sign(_sign(_sign(("TC3" + secret).encode(), match["date"]), service), "tc3_request")
    if not hmac.compare_digest(hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest(), match["sig"]):
        return "AuthFailure.SignatureFailure", "The provided credentials could not be validated."
    return None


class FakeTencentSms(FakeVendor):
    """`secrets`: SecretId -> SecretKey. `templates`: TemplateId -> number of its variables.

    `sent` holds (number, TemplateParamSet) per accepted number. `blacklist` numbers are refused
    one by one; `error_next(code)` makes the next requests answer with `Response.Error`.
    """

    name = "tencent-sms"

    def __init__(
        self,
        secrets: dict[str, str],
        *,
        clock: Callable[[], float] = time.time,
        sdk_app_ids: tuple[str, ...] = ("1400006666",),
        sign_names: tuple[str, ...] = ("GPU告警",),
        templates: dict[str, int] | None = None,
        param_limit: int = 35,
        per_number_limit: int = 50,
        per_number_window: float = 86400.0,
    ) -> None:
        super().__init__(clock=clock, limit=per_number_limit, per=per_number_window, block=0.0)
        self.secrets = secrets
        self.sdk_app_ids = set(sdk_app_ids)
        self.sign_names = set(sign_names)
        self.templates = templates if templates is not None else {"1110": 1}
        self.param_limit = param_limit
        self.blacklist: set[str] = set()
        self.sent: list[tuple[str, list[str]]] = []
        self._errors: list[str] = []
        self._guard = threading.Lock()

    def error_next(self, code: str) -> None:
        with self._guard:
            self._errors.append(code)

    def _accepts(self, reply: Reply) -> bool:
        result = reply.body.get("Response", {}) if isinstance(reply.body, dict) else {}
        statuses = result.get("SendStatusSet") or []
        return "Error" not in result and bool(statuses) and all(s["Code"] == "Ok" for s in statuses)

    @staticmethod
    def _error(code: str, message: str) -> Reply:
        return Reply(200, {"Response": {"Error": {"Code": code, "Message": message}, "RequestId": str(uuid.uuid4())}})

    def handle(self, request: Received) -> Reply:
        headers = {k.lower(): v for k, v in request.headers.items()}
        if headers.get("x-tc-action") != "SendSms":
            return self._error("InvalidAction", "The action requested does not exist.")
        if headers.get("x-tc-version") != "2021-01-11":
            return self._error("NoSuchVersion", "The requested version does not exist.")
        if not headers.get("x-tc-region"):
            return self._error("MissingParameter", "The request is missing a required parameter `Region`.")
        problem = self._check_signature(request, headers)
        if problem is not None:
            return self._error(*problem)
        with self._guard:
            scripted = self._errors.pop(0) if self._errors else None
        if scripted is not None:
            return self._error(scripted, "scripted")
        try:
            body = request.json()
        except ValueError:
            return self._error("FailedOperation.JsonParseFail", "Failed to parse the JSON body.")
        if not isinstance(body, dict):
            return self._error("FailedOperation.JsonParseFail", "Failed to parse the JSON body.")
        return self._business(body)

    def _check_signature(self, request: Received, headers: Mapping[str, str]) -> tuple[str, str] | None:
        return check_tc3(request, headers, self.secrets, now=self.clock(), service="sms")

    def _business(self, body: Mapping[str, Any]) -> Reply:
        if body.get("SmsSdkAppId") not in self.sdk_app_ids:
            return self._error("UnauthorizedOperation.SmsSdkAppIdVerifyFail", "SmsSdkAppId verification failed.")
        if body.get("SignName") not in self.sign_names:
            return self._error("FailedOperation.SignatureIncorrectOrUnapproved", "签名未审批或格式错误")
        count = self.templates.get(str(body.get("TemplateId")))
        if count is None:
            return self._error("FailedOperation.TemplateIncorrectOrUnapproved", "模板未审批或内容不匹配")
        values = body.get("TemplateParamSet") or []
        if not isinstance(values, list) or len(values) != count or not all(isinstance(v, str) for v in values):
            return self._error("FailedOperation.TemplateParamSetNotMatchApprovedTemplate", "参数个数与模板不匹配")
        if any(len(v) > self.param_limit for v in values):
            return self._error("InvalidParameterValue.TemplateParameterLengthLimit", "单个模板变量长度超过限制")
        numbers = body.get("PhoneNumberSet") or []
        if not isinstance(numbers, list) or not numbers:
            return self._error("MissingParameter", "PhoneNumberSet is empty.")
        if len(numbers) > 200:
            return self._error("LimitExceeded.PhoneNumberCountLimit", "单次提交号码数量超过200")
        statuses = [self._status(str(n), values) for n in numbers]
        return Reply(200, {"Response": {"SendStatusSet": statuses, "RequestId": str(uuid.uuid4())}})

    def _status(self, number: str, values: list[str]) -> dict[str, Any]:
        e164 = number if number.startswith("+") else "+86" + number.removeprefix("0086").removeprefix("86")
        if not _E164.match(number):
            code, message = "InvalidParameterValue.IncorrectPhoneNumber", "手机号格式错误"
        elif e164 in self.blacklist:
            code, message = "FailedOperation.PhoneNumberInBlacklist", "手机号在免打扰名单库中"
        elif self.rate.hit(e164) != "ok":
            code, message = "LimitExceeded.PhoneNumberDailyLimit", "单个手机号日下发短信条数超过设定的上限"
        else:
            code, message = "Ok", "send success"
            with self._guard:
                self.sent.append((e164, list(values)))
        serial = uuid.uuid4().hex if code == "Ok" else ""
        return {
            "SerialNo": serial,
            "PhoneNumber": e164,
            "Fee": 1 if code == "Ok" else 0,
            "SessionContext": "",
            "Code": code,
            "Message": message,
            "IsoCode": "CN" if e164.startswith("+86") else "",
        }

"""A fake Aliyun `SendSms` (dysmsapi, RPC style, 2017-05-25) that checks what the real one checks.

Signature v1 is recomputed from the received form parameters minus `Signature`, with Aliyun's own
recipe (quote_plus, then + -> %20, * -> %2A, %7E -> ~), not with the code under test. Also checked:
the key, the Timestamp (within 15 minutes), SignatureNonce never reused, sign name, template code,
TemplateParam (a JSON object with the template's variables, each at most `param_limit` characters),
numbers (at most 1000, each valid), and a per-number rate (BUSINESS_LIMIT_CONTROL).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from urllib.parse import quote_plus

from support.fakes.server import FakeVendor, Received, Reply

__all__ = ["COMMON", "FakeAliyunSms", "aliyun_expected_signature", "pct"]

_NUMBER = re.compile(r"^(?:(?:\+|00)?86)?1[3-9]\d{9}$|^[1-9]\d{7,14}$")
# The common parameters of every RPC API (signature v1), then SendSms's own.
COMMON = (
    "Action",
    "Version",
    "AccessKeyId",
    "Timestamp",
    "SignatureMethod",
    "SignatureVersion",
    "SignatureNonce",
    "Format",
    "Signature",
)
_REQUIRED = (*COMMON, "PhoneNumbers", "SignName", "TemplateCode")


def pct(value: str) -> str:
    return quote_plus(value, encoding="utf-8").replace("+", "%20").replace("*", "%2A").replace("%7E", "~")


def aliyun_expected_signature(form: Mapping[str, str], secret: str) -> str:
    query = "&".join(f"{pct(k)}={pct(form[k])}" for k in sorted(form) if k != "Signature")
    to_sign = "POST&" + pct("/") + "&" + pct(query)
    digest = hmac.new((secret + "&").encode(), to_sign.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


class FakeAliyunSms(FakeVendor):
    """`access_keys`: AccessKeyId -> AccessKeySecret. `templates`: TemplateCode -> its variables.

    `sent` holds (number, TemplateParam) for every number of every accepted request.
    `error_next(code, status)` makes the next requests answer with a vendor error code.
    """

    name = "aliyun-sms"
    action = "SendSms"  # a subclass for another API of the same RPC style sets these and `_business`
    required: tuple[str, ...] = _REQUIRED
    host = "dysmsapi.aliyuncs.com"

    def __init__(
        self,
        access_keys: dict[str, str],
        *,
        clock: Callable[[], float] = time.time,
        sign_names: tuple[str, ...] = ("GPU告警",),
        templates: dict[str, tuple[str, ...]] | None = None,
        param_limit: int = 35,
        per_number_limit: int = 50,
        per_number_window: float = 86400.0,
    ) -> None:
        super().__init__(clock=clock, limit=per_number_limit, per=per_number_window, block=0.0)
        self.access_keys = access_keys
        self.sign_names = set(sign_names)
        self.templates = templates if templates is not None else {"SMS_480000001": ("headline",)}
        self.param_limit = param_limit
        self.sent: list[tuple[str, dict[str, str]]] = []
        self._nonces: set[str] = set()
        self._errors: list[tuple[str, int, str]] = []
        self._guard = threading.Lock()

    def error_next(self, code: str, status: int = 200, message: str = "scripted") -> None:
        with self._guard:
            self._errors.append((code, status, message))

    def _accepts(self, reply: Reply) -> bool:
        return isinstance(reply.body, dict) and reply.body.get("Code") == "OK"

    def _answer(self, code: str, message: str, status: int = 200) -> Reply:
        body = {"RequestId": str(uuid.uuid4()).upper(), "Code": code, "Message": message}
        if status != 200:
            body["HostId"] = self.host
        return Reply(status, body)

    def handle(self, request: Received) -> Reply:
        form = request.form()
        if request.method != "POST" or request.path != "/":
            return self._answer("InvalidAction.NotFound", "Specified api is not found", 404)
        missing = [k for k in self.required if not form.get(k)]
        if missing:
            return self._answer("MissingParameter", f"The input parameter {missing[0]} that is mandatory", 400)
        if (form["Action"], form["Version"]) != (self.action, "2017-05-25"):
            return self._answer("InvalidVersion", "Specified parameter Version is not valid.", 400)
        if (form["SignatureMethod"], form["SignatureVersion"], form["Format"]) != ("HMAC-SHA1", "1.0", "JSON"):
            return self._answer("InvalidParameter", "SignatureMethod, SignatureVersion or Format", 400)
        secret = self.access_keys.get(form["AccessKeyId"])
        if secret is None:
            return self._answer("InvalidAccessKeyId.NotFound", "Specified access key is not found.", 404)
        expected = aliyun_expected_signature(form, secret)
        if not hmac.compare_digest(expected, form["Signature"]):
            query = "&".join(f"{pct(k)}={pct(form[k])}" for k in sorted(form) if k != "Signature")
            # The real message quotes the string to sign, AccessKeyId and all.
            return self._answer(
                "SignatureDoesNotMatch",
                f"Specified signature is not matched with our calculation. server string to sign is:"
                f"POST&%2F&{pct(query)}",
                400,
            )
        try:
            stamp = datetime.strptime(form["Timestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
        except ValueError:
            return self._answer("InvalidTimeStamp.Format", "Specified time stamp is not valid.", 400)
        if abs(stamp - self.clock()) > 15 * 60:
            return self._answer("InvalidTimeStamp.Expired", "Specified time stamp or date header is expired.", 400)
        with self._guard:
            if form["SignatureNonce"] in self._nonces:
                return self._answer("SignatureNonceUsed", "Specified signature nonce was used already.", 400)
            self._nonces.add(form["SignatureNonce"])
            scripted = self._errors.pop(0) if self._errors else None
        if scripted is not None:
            return self._answer(scripted[0], scripted[2], scripted[1])
        return self._business(form)

    def _business(self, form: Mapping[str, str]) -> Reply:
        if form["SignName"] not in self.sign_names:
            return self._answer("isv.SMS_SIGNATURE_ILLEGAL", "该账号下找不到对应签名")
        variables = self.templates.get(form["TemplateCode"])
        if variables is None:
            return self._answer("isv.SMS_TEMPLATE_ILLEGAL", "该账号下找不到对应模板")
        try:
            params = json.loads(form.get("TemplateParam") or "{}")
        except ValueError:
            return self._answer("isv.INVALID_JSON_PARAM", "JSON参数不合法,只接受字符串值")
        if not isinstance(params, dict) or not all(isinstance(v, str) for v in params.values()):
            return self._answer("isv.INVALID_JSON_PARAM", "JSON参数不合法,只接受字符串值")
        if any(v not in params for v in variables):
            return self._answer("isv.TEMPLATE_MISSING_PARAMETERS", "模板变量缺少对应参数值")
        if any(len(v) > self.param_limit for v in params.values()):
            return self._answer("isv.PARAM_LENGTH_LIMIT", "参数超出长度限制")
        numbers = form["PhoneNumbers"].split(",")
        if len(numbers) > 1000:
            return self._answer("isv.MOBILE_COUNT_OVER_LIMIT", "手机号码数量超过限制,最多支持1000条")
        if not all(_NUMBER.match(n) for n in numbers):
            return self._answer("isv.MOBILE_NUMBER_ILLEGAL", "非法手机号")
        if any(self.rate.hit(n) != "ok" for n in numbers):
            return self._answer("isv.BUSINESS_LIMIT_CONTROL", "触发号码天级流控Permits:50")
        with self._guard:
            self.sent.extend((n, dict(params)) for n in numbers)
        body = {"RequestId": str(uuid.uuid4()).upper(), "Code": "OK", "Message": "OK", "BizId": uuid.uuid4().hex}
        return Reply(200, body)

"""Tencent Cloud SMS: `SendSms`, API 3.0, Version 2021-01-11, signed with TC3-HMAC-SHA256.

Signing (cloud.tencent.com/document/api/382/52072): the canonical request
`POST\\n/\\n\\ncontent-type:<ct>\\nhost:<host>\\n\\ncontent-type;host\\n<sha256 hex of the body>`;
the string to sign `TC3-HMAC-SHA256\\n<timestamp>\\n<date>/sms/tc3_request\\n<sha256 hex of that>`;
the key derived as HMAC-SHA256 chained from `"TC3" + SecretKey` over the UTC date, the service and
`tc3_request`; the signature is the hex HMAC of the string to sign, sent in `Authorization` with the
`X-TC-Action/Version/Timestamp/Region` headers.

Answers are HTTP 200 either way: `Response.Error.Code` for a refused request, otherwise one
`SendStatusSet` entry per number, each with its own `Code` ("Ok" when accepted).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx

from alertrouter.channels.base import ChannelError
from alertrouter.channels.http import answer_json
from alertrouter.ruleset.channels import TencentSmsConfig

__all__ = [
    "CONTENT_TYPE",
    "MAX_NUMBERS",
    "TencentSms",
    "tc3_authorization",
    "tc3_canonical_request",
    "tc3_credential_scope",
    "tc3_signature",
    "tc3_string_to_sign",
    "tencent_error",
]

log = logging.getLogger(__name__)

MAX_NUMBERS = 200  # PhoneNumberSet per SendSms request
ALGORITHM = "TC3-HMAC-SHA256"
SERVICE = "sms"
VERSION = "2021-01-11"
CONTENT_TYPE = "application/json; charset=utf-8"
SIGNED_HEADERS = "content-type;host"

# Per code, where the prefix rules below would be wrong or deserve saying so.
_PERMANENT = frozenset(
    {
        "LimitExceeded.PhoneNumberCountLimit",  # more than 200 numbers: our bug, a retry repeats it
        "AuthFailure.SignatureExpire",  # our clock is off by more than 5 minutes: fix NTP
    }
)
_TRANSIENT = frozenset(
    {
        "FailedOperation",  # bare "operation failed", no reason given
        "InternalError",
        "ResourceUnavailable",
    }
)
# FailedOperation.* are permanent: sign or template not approved (SignatureIncorrectOrUnapproved,
# TemplateIncorrectOrUnapproved, TemplateParamSetNotMatchApprovedTemplate), number on the do-not-disturb
# list (PhoneNumberInBlacklist), sensitive words (ContainSensitiveWord), package used up
# (InsufficientBalanceInSmsPackage), body not understood (FailResolvePacket, JsonParseFail): each needs
# a person, none goes away by retrying.
_PERMANENT_PREFIXES = (
    "AuthFailure",
    "FailedOperation.",
    "InvalidParameter",
    "MissingParameter",
    "UnknownParameter",
    "UnauthorizedOperation",
    "UnsupportedOperation",
    "InvalidAction",
    "ActionOffline",
    "NoSuchVersion",
    "ResourceNotFound",
    "IpInBlacklist",
    "IpNotInWhitelist",
    "InvalidRequest",
)
_RATE_LIMITED_PREFIXES = ("LimitExceeded", "RequestLimitExceeded")
_TRANSIENT_PREFIXES = ("InternalError.", "ResourceUnavailable.")

Clock = Callable[[], float]


def _sha256_hex(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).digest()


def tc3_canonical_request(
    *, host: str, payload: bytes | str, content_type: str = CONTENT_TYPE, method: str = "POST", query: str = ""
) -> str:
    headers = f"content-type:{content_type.strip().lower()}\nhost:{host.strip().lower()}\n"
    return f"{method}\n/\n{query}\n{headers}\n{SIGNED_HEADERS}\n{_sha256_hex(payload)}"


def tc3_credential_scope(timestamp: int, service: str = SERVICE) -> str:
    """`<UTC date>/<service>/tc3_request`: the date in UTC, or signing fails around midnight in UTC+8."""
    return f"{datetime.fromtimestamp(timestamp, UTC):%Y-%m-%d}/{service}/tc3_request"


def tc3_string_to_sign(timestamp: int, credential_scope: str, canonical_request: str) -> str:
    return f"{ALGORITHM}\n{timestamp}\n{credential_scope}\n{_sha256_hex(canonical_request)}"


def tc3_signature(secret_key: str, date: str, service: str, string_to_sign: str) -> str:
    """Hex HMAC-SHA256 of `string_to_sign` under the key derived from `"TC3" + secret_key`."""
    secret_date = _hmac(("TC3" + secret_key).encode("utf-8"), date)
    secret_service = _hmac(secret_date, service)
    secret_signing = _hmac(secret_service, "tc3_request")
    return hmac.new(secret_signing, string_to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def tc3_authorization(
    *,
    secret_id: str,
    secret_key: str,
    host: str,
    payload: bytes | str,
    timestamp: int,
    service: str = SERVICE,
    content_type: str = CONTENT_TYPE,
) -> str:
    """The `Authorization` header of a POST with this JSON `payload` to `host` at `timestamp`."""
    scope = tc3_credential_scope(timestamp, service)
    canonical = tc3_canonical_request(host=host, payload=payload, content_type=content_type)
    signature = tc3_signature(
        secret_key, scope.split("/", 1)[0], service, tc3_string_to_sign(timestamp, scope, canonical)
    )
    return f"{ALGORITHM} Credential={secret_id}/{scope}, SignedHeaders={SIGNED_HEADERS}, Signature={signature}"


def tc3_request(
    body: Mapping[str, Any],
    *,
    secret_id: str,
    secret_key: str,
    region: str,
    host: str,
    action: str,
    version: str,
    timestamp: int,
    service: str = SERVICE,
) -> tuple[bytes, dict[str, str]]:
    """The JSON payload and the signed headers of one TC3 API call (`SendSms`, the voice channel's
    `SendTtsVoice`): the body as compact UTF-8 JSON, signed for `host` at `timestamp`."""
    payload = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    authorization = tc3_authorization(
        secret_id=secret_id, secret_key=secret_key, host=host, payload=payload, timestamp=timestamp, service=service
    )
    headers = {
        "Authorization": authorization,
        "Content-Type": CONTENT_TYPE,
        "Host": host,
        "X-TC-Action": action,
        "X-TC-Version": version,
        "X-TC-Timestamp": str(timestamp),
        "X-TC-Region": region,
    }
    return payload, headers


async def tc3_post(
    client: httpx.AsyncClient,
    endpoint: str,
    request: tuple[bytes, dict[str, str]],
    *,
    action: str,
    wait: float,
) -> Mapping[str, Any]:
    """POST a signed TC3 call; its answer's `Response` object (which may carry `Error`), or the
    `ChannelError` of no answer within `wait` seconds, a connection failure, or an HTTP error or body
    without `Response`."""
    payload, headers = request
    try:
        response = await client.post(endpoint, content=payload, headers=headers, timeout=wait)
    except httpx.TimeoutException as exc:
        message = f"tencent {action}: no answer within {wait:g}s ({type(exc).__name__})"
        raise ChannelError(message, code="timeout") from None
    except httpx.TransportError as exc:
        raise ChannelError(f"tencent {action}: {type(exc).__name__}", code="connection") from None
    answer = answer_json(response)
    result = answer.get("Response") if answer is not None else None
    if response.status_code != 200 or not isinstance(result, Mapping):
        status = response.status_code
        raise ChannelError(
            f"tencent {action}: HTTP {status}",
            permanent=400 <= status < 500 and status not in (408, 429),
            rate_limited=status == 429,
            code=f"http-{status}",
        )
    return result


def tencent_error(code: str, message: str = "", *, action: str = "SendSms") -> ChannelError:
    """The `ChannelError` for a `Response.Error.Code` or a per-number `SendStatusSet[].Code`.

    Rate-limited: `LimitExceeded.*` (per-number 30s/1h/day limits, the app's daily cap) and
    `RequestLimitExceeded*`. Transient: `InternalError*`, a bare `FailedOperation`, anything unknown.
    Permanent: credentials and signature (`AuthFailure.*`), `FailedOperation.*`, bad parameters.
    `action`: the API named in the message (the voice channel's `SendTtsVoice` shares these codes).
    """
    text = f"tencent {action}: {code}" + (f": {message[:200]}" if message else "")
    if code in _PERMANENT:
        return ChannelError(text, permanent=True, code=code)
    if code in _TRANSIENT or code.startswith(_TRANSIENT_PREFIXES):
        return ChannelError(text, code=code)
    if code.startswith(_RATE_LIMITED_PREFIXES):
        return ChannelError(text, rate_limited=True, code=code)
    if code.startswith(_PERMANENT_PREFIXES):
        return ChannelError(text, permanent=True, code=code)
    return ChannelError(text, code=code or "unknown")


def _number_failures(numbers: Sequence[str], statuses: Sequence[Any]) -> ChannelError | None:
    """None when every number is "Ok"; otherwise one error naming the numbers that failed, and why.

    Permanent only if every failure is; rate-limited if any number hit a rate limit; else transient.
    """
    entries = [s for s in statuses if isinstance(s, Mapping)]
    failed = [
        (str(s.get("PhoneNumber", "?")), str(s.get("Code") or "unknown")) for s in entries if s.get("Code") != "Ok"
    ]
    if len(entries) < len(numbers):  # Tencent answers each number in E.164, so count rather than match
        failed.append((f"{len(numbers) - len(entries)} number(s)", "no status"))
    if not failed:
        return None
    errors = [tencent_error(code) for _, code in failed]
    shown = ", ".join(f"{number} {code}" for number, code in failed[:10])
    more = f" and {len(failed) - 10} more" if len(failed) > 10 else ""
    text = f"tencent SendSms: {len(failed)} of {len(numbers)} numbers failed: {shown}{more}"
    if all(e.permanent for e in errors):
        return ChannelError(text, permanent=True, code=failed[0][1])
    rate_limited = [e for e in errors if e.rate_limited]
    code = (rate_limited[0] if rate_limited else next(e for e in errors if not e.permanent)).code
    return ChannelError(text, rate_limited=bool(rate_limited), code=code)


class TencentSms:
    """`SendSms` to at most `MAX_NUMBERS` numbers a request; a longer list goes in several."""

    def __init__(
        self, config: TencentSmsConfig, *, client: httpx.AsyncClient, timeout: float = 10.0, clock: Clock = time.time
    ) -> None:
        self.config = config
        self._client = client
        self._timeout = timeout
        self._clock = clock
        self._host = httpx.URL(config.endpoint).netloc.decode("ascii")

    async def send(self, numbers: Sequence[str], params: Mapping[str, str], text: str = "") -> None:
        """Sends batch after batch and stops at the first that is not wholly accepted."""
        for start in range(0, len(numbers), MAX_NUMBERS):
            try:
                await self._send_batch(numbers[start : start + MAX_NUMBERS], list(params.values()))
            except ChannelError as exc:
                if not start:
                    raise
                raise ChannelError(
                    f"{exc.message} (after {start} of {len(numbers)} numbers were accepted)",
                    permanent=exc.permanent,
                    rate_limited=exc.rate_limited,
                    retry_after=exc.retry_after,
                    code=exc.code,
                ) from None

    def _request(self, numbers: Sequence[str], values: list[str]) -> tuple[bytes, dict[str, str]]:
        body = {
            "PhoneNumberSet": list(numbers),
            "SmsSdkAppId": self.config.sdk_app_id,
            "SignName": self.config.sign_name,
            "TemplateId": self.config.template_id,
            "TemplateParamSet": values,
        }
        return tc3_request(
            body,
            secret_id=self.config.secret_id.get_secret_value(),
            secret_key=self.config.secret_key.get_secret_value(),
            region=self.config.region,
            host=self._host,
            action="SendSms",
            version=VERSION,
            timestamp=int(self._clock()),
        )

    async def _send_batch(self, numbers: Sequence[str], values: list[str]) -> None:
        result = await tc3_post(
            self._client, self.config.endpoint, self._request(numbers, values), action="SendSms", wait=self._timeout
        )
        error = result.get("Error")
        if isinstance(error, Mapping):
            raise tencent_error(str(error.get("Code") or ""), str(error.get("Message") or ""))
        statuses = result.get("SendStatusSet")
        failure = _number_failures(numbers, statuses if isinstance(statuses, list) else [])
        if failure is not None:
            raise failure
        log.debug("tencent SendSms: Ok for %d number(s), RequestId %s", len(numbers), result.get("RequestId"))

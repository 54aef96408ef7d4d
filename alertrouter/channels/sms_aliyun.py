"""Aliyun (Alibaba Cloud) SMS: `SendSms`, RPC style, Version 2017-05-25, signature v1 (HMAC-SHA1).

Signing (help.aliyun.com/document_detail/28839): every parameter except `Signature`, sorted by name,
name and value RFC 3986 percent-encoded (only A-Z a-z 0-9 - _ . ~ stay; a space is %20, never +),
joined as `k=v&k=v`; `StringToSign = "POST&%2F&" + pct(canonical_query)`;
`Signature = base64(HMAC-SHA1(AccessKeySecret + "&", StringToSign))`. The whole set goes form-encoded
in the POST body.

Answers: `Code == "OK"` is the only success. Business errors (`isv.*`) come with HTTP 200, request
errors (signature, key, timestamp) with HTTP 4xx, both with a `Code`; see `aliyun_error` for which
are worth retrying.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx

from alertrouter.channels.base import ChannelError
from alertrouter.channels.http import answer_json
from alertrouter.ruleset.channels import AliyunSmsConfig

__all__ = [
    "MAX_NUMBERS",
    "AliyunSms",
    "aliyun_canonical_query",
    "aliyun_error",
    "aliyun_params",
    "aliyun_signature",
    "aliyun_string_to_sign",
    "percent_encode",
]

log = logging.getLogger(__name__)

MAX_NUMBERS = 1000  # PhoneNumbers per SendSms request
VERSION = "2017-05-25"

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")

# Codes whose class the prefix rules below would get wrong, or that deserve saying so.
_RATE_LIMITED = frozenset({"isv.BUSINESS_LIMIT_CONTROL", "isv.DAY_LIMIT_CONTROL", "isv.MONTH_LIMIT_CONTROL"})
_TRANSIENT = frozenset(
    {
        "SignatureNonceUsed",  # a retry signs again with a fresh nonce
        "ServiceUnavailable",
        "InternalError",
        "isp.SYSTEM_ERROR",
        "isp.GATEWAY_ERROR",
    }
)
_PERMANENT = frozenset(
    {
        "isp.RAM_PERMISSION_DENY",  # the key's RAM user lacks AliyunDysmsFullAccess
        "SignatureDoesNotMatch",
        "IncompleteSignature",
        "InvalidTimeStamp.Expired",  # our clock is off by more than 15 minutes: fix NTP
        "InvalidTimeStamp.Format",
        "MissingParameter",
        "InvalidParameter",
        "InvalidVersion",
        "Forbidden.RAM",
    }
)
_PERMANENT_PREFIXES = ("isv.", "InvalidAccessKeyId", "InvalidAction", "Forbidden", "Missing", "Invalid")
_TRANSIENT_PREFIXES = ("isp.", "Throttling")
# Codes whose vendor message is dropped: Aliyun's SignatureDoesNotMatch quotes its string-to-sign,
# which holds the AccessKeyId.
_QUIET = ("SignatureDoesNotMatch", "IncompleteSignature", "InvalidAccessKeyId")

Clock = Callable[[], float]


def percent_encode(value: str) -> str:
    """RFC 3986 percent-encoding of the UTF-8 bytes, as Aliyun's signature v1 wants it.

    Equal to `quote_plus` with `+` -> `%20`, `*` -> `%2A` and `%7E` -> `~`, the recipe Aliyun documents.
    """
    return "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in value.encode("utf-8"))


def aliyun_canonical_query(params: Mapping[str, str]) -> str:
    return "&".join(
        f"{percent_encode(key)}={percent_encode(params[key])}" for key in sorted(params) if key != "Signature"
    )


def aliyun_string_to_sign(params: Mapping[str, str], *, method: str = "POST") -> str:
    """`"POST&%2F&" + pct(canonical query)`, with every parameter except `Signature`."""
    return f"{method}&{percent_encode('/')}&{percent_encode(aliyun_canonical_query(params))}"


def aliyun_signature(params: Mapping[str, str], access_key_secret: str, *, method: str = "POST") -> str:
    key = (access_key_secret + "&").encode("utf-8")
    digest = hmac.new(key, aliyun_string_to_sign(params, method=method).encode("utf-8"), hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


def aliyun_params(
    config: AliyunSmsConfig, numbers: Sequence[str], params: Mapping[str, str], *, timestamp: float, nonce: str
) -> dict[str, str]:
    """The unsigned `SendSms` parameters. Numbers lose a leading `+` (Aliyun wants `86138...`)."""
    return {
        "Action": "SendSms",
        "Version": VERSION,
        "RegionId": config.region_id,
        "PhoneNumbers": ",".join(n.removeprefix("+") for n in numbers),
        "SignName": config.sign_name,
        "TemplateCode": config.template_code,
        "TemplateParam": json.dumps(dict(params), ensure_ascii=False, separators=(",", ":")),
        "AccessKeyId": config.access_key_id.get_secret_value(),
        "Timestamp": datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "SignatureMethod": "HMAC-SHA1",
        "SignatureVersion": "1.0",
        "SignatureNonce": nonce,
        "Format": "JSON",
    }


def aliyun_error(code: str, message: str = "", *, status: int = 200, action: str = "SendSms") -> ChannelError:
    """The `ChannelError` for an answer whose `Code` is not OK (`code` empty when there was none).

    Rate-limited: the per-number flow control (BUSINESS_LIMIT_CONTROL, 1/min 5/h 10/day for codes,
    50/day for notices by default) and the console's day/month caps. Transient: `isp.*` system errors,
    `Throttling*` (API request rate), 5xx. Permanent: `isv.*` (template, sign name, number, account),
    key and signature errors, and any other 4xx. `action`: the API named in the message (the voice
    channel's `SingleCallByTts` shares these codes).
    """
    who = f"aliyun {action}: {code or f'HTTP {status}'}"
    text = f"{who}: {message[:200]}" if message and not code.startswith(_QUIET) else who
    if code in _RATE_LIMITED:
        return ChannelError(text, rate_limited=True, code=code)
    if code in _TRANSIENT:
        return ChannelError(text, code=code)
    if code in _PERMANENT:
        return ChannelError(text, permanent=True, code=code)
    if code.startswith(_TRANSIENT_PREFIXES):
        return ChannelError(text, code=code)
    if code.startswith(_PERMANENT_PREFIXES):
        return ChannelError(text, permanent=True, code=code)
    if status >= 500 or status in (408, 429) or status == 200:  # an unknown business code: retry, bounded
        return ChannelError(text, rate_limited=status == 429, code=code or f"http-{status}")
    return ChannelError(text, permanent=True, code=code or f"http-{status}")


async def aliyun_post(
    client: httpx.AsyncClient, endpoint: str, form: dict[str, str], access_key_secret: str, *, action: str, wait: float
) -> tuple[int, str, Mapping[str, Any]]:
    """Sign `form` and POST it to an Aliyun RPC endpoint (`SendSms`, the voice channel's `SingleCallByTts`):
    the HTTP status, the answer's `Code` and the answer; the `ChannelError` of no answer within `wait`
    seconds or of a connection failure."""
    form["Signature"] = aliyun_signature(form, access_key_secret)
    try:
        response = await client.post(endpoint, data=form, timeout=wait)
    except httpx.TimeoutException as exc:
        raise ChannelError(
            f"aliyun {action}: no answer within {wait:g}s ({type(exc).__name__})", code="timeout"
        ) from None
    except httpx.TransportError as exc:
        raise ChannelError(f"aliyun {action}: {type(exc).__name__}", code="connection") from None
    answer = answer_json(response) or {}
    return response.status_code, str(answer.get("Code") or ""), answer


class AliyunSms:
    """`SendSms` to at most `MAX_NUMBERS` numbers a request; a longer list goes in several."""

    def __init__(
        self,
        config: AliyunSmsConfig,
        *,
        client: httpx.AsyncClient,
        timeout: float = 10.0,
        clock: Clock = time.time,
        nonce: Callable[[], str] = lambda: uuid.uuid4().hex,
    ) -> None:
        self.config = config
        self._client = client
        self._timeout = timeout
        self._clock = clock
        self._nonce = nonce

    async def send(self, numbers: Sequence[str], params: Mapping[str, str], text: str = "") -> None:
        """Sends batch after batch and stops at the first refusal; its error says how far it got."""
        for start in range(0, len(numbers), MAX_NUMBERS):
            try:
                await self._send_batch(numbers[start : start + MAX_NUMBERS], params)
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

    async def _send_batch(self, numbers: Sequence[str], params: Mapping[str, str]) -> None:
        form = aliyun_params(self.config, numbers, params, timestamp=self._clock(), nonce=self._nonce())
        status, code, answer = await aliyun_post(
            self._client,
            self.config.endpoint,
            form,
            self.config.access_key_secret.get_secret_value(),
            action="SendSms",
            wait=self._timeout,
        )
        if status == 200 and code == "OK":
            log.debug("aliyun SendSms: OK for %d number(s), BizId %s", len(numbers), answer.get("BizId"))
            return
        raise aliyun_error(code, str(answer.get("Message") or ""), status=status)

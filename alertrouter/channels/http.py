"""What the webhook channels share: one POST, its failures as `ChannelError`, size fitting, secret-free logs."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus

import httpx

from alertrouter.channels.base import ChannelError

__all__ = [
    "REDACTED",
    "answer_json",
    "deliver",
    "encode_json",
    "fit_body",
    "http_status_error",
    "post_json",
    "protect_logs",
    "redact",
    "vendor_code",
]

REDACTED = "***"

_HEADERS = {"Content-Type": "application/json; charset=utf-8"}
# A query value in a logged URL: httpx logs `POST https://host/robot/send?access_token=...&sign=...`.
_QUERY_VALUE = re.compile(r"([?&][^=&#\s\"']+=)[^&#\s\"']+")
_HTTP_LOGGERS = ("httpx", "httpcore")
_INTEGER = re.compile(r"-?[0-9]+")


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with each secret replaced, also in the percent-encoded forms it takes inside a URL."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        for form in {secret, quote(secret, safe=""), quote_plus(secret)}:
            text = text.replace(form, REDACTED)
    return text


class _RedactingFilter(logging.Filter):
    """Rewrites httpx's request lines so neither query values nor registered secrets reach a handler."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: frozenset[str] = frozenset()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is the logging module's problem, not ours
            return True
        clean = redact(_QUERY_VALUE.sub(rf"\1{REDACTED}", message), self.secrets)
        if clean != message:
            record.msg, record.args = clean, None
        return True


_FILTER = _RedactingFilter()


def protect_logs(*secrets: str) -> None:
    """Keep channel credentials out of httpx's and httpcore's log records.

    httpx logs every request URL at INFO, and the credential of a DingTalk or WeCom robot is a query
    parameter (a Feishu one is the last path segment), so any DEBUG/INFO logging configuration would
    print it. `configure_logging` quiets httpx, but a test's caplog or an operator's own logging setup
    does not; this filter holds wherever the records go. Idempotent; secrets accumulate (one per robot).
    """
    _FILTER.secrets = _FILTER.secrets | {s for s in secrets if s}
    for name in _HTTP_LOGGERS:
        logging.getLogger(name).addFilter(_FILTER)  # addFilter ignores a filter already present


def encode_json(payload: Mapping[str, Any]) -> bytes:
    """Compact UTF-8 JSON: the form whose size the vendors' byte limits count (no \\uXXXX inflation)."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def fit_body(build: Callable[[int], tuple[bytes, int]], *, start: int, max_bytes: int, who: str) -> bytes:
    """The body `build(limit_bytes)` makes, shrinking the render limit until its measured size fits.

    `build` renders with the given limit and returns (body, size that the vendor limits). The first
    guess leaves room for the envelope, but JSON escaping (newlines, quotes) grows the text after
    rendering, so the size is measured and the limit lowered: by the overshoot, or in proportion when
    escaping inflates the text several times over (control characters: 6x), whichever keeps more
    text. Never returns an oversized body: it raises instead.
    """
    limit = start
    for _ in range(16):
        if limit <= 0:
            break
        body, size = build(limit)
        over = size - max_bytes
        if over <= 0:
            return body
        limit = min(limit - 1, max(limit - over, limit * max_bytes // size - 1))
    raise ChannelError(f"{who}: message cannot be made to fit in {max_bytes} bytes", permanent=True, code="too-long")


async def post_json(
    client: httpx.AsyncClient, url: str, *, body: bytes, who: str, timeout_s: float, secrets: Iterable[str] = ()
) -> httpx.Response:
    """POST `body`; a request that got no HTTP answer becomes a `ChannelError` free of URL and secrets.

    The httpx exception is not chained: it carries the request, and so the URL with its credential.
    """
    try:
        return await client.post(url, content=body, headers=_HEADERS, timeout=timeout_s)
    except httpx.TimeoutException as exc:
        raise ChannelError(f"{who}: no answer within {timeout_s:g}s ({type(exc).__name__})", code="timeout") from None
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        message = f"{who}: bad url ({type(exc).__name__}: {redact(str(exc), secrets)})"
        raise ChannelError(message, permanent=True, code="bad-url") from None
    except httpx.TransportError as exc:  # refused, reset, DNS, protocol errors: the vendor may be back soon
        message = f"{who}: {type(exc).__name__}: {redact(str(exc), secrets) or 'connection failed'}"
        raise ChannelError(message, code="connection") from None


def answer_json(response: httpx.Response) -> Mapping[str, Any] | None:
    """The answer's JSON object, or None when it is not one (a proxy's HTML page, a truncated body)."""
    try:
        data = response.json()
    except ValueError:
        return None
    return data if isinstance(data, Mapping) else None


def vendor_code(answer: Mapping[str, Any], *keys: str) -> int | None:
    """The first of `keys` present as an integer (vendors send `0` or `"0"`), or None."""
    for key in keys:
        value = answer.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            return value
        if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
            return int(value)
    return None


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def http_status_error(response: httpx.Response, who: str, vendor: ChannelError | None = None) -> ChannelError:
    """The error for a non-2xx answer.

    5xx, 408 and 429 are worth retrying (429 as rate-limited). Any other 4xx means the request itself
    is wrong and retrying cannot help, unless the vendor's own code in the body says it was a rate
    limit (Feishu answers its frequency limit with HTTP 400 and a code). 3xx: httpx does not follow
    redirects to a webhook, and a redirect means the configured URL is not the robot's.
    """
    status = response.status_code
    code = f"http-{status}"
    if status == 429:
        return ChannelError(f"{who}: HTTP 429", rate_limited=True, retry_after=_retry_after(response), code=code)
    if status >= 500 or status == 408:
        return ChannelError(f"{who}: HTTP {status}", code=code)
    if vendor is not None and vendor.rate_limited:
        return vendor
    if vendor is not None:
        return ChannelError(f"{vendor.message} (HTTP {status})", permanent=True, code=vendor.code or code)
    return ChannelError(f"{who}: HTTP {status}", permanent=True, code=code)


async def deliver(
    client: httpx.AsyncClient,
    url: str,
    *,
    body: bytes,
    who: str,
    timeout_s: float,
    classify: Callable[[Mapping[str, Any]], ChannelError | None],
    secrets: Iterable[str] = (),
) -> None:
    """POST and judge the answer; returns only when the vendor's own code says delivered.

    `classify` maps the vendor's JSON answer to None (delivered) or the error; chat robots answer
    HTTP 200 for most failures, so the status alone proves nothing. A 2xx without a JSON object is
    transient: something between us and the vendor (a proxy, a captive portal) answered instead.
    """
    response = await post_json(client, url, body=body, who=who, timeout_s=timeout_s, secrets=secrets)
    answer = answer_json(response)
    vendor = classify(answer) if answer is not None else None
    if not response.is_success:
        raise http_status_error(response, who, vendor)
    if answer is None:
        raise ChannelError(f"{who}: answer is not a JSON object (HTTP {response.status_code})", code="bad-answer")
    if vendor is not None:
        raise vendor

"""A generic HTTP SMS gateway: POST `{"to": [...], "text": ..., "params": {...}}` as JSON, bearer token.

Any 2xx is success. 429 is the gateway's rate limit (its `Retry-After`, seconds or an HTTP date, is
passed on); 5xx, 408 and no answer at all are transient; any other 4xx means the request or the token
is wrong, so retrying cannot help.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from email.utils import parsedate_to_datetime

import httpx

from alertrouter.channels.base import ChannelError
from alertrouter.ruleset.channels import GenericSmsConfig

__all__ = ["GenericSms", "generic_status_error", "retry_after_seconds"]

log = logging.getLogger(__name__)

Clock = Callable[[], float]


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """A `Retry-After` header as seconds from `now`: delta-seconds or an HTTP date; None if unusable."""
    if not value or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - now)


def generic_status_error(status: int, *, retry_after: float | None = None) -> ChannelError:
    text = f"sms gateway: HTTP {status}"
    code = f"http-{status}"
    if status == 429:
        return ChannelError(text, rate_limited=True, retry_after=retry_after, code=code)
    if status >= 500 or status == 408:
        return ChannelError(text, retry_after=retry_after, code=code)
    return ChannelError(text, permanent=True, code=code)


class GenericSms:
    """One POST for all numbers: a gateway takes the list as it is."""

    def __init__(
        self, config: GenericSmsConfig, *, client: httpx.AsyncClient, timeout: float = 10.0, clock: Clock = time.time
    ) -> None:
        self.config = config
        self._client = client
        self._timeout = timeout
        self._clock = clock

    async def send(self, numbers: Sequence[str], params: Mapping[str, str], text: str) -> None:
        body = json.dumps({"to": list(numbers), "text": text, "params": dict(params)}, ensure_ascii=False)
        headers = {"Content-Type": "application/json; charset=utf-8"}
        if self.config.token is not None and self.config.token.get_secret_value():
            headers["Authorization"] = f"Bearer {self.config.token.get_secret_value()}"
        try:
            response = await self._client.post(
                self.config.url, content=body.encode("utf-8"), headers=headers, timeout=self._timeout
            )
        except httpx.TimeoutException as exc:
            message = f"sms gateway: no answer within {self._timeout:g}s ({type(exc).__name__})"
            raise ChannelError(message, code="timeout") from None
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise ChannelError(f"sms gateway: bad url ({type(exc).__name__})", permanent=True, code="bad-url") from None
        except httpx.TransportError as exc:  # the URL is not named: it may carry a credential
            raise ChannelError(f"sms gateway: {type(exc).__name__}", code="connection") from None
        if response.is_success:
            log.debug("sms gateway: HTTP %d for %d number(s)", response.status_code, len(numbers))
            return
        retry_after = retry_after_seconds(response.headers.get("Retry-After"), self._clock())
        raise generic_status_error(response.status_code, retry_after=retry_after)

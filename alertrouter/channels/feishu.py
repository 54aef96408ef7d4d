"""Feishu / Lark custom bot: signed text messages kept well under the ~30 KB the bot accepts."""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote

import httpx

from alertrouter.channels.base import ChannelError, Mentions, Notification, Renderer, truncate_utf8
from alertrouter.channels.http import deliver, encode_json, fit_body, protect_logs, redact, vendor_code
from alertrouter.ruleset.channels import FeishuChannelConfig

__all__ = ["MAX_BODY_BYTES", "TEXT_LIMIT_BYTES", "FeishuChannel", "feishu_error", "feishu_sign"]

logger = logging.getLogger(__name__)

TEXT_LIMIT_BYTES = 20_000  # what the text is rendered to at most
MAX_BODY_BYTES = 29_000  # the bot refuses "about 30 KB"; the exact figure is unpublished, so keep a margin

# 19001 bad hook / params, 19021 sign or timestamp, 19022 IP not allowed, 19024 keyword missing.
_PERMANENT = frozenset({19001, 19021, 19022, 19024})
_RATE_LIMITED = frozenset({9499, 11232})


def feishu_sign(secret: str, timestamp_s: int) -> str:
    """The body's `sign`: base64(HMAC-SHA256(key=f"{timestamp_s}\\n{secret}", msg=b"")).

    Not DingTalk's algorithm turned around by accident: Feishu keys the HMAC with the string to sign
    and signs the empty message, with the timestamp in seconds.
    """
    key = f"{timestamp_s}\n{secret}".encode()
    return base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode("ascii")


def feishu_error(
    answer: Mapping[str, Any], *, who: str, retry_after: float | None = None, secrets: Iterable[str] = ()
) -> ChannelError | None:
    """None when the bot accepted the message (`code`, or the older `StatusCode`, is 0), else the error."""
    code = vendor_code(answer, "code", "StatusCode")
    if code == 0:
        return None
    if code is None:
        return ChannelError(f"{who}: answer without code", code="bad-answer")
    text = redact(str(answer.get("msg", answer.get("StatusMessage", ""))), secrets)[:200]
    message = f"{who}: code {code} {text}".rstrip()
    if code in _RATE_LIMITED:
        return ChannelError(message, rate_limited=True, retry_after=retry_after, code=str(code))
    return ChannelError(message, permanent=code in _PERMANENT, code=str(code))


def _mention_line(mentions: Mentions) -> str:
    """Feishu text mentions are `<at>` tags with an open_id / user_id; a custom bot cannot ping a mobile."""
    tags = [f'<at user_id="{user}"></at>' for user in mentions.user_ids]
    if mentions.all:
        tags.append('<at user_id="all">所有人</at>')
    return " ".join(tags)


class FeishuChannel:
    """One Feishu bot. The hook id at the end of the URL is its credential, so it is a secret.

    Mentions go in the text as `<at>` tags (user ids and all); mobile mentions cannot be expressed by a
    custom bot and are left out. The HTTP client belongs to the caller.
    """

    type: str = "feishu"

    def __init__(
        self,
        config: FeishuChannelConfig,
        *,
        client: httpx.AsyncClient,
        renderer: Renderer,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.name = config.name
        self._config = config
        self._client = client
        self._renderer = renderer
        self._clock = clock
        self._hook = config.hook.get_secret_value()
        self._secret = config.secret.get_secret_value() if config.secret is not None else ""
        self._who = f"Feishu bot {config.name}"
        protect_logs(self._hook, self._secret)

    async def send(self, notification: Notification) -> None:
        signing: dict[str, str] = {}
        if self._secret:
            timestamp = int(self._clock())
            signing = {"timestamp": str(timestamp), "sign": feishu_sign(self._secret, timestamp)}
        body = self._body(notification, signing)
        url = f"{self._config.url.rstrip('/')}/{quote(self._hook, safe='')}"
        secrets = (self._hook, self._secret, signing.get("sign", ""))

        def classify(answer: Mapping[str, Any]) -> ChannelError | None:
            block = self._config.rate_limit.block.total_seconds()
            return feishu_error(answer, who=self._who, retry_after=block, secrets=secrets)

        timeout = self._config.timeout.total_seconds()
        await deliver(
            self._client, url, body=body, who=self._who, timeout_s=timeout, classify=classify, secrets=secrets
        )
        logger.debug("%s: delivered %d bytes", self._who, len(body))

    async def aclose(self) -> None:
        """Nothing to release: the shared HTTP client is closed by whoever created it."""

    def _body(self, notification: Notification, signing: Mapping[str, str]) -> bytes:
        tail = _mention_line(notification.mentions)

        def build(limit: int) -> tuple[bytes, int]:
            rendered = truncate_utf8(self._renderer.render("feishu", "txt", notification, limit_bytes=limit), limit)
            text = f"{rendered.rstrip()}\n{tail}" if tail else rendered
            body = encode_json({**signing, "msg_type": "text", "content": {"text": text}})
            return body, len(body)

        # The text budget is far below the body limit, so the envelope only matters for huge mentions.
        envelope = len(encode_json({**signing, "msg_type": "text", "content": {"text": tail}}))
        start = min(TEXT_LIMIT_BYTES, MAX_BODY_BYTES - envelope)
        return fit_body(build, start=start, max_bytes=MAX_BODY_BYTES, who=self._who)

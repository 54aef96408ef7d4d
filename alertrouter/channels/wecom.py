"""WeCom (企业微信) group robot: markdown up to 4,096 bytes or text up to 2,048, with mentions that ping."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

import httpx

from alertrouter.channels.base import ChannelError, Notification, Renderer, truncate_utf8, utf8_len
from alertrouter.channels.http import deliver, encode_json, fit_body, protect_logs, redact, vendor_code
from alertrouter.ruleset.channels import WeComChannelConfig

__all__ = ["MARKDOWN_MAX_BYTES", "TEXT_MAX_BYTES", "WeComChannel", "wecom_error"]

logger = logging.getLogger(__name__)

MARKDOWN_MAX_BYTES = 4_096  # of `markdown.content`; errcode 40058 above it
TEXT_MAX_BYTES = 2_048  # of `text.content`

_PERMANENT = frozenset({93000, 40058})
_RATE_LIMITED = frozenset({45009})


def wecom_error(
    answer: Mapping[str, Any], *, who: str, retry_after: float | None = None, secrets: Iterable[str] = ()
) -> ChannelError | None:
    """None when WeCom accepted the message (`errcode` 0), else the error its answer means.

    That the robot answers exactly 45009 when over 20 messages a minute is unconfirmed, so any answer
    that talks about frequency is taken as the rate limit. Unknown codes are transient.
    """
    errcode = vendor_code(answer, "errcode")
    if errcode == 0:
        return None
    if errcode is None:
        return ChannelError(f"{who}: answer without errcode", code="bad-answer")
    errmsg = redact(str(answer.get("errmsg", "")), secrets)[:200]
    message = f"{who}: errcode {errcode} {errmsg}".rstrip()
    if errcode in _RATE_LIMITED or "freq" in errmsg.lower():
        return ChannelError(message, rate_limited=True, retry_after=retry_after, code=str(errcode))
    return ChannelError(message, permanent=errcode in _PERMANENT, code=str(errcode))


class WeComChannel:
    """One WeCom robot; the webhook key is its only credential, so it is treated as a secret.

    Markdown can mention people only by user id (`<@userid>` in the content); it has no way to ping a
    mobile number or everyone. A notification that must ping mobiles or @all is therefore sent as a
    text message, whose `mentioned_mobile_list` / `mentioned_list` can: one request (the robot's quota
    is 20 a minute) that really pings, at the cost of formatting. The HTTP client belongs to the caller.
    """

    type: str = "wecom"

    def __init__(self, config: WeComChannelConfig, *, client: httpx.AsyncClient, renderer: Renderer) -> None:
        self.name = config.name
        self._config = config
        self._client = client
        self._renderer = renderer
        self._key = config.key.get_secret_value()
        self._who = f"WeCom robot {config.name}"
        protect_logs(self._key)

    async def send(self, notification: Notification) -> None:
        body = self._body(notification)
        url = self._config.url
        url = f"{url}{'&' if '?' in url else '?'}key={quote(self._key, safe='')}"
        secrets = (self._key,)

        def classify(answer: Mapping[str, Any]) -> ChannelError | None:
            block = self._config.rate_limit.block.total_seconds()
            return wecom_error(answer, who=self._who, retry_after=block, secrets=secrets)

        timeout = self._config.timeout.total_seconds()
        await deliver(
            self._client, url, body=body, who=self._who, timeout_s=timeout, classify=classify, secrets=secrets
        )
        logger.debug("%s: delivered %d bytes", self._who, len(body))

    async def aclose(self) -> None:
        """Nothing to release: the shared HTTP client is closed by whoever created it."""

    def _body(self, notification: Notification) -> bytes:
        mentions = notification.mentions
        if self._config.msgtype == "markdown" and not (mentions.mobiles or mentions.all):
            return self._markdown(notification)
        return self._text(notification)

    def _markdown(self, notification: Notification) -> bytes:
        tail = " ".join(f"<@{user}>" for user in notification.mentions.user_ids)

        def build(limit: int) -> tuple[bytes, int]:
            rendered = truncate_utf8(self._renderer.render("wecom", "md", notification, limit_bytes=limit), limit)
            missing = " ".join(t for t in tail.split() if t not in rendered)  # the template may have them
            content = f"{rendered.rstrip()}\n{missing}" if missing else rendered
            return encode_json({"msgtype": "markdown", "markdown": {"content": content}}), utf8_len(content)

        start = MARKDOWN_MAX_BYTES - (utf8_len(tail) + 1 if tail else 0)
        return fit_body(build, start=start, max_bytes=MARKDOWN_MAX_BYTES, who=self._who)

    def _text(self, notification: Notification) -> bytes:
        mentions = notification.mentions
        text: dict[str, Any] = {}
        if mentions.user_ids or mentions.all:
            text["mentioned_list"] = [*mentions.user_ids, *(["@all"] if mentions.all else [])]
        if mentions.mobiles:
            text["mentioned_mobile_list"] = list(mentions.mobiles)

        def build(limit: int) -> tuple[bytes, int]:
            content = truncate_utf8(self._renderer.render("wecom", "txt", notification, limit_bytes=limit), limit)
            return encode_json({"msgtype": "text", "text": {"content": content, **text}}), utf8_len(content)

        return fit_body(build, start=TEXT_MAX_BYTES, max_bytes=TEXT_MAX_BYTES, who=self._who)

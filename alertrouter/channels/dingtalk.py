"""DingTalk custom robot: signed markdown or actionCard messages that fit 20,000 bytes and really ping."""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import quote, quote_plus, unquote

import httpx

from alertrouter.channels.base import ChannelError, Mentions, Notification, Renderer, truncate_utf8
from alertrouter.channels.http import deliver, encode_json, fit_body, protect_logs, redact, vendor_code
from alertrouter.ruleset.channels import DingTalkChannelConfig

__all__ = [
    "ACK_TITLE",
    "BUTTON_TITLE",
    "MAX_BODY_BYTES",
    "DingTalkChannel",
    "action_buttons",
    "dingtalk_error",
    "dingtalk_sign",
]

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 20_000  # the whole JSON body; errcode 460101 (older 101002) above it
TITLE_LIMIT_BYTES = 200  # what the conversation list shows; longer titles only get cut there
BUTTON_TITLE = "Details"  # the incident page (English; translated in the receiver's language)
ACK_TITLE = "Acknowledge"

_RATE_LIMITED = frozenset({130101})
_PERMANENT = frozenset({310000, 300001, 300005, 460101, 101002})


def dingtalk_sign(secret: str, timestamp_ms: int) -> str:
    """The `sign` query value of a signed robot ("加签"), already URL-encoded: put it in the query as is.

    base64(HMAC-SHA256(key=secret, msg=f"{timestamp_ms}\\n{secret}")) holds `+`, `/` and `=`; it must
    be percent-encoded exactly once, or DingTalk's check (which decodes once) fails with 310000.
    """
    string_to_sign = f"{timestamp_ms}\n{secret}".encode()
    digest = hmac.new(secret.encode(), string_to_sign, hashlib.sha256).digest()
    return quote_plus(base64.b64encode(digest).decode("ascii"))


def _is_permanent(errcode: int) -> bool:
    # 400xx / 400xxx: parameter, token and authorisation errors; resending the same request cannot help.
    return errcode in _PERMANENT or str(errcode).startswith("400")


def dingtalk_error(
    answer: Mapping[str, Any], *, who: str, retry_after: float | None = None, secrets: Iterable[str] = ()
) -> ChannelError | None:
    """None when DingTalk accepted the message (`errcode` 0), else the error its answer means.

    Unknown non-zero codes are transient: a mistaken retry costs one message of the robot's quota, a
    mistaken dead letter loses the alert.
    """
    errcode = vendor_code(answer, "errcode")
    if errcode == 0:
        return None
    errmsg = redact(str(answer.get("errmsg", "")), secrets)[:200]
    if errcode is None:
        return ChannelError(f"{who}: answer without errcode", code="bad-answer")
    message = f"{who}: errcode {errcode} {errmsg}".rstrip()
    if errcode in _RATE_LIMITED or "too fast" in errmsg.lower():
        return ChannelError(message, rate_limited=True, retry_after=retry_after, code=str(errcode))
    return ChannelError(message, permanent=_is_permanent(errcode), code=str(errcode))


def action_buttons(notification: Notification) -> list[dict[str, str]]:
    """An actionCard's `btns`: acknowledge, silence (when the message has those links), the incident."""
    words = notification.words
    silence = words.tr.gettext("Silence")
    if notification.silence_for:
        silence = words.tr.gettext("Silence %(duration)s") % {"duration": words.span(notification.silence_for)}
    links = (
        (words.tr.gettext("Acknowledge"), notification.ack_link),
        (silence, notification.silence_link),
        (words.tr.gettext("Details"), notification.link),
    )
    return [{"title": title, "actionURL": url} for title, url in links if url]


def _mention_line(mentions: Mentions) -> str:
    """DingTalk pings only people named in `at` whose `@<mobile>` / `@<userid>` is also in the text."""
    return " ".join(f"@{who}" for who in (*mentions.mobiles, *mentions.user_ids))


class DingTalkChannel:
    """One DingTalk robot.

    `msgtype: actionCard` sends the acknowledge, silence and incident links as buttons (plain links:
    a webhook robot cannot receive clicks), and leaves the acknowledge/silence links out of the card's
    text. DingTalk documents `at` for text and markdown messages only, so a notification that must ping
    someone, or has no link for a button, is sent as markdown instead, its links written in the text:
    a ping is worth more than a button. A `markdown` robot always gets markdown. The HTTP client
    belongs to the caller, who closes it.
    """

    type: str = "dingtalk"

    def __init__(
        self,
        config: DingTalkChannelConfig,
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
        self._token = config.access_token.get_secret_value()
        self._secret = config.secret.get_secret_value() if config.secret is not None else ""
        self._who = f"DingTalk robot {config.name}"
        protect_logs(self._token, self._secret)

    async def send(self, notification: Notification) -> None:
        body = self._body(notification)
        url, sign = self._signed_url()
        secrets = (self._token, self._secret, sign, unquote(sign))

        def classify(answer: Mapping[str, Any]) -> ChannelError | None:
            block = self._config.rate_limit.block.total_seconds()
            return dingtalk_error(answer, who=self._who, retry_after=block, secrets=secrets)

        timeout = self._config.timeout.total_seconds()
        await deliver(
            self._client, url, body=body, who=self._who, timeout_s=timeout, classify=classify, secrets=secrets
        )
        logger.debug("%s: delivered %d bytes", self._who, len(body))

    async def aclose(self) -> None:
        """Nothing to release: the shared HTTP client is closed by whoever created it."""

    def _signed_url(self) -> tuple[str, str]:
        """The robot URL with its query built by hand, so the already-encoded sign is not encoded again."""
        query = f"access_token={quote(self._token, safe='')}"
        sign = ""
        if self._secret:
            timestamp_ms = int(self._clock() * 1000)
            sign = dingtalk_sign(self._secret, timestamp_ms)
            query += f"&timestamp={timestamp_ms}&sign={sign}"
        url = self._config.url
        return f"{url}{'&' if '?' in url else '?'}{query}", sign

    def _body(self, notification: Notification) -> bytes:
        mentions = notification.mentions
        msgtype = self._config.msgtype
        buttons = action_buttons(notification)
        if msgtype == "actionCard" and (mentions or not buttons):
            msgtype = "markdown"
        title = truncate_utf8(self._renderer.title(notification, limit_bytes=TITLE_LIMIT_BYTES), TITLE_LIMIT_BYTES)
        tail = _mention_line(mentions)
        shown = notification  # what the text is rendered from: on a card, the action links are buttons
        if msgtype == "actionCard":
            shown = replace(notification, ack_link=None, silence_link=None)

        def build(limit: int) -> tuple[bytes, int]:
            rendered = self._renderer.render("dingtalk", "md", shown, limit_bytes=limit)
            text = self._text(truncate_utf8(rendered, limit), tail)
            body = encode_json(self._payload(msgtype, title, text, notification, buttons))
            return body, len(body)

        envelope = len(encode_json(self._payload(msgtype, title, self._text("", tail), notification, buttons)))
        return fit_body(build, start=MAX_BODY_BYTES - envelope, max_bytes=MAX_BODY_BYTES, who=self._who)

    def _text(self, rendered: str, mention_line: str) -> str:
        """The rendered text, then the robot's keyword if the text lacks it, then the `@` line."""
        parts = [rendered.rstrip()] if rendered.strip() else []
        keyword = self._config.keyword
        if keyword and keyword not in rendered:
            parts.append(keyword)
        missing = " ".join(who for who in mention_line.split() if who not in rendered)  # the template may have them
        if missing:
            parts.append(missing)
        return "\n\n".join(parts)

    @staticmethod
    def _payload(
        msgtype: str, title: str, text: str, notification: Notification, buttons: list[dict[str, str]]
    ) -> dict[str, Any]:
        if msgtype == "actionCard":  # btnOrientation "0": buttons stacked, so long titles are not cut
            card = {"title": title, "text": text, "btnOrientation": "0", "btns": buttons}
            return {"msgtype": "actionCard", "actionCard": card}
        mentions = notification.mentions
        return {
            "msgtype": "markdown",
            "markdown": {"title": title, "text": text},
            "at": {"atMobiles": list(mentions.mobiles), "atUserIds": list(mentions.user_ids), "isAtAll": mentions.all},
        }

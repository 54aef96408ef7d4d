"""A DingTalk custom robot that checks what the real one checks: token, signature, keyword, size, rate.

Every answer is HTTP 200 with an `errcode`, as DingTalk's. Checks run in this order: token (300001),
signature and timestamp (310000), the rate limit (130101, then blocked), body size (460101), shape
(40035: also each actionCard button's title and URL), keyword (310000). Only authenticated requests
count against the rate limit.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from support.fakes.server import FakeVendor, Received, Reply

__all__ = ["BAD_REQUEST", "FakeDingTalk", "Ping"]

MAX_BODY_BYTES = 20_000
# The fake's answer to a body whose `msgtype` does not match its content key, or lacks a required
# field. DingTalk's own answer for that is not documented; 40035 is its "missing/invalid parameter".
BAD_REQUEST = 40035

_REQUIRED = {
    "text": ("content",),
    "markdown": ("title", "text"),
    "actionCard": ("title", "text"),
    "link": ("title", "text", "messageUrl"),
    "feedCard": ("links",),
}
_TEXT_FIELD = {"text": "content", "markdown": "text", "actionCard": "text", "link": "text"}
_PINGS = ("text", "markdown")  # DingTalk documents `at` for these two only


@dataclass(frozen=True)
class Ping:
    """Who one accepted message actually notified: named in `at` AND written as `@x` in the text."""

    token: str
    mobiles: tuple[str, ...]
    user_ids: tuple[str, ...]
    all: bool


def _answer(errcode: int, errmsg: str) -> Reply:
    return Reply(200, {"errcode": errcode, "errmsg": errmsg})


class FakeDingTalk(FakeVendor):
    """`tokens`: access_token -> signing secret (None for a robot that does not sign).

    `keywords`: access_token -> the keyword that robot requires. `clock` drives the rate limit (monotonic);
    `wall_clock` is what signed timestamps are compared with, within `max_clock_skew` seconds.
    """

    name = "dingtalk"

    def __init__(
        self,
        tokens: Mapping[str, str | None],
        keywords: Mapping[str, str] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        limit: int = 20,
        per: float = 60.0,
        block: float = 600.0,
        max_clock_skew: float = 3600.0,
    ) -> None:
        super().__init__(clock=clock, limit=limit, per=per, block=block)
        self.tokens = dict(tokens)
        self.keywords = dict(keywords or {})
        self.wall_clock = wall_clock
        self.max_clock_skew = max_clock_skew
        self.pings: list[Ping] = []

    def handle(self, request: Received) -> Reply:
        token = request.query.get("access_token", "")
        if token not in self.tokens:
            return _answer(300001, "token is not exist")
        secret = self.tokens[token]
        if secret is not None:
            problem = self._check_sign(secret, request.query)
            if problem:
                return _answer(310000, problem)
        verdict = self.rate.hit(token)
        if verdict != "ok":
            return _answer(130101, "send too fast, exceed 20 times per minute")
        if len(request.body) > MAX_BODY_BYTES:
            return _answer(460101, "message too long, exceed 20000 bytes")
        try:
            body = json.loads(request.body)
        except ValueError:
            return _answer(BAD_REQUEST, "缺少参数 json")
        problem = _shape_problem(body)
        if problem:
            return _answer(BAD_REQUEST, problem)
        msgtype = body["msgtype"]
        text = str(body[msgtype].get(_TEXT_FIELD.get(msgtype, ""), ""))
        keyword = self.keywords.get(token)
        if keyword and keyword not in text:
            return _answer(310000, "keywords not in content")
        if msgtype in _PINGS:
            self._record_ping(token, body.get("at") or {}, text)
        return _answer(0, "ok")

    def _check_sign(self, secret: str, query: Mapping[str, str]) -> str | None:
        """DingTalk's check: the sign as decoded once from the query equals base64(HMAC(secret, ts\\nsecret))."""
        timestamp, sign = query.get("timestamp", ""), query.get("sign", "")
        if not timestamp.isdigit() or not sign:
            return "sign not match, more: [timestamp or sign missing]"
        if abs(self.wall_clock() * 1000 - int(timestamp)) > self.max_clock_skew * 1000:
            return "invalid timestamp"
        digest = hmac.new(secret.encode(), f"{timestamp}\n{secret}".encode(), hashlib.sha256).digest()
        expected = base64.b64encode(digest).decode()
        if not hmac.compare_digest(expected, sign):
            return "sign not match"
        return None

    def _record_ping(self, token: str, at: Mapping[str, Any], text: str) -> None:
        mobiles = tuple(m for m in at.get("atMobiles") or [] if f"@{m}" in text)
        user_ids = tuple(u for u in at.get("atUserIds") or [] if f"@{u}" in text)
        self.pings.append(Ping(token, mobiles, user_ids, bool(at.get("isAtAll"))))

    def _accepts(self, reply: Reply) -> bool:
        return isinstance(reply.body, dict) and reply.body.get("errcode") == 0

    def messages(self, token: str) -> list[dict[str, Any]]:
        """The bodies the robot `token` accepted (what the group saw), oldest first."""
        return [r.json() for r in list(self.accepted) if r.query.get("access_token") == token]


def _shape_problem(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "body is not a JSON object"
    msgtype = body.get("msgtype")
    if msgtype not in _REQUIRED:
        return f"invalid msgtype {msgtype!r}"
    content = body.get(msgtype)
    if not isinstance(content, dict):
        return f"msgtype {msgtype} but no {msgtype!r} object in the body"
    missing = [f for f in _REQUIRED[msgtype] if not content.get(f)]
    if msgtype == "actionCard" and not (content.get("btns") or content.get("singleURL")):
        missing.append("btns or singleURL")
    if missing:
        return f"missing {', '.join(missing)}"
    return _card_problem(content) if msgtype == "actionCard" else None


def _card_problem(card: dict[str, Any]) -> str | None:
    """An actionCard's buttons: each a title and an http(s) `actionURL`; `btnOrientation` "0" or "1"."""
    btns = card.get("btns")
    if btns is not None:
        if not isinstance(btns, list) or not btns:
            return "btns must be a non-empty list"
        for btn in btns:
            if not isinstance(btn, dict) or not btn.get("title") or not btn.get("actionURL"):
                return "each of btns needs title and actionURL"
            if not str(btn["actionURL"]).startswith(("http://", "https://")):
                return "actionURL must be an http(s) URL"
    if card.get("btnOrientation", "0") not in ("0", "1"):
        return "btnOrientation must be 0 or 1"
    return None

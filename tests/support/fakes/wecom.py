"""A WeCom group robot: key check (93000), content size per msgtype (40058), 20 a minute (45009, blocked).

Every answer is HTTP 200 with an `errcode`. Only requests with a known key count against the rate limit.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from support.fakes.server import FakeVendor, Received, Reply

__all__ = ["BAD_JSON", "EMPTY_CONTENT", "INVALID_MSGTYPE", "FakeWeCom", "WeComPing"]

MAX_CONTENT_BYTES = {"text": 2048, "markdown": 4096, "markdown_v2": 4096}
# Answers the fake gives malformed bodies (WeCom's codes: 40008 invalid message type, 44004 empty
# content; 40035 invalid parameter is the fake's pick for a body that is not JSON).
INVALID_MSGTYPE = 40008
EMPTY_CONTENT = 44004
BAD_JSON = 40035

_USER_TAG = re.compile(r"<@([^>\s]+)>")


@dataclass(frozen=True)
class WeComPing:
    key: str
    user_ids: tuple[str, ...]
    mobiles: tuple[str, ...]


def _answer(errcode: int, errmsg: str) -> Reply:
    return Reply(200, {"errcode": errcode, "errmsg": errmsg})


class FakeWeCom(FakeVendor):
    """`keys`: the webhook keys that exist. Markdown mentions are `<@userid>` tags; markdown_v2 has none."""

    name = "wecom"

    def __init__(
        self,
        keys: Iterable[str],
        *,
        clock: Callable[[], float] = time.monotonic,
        limit: int = 20,
        per: float = 60.0,
        block: float = 600.0,
    ) -> None:
        super().__init__(clock=clock, limit=limit, per=per, block=block)
        self.keys = set(keys)
        self.pings: list[WeComPing] = []

    def handle(self, request: Received) -> Reply:
        key = request.query.get("key", "")
        if key not in self.keys:
            return _answer(
                93000, "invalid webhook url, hint: [1700000000_1_abc], more info at https://open.work.weixin.qq.com"
            )
        if self.rate.hit(key) != "ok":
            return _answer(45009, "api freq out of limit")
        try:
            body = json.loads(request.body)
        except ValueError:
            return _answer(BAD_JSON, "invalid json")
        msgtype = body.get("msgtype") if isinstance(body, dict) else None
        if msgtype not in MAX_CONTENT_BYTES or not isinstance(body.get(msgtype), dict):
            return _answer(INVALID_MSGTYPE, "invalid message type")
        content = body[msgtype].get("content")
        if not isinstance(content, str) or not content:
            return _answer(EMPTY_CONTENT, "empty content")
        if len(content.encode("utf-8")) > MAX_CONTENT_BYTES[msgtype]:
            return _answer(40058, f"content exceed max length {MAX_CONTENT_BYTES[msgtype]}")
        self._record_ping(key, msgtype, body[msgtype])
        return _answer(0, "ok")

    def _record_ping(self, key: str, msgtype: str, message: dict[str, Any]) -> None:
        if msgtype == "text":
            users = tuple(message.get("mentioned_list") or [])
            mobiles = tuple(message.get("mentioned_mobile_list") or [])
        elif msgtype == "markdown":
            users, mobiles = tuple(_USER_TAG.findall(message["content"])), ()
        else:
            users, mobiles = (), ()
        if users or mobiles:
            self.pings.append(WeComPing(key, users, mobiles))

    def _accepts(self, reply: Reply) -> bool:
        return isinstance(reply.body, dict) and reply.body.get("errcode") == 0

    def messages(self, key: str) -> list[dict[str, Any]]:
        """The bodies the robot `key` accepted, oldest first."""
        return [r.json() for r in list(self.accepted) if r.query.get("key") == key]

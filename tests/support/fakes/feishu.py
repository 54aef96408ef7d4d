"""A Feishu custom bot: hook check (19001), body signature (19021), size (~30 KB) and rate (9499).

Signing is Feishu's, not DingTalk's: key = f"{timestamp_s}\\n{secret}", HMAC-SHA256 of the empty message,
base64; `timestamp` and `sign` come in the JSON body. Rate: 100 a minute and 5 a second per bot.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from support.fakes.server import FakeVendor, RateWindow, Received, Reply

__all__ = ["BAD_BODY", "HOOK_PATH", "MAX_BODY_BYTES", "TOO_LARGE", "FakeFeishu"]

HOOK_PATH = "/open-apis/bot/v2/hook/"
MAX_BODY_BYTES = 30_000
# Codes the fake picks where Feishu's are not published: a body it cannot use, and one over the size
# limit (answered with HTTP 400, as Feishu's gateway refuses big bodies before the bot sees them).
BAD_BODY = 19002
TOO_LARGE = 19003


def _answer(code: int, msg: str, status: int = 200) -> Reply:
    return Reply(status, {"code": code, "data": {}, "msg": msg})


class FakeFeishu(FakeVendor):
    """`hooks`: hook id -> signing secret (None for an unsigned bot).

    `clock` drives the rate limits (monotonic), `wall_clock` the timestamp check. `burst` is the
    per-second limit (None to switch it off in tests that send quickly on purpose).
    """

    name = "feishu"

    def __init__(
        self,
        hooks: Mapping[str, str | None],
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        limit: int = 100,
        per: float = 60.0,
        block: float = 60.0,
        burst: int | None = 5,
        max_clock_skew: float = 3600.0,
    ) -> None:
        super().__init__(clock=clock, limit=limit, per=per, block=block)
        self.hooks = dict(hooks)
        self.wall_clock = wall_clock
        self.max_clock_skew = max_clock_skew
        self.burst = RateWindow(burst, 1.0, 0.0, clock) if burst is not None else None

    def handle(self, request: Received) -> Reply:
        hook = request.path.removeprefix(HOOK_PATH) if request.path.startswith(HOOK_PATH) else ""
        if hook not in self.hooks:
            return _answer(19001, "param invalid: incoming webhook access token invalid")
        if len(request.body) > MAX_BODY_BYTES:
            return _answer(TOO_LARGE, "request body too large", status=400)
        try:
            body = json.loads(request.body)
        except ValueError:
            return _answer(BAD_BODY, "params error, body is not json")
        if not isinstance(body, dict):
            return _answer(BAD_BODY, "params error")
        secret = self.hooks[hook]
        if secret is not None and not self._signed(secret, body):
            return _answer(19021, "sign match fail or timestamp is not within one hour from current time")
        # The per-second check first, so a request it refuses is not also counted against the minute.
        if (self.burst is not None and self.burst.hit(hook) != "ok") or self.rate.hit(hook) != "ok":
            return _answer(9499, "too many request")
        if body.get("msg_type") != "text" or not _text(body):
            return _answer(BAD_BODY, "params error, msg_type text needs content.text")
        return _answer(0, "success")

    def _signed(self, secret: str, body: Mapping[str, Any]) -> bool:
        timestamp, sign = str(body.get("timestamp", "")), body.get("sign")
        if not timestamp.isdigit() or not isinstance(sign, str):
            return False
        if abs(self.wall_clock() - int(timestamp)) > self.max_clock_skew:
            return False
        key = f"{timestamp}\n{secret}".encode()
        expected = base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()
        return hmac.compare_digest(expected, sign)

    def _accepts(self, reply: Reply) -> bool:
        return isinstance(reply.body, dict) and reply.body.get("code") == 0

    def messages(self, hook: str) -> list[dict[str, Any]]:
        """The bodies the bot `hook` accepted, oldest first."""
        return [r.json() for r in list(self.accepted) if r.path == HOOK_PATH + hook]


def _text(body: Mapping[str, Any]) -> str:
    content = body.get("content")
    text = content.get("text") if isinstance(content, dict) else None
    return text if isinstance(text, str) else ""

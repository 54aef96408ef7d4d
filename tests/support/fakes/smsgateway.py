"""A fake generic SMS gateway: `POST {"to": [...], "text": ..., "params": {...}}` with a bearer token.

401 for a missing or wrong token, 400 for a body of the wrong shape, 429 with `Retry-After` when a
number goes over its rate, 200 `{"id": ...}` otherwise. `sent` holds (number, text) per delivery.
"""

from __future__ import annotations

import hmac
import threading
import time
import uuid
from collections.abc import Callable

from support.fakes.server import FakeVendor, Received, Reply

__all__ = ["FakeSmsGateway"]


class FakeSmsGateway(FakeVendor):
    name = "sms-gateway"

    def __init__(
        self,
        token: str | None = None,
        *,
        clock: Callable[[], float] = time.time,
        per_number_limit: int = 50,
        per_number_window: float = 3600.0,
        block: float = 60.0,
    ) -> None:
        super().__init__(clock=clock, limit=per_number_limit, per=per_number_window, block=block)
        self.token = token
        self.sent: list[tuple[str, str]] = []
        self._guard = threading.Lock()

    def handle(self, request: Received) -> Reply:
        if request.method != "POST":
            return Reply(405, {"error": "method not allowed"})
        if self.token is not None:
            given = {k.lower(): v for k, v in request.headers.items()}.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
                return Reply(401, {"error": "unauthorized"})
        try:
            body = request.json()
        except ValueError:
            return Reply(400, {"error": "body is not JSON"})
        numbers = body.get("to") if isinstance(body, dict) else None
        if (
            not isinstance(numbers, list)
            or not numbers
            or not all(isinstance(n, str) and n for n in numbers)
            or not isinstance(body.get("text"), str)
            or not isinstance(body.get("params", {}), dict)
        ):
            return Reply(400, {"error": "expected {to: [str], text: str, params: {}}"})
        for number in numbers:
            if self.rate.hit(number) != "ok":
                return Reply(429, {"error": f"rate limit for {number}"}, {"Retry-After": str(int(self.rate.block))})
        with self._guard:
            self.sent.extend((n, body["text"]) for n in numbers)
        return Reply(200, {"id": uuid.uuid4().hex})

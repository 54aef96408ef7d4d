"""The part every fake vendor shares: a threaded loopback HTTP server that records every request,
a per-robot rate limit with the vendor's block, and a script of faults (5xx, hang, connection reset).

A vendor fake subclasses `FakeVendor` and implements `handle(request) -> Reply`. Tests read
`received` (every request, faults included), `accepted` (what the vendor would have delivered) and `refused`
(every other request, once answered: a request still being handled is in neither).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qsl, urlsplit

__all__ = ["FakeVendor", "RateWindow", "Received", "Reply"]

Clock = Callable[[], float]


@dataclass
class Received:
    at: float
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def form(self) -> dict[str, str]:
        return dict(parse_qsl(self.body.decode(), keep_blank_values=True))


@dataclass
class Reply:
    status: int = 200
    body: Any = field(default_factory=dict)  # JSON-encoded unless bytes
    headers: dict[str, str] = field(default_factory=dict)


class RateWindow:
    """`limit` messages per `per` seconds per key; going over blocks the key for `block` seconds, and
    every request during the block is refused (DingTalk's 20/min and 10-minute block)."""

    def __init__(self, limit: int = 20, per: float = 60.0, block: float = 600.0, clock: Clock = time.monotonic):
        self.limit, self.per, self.block, self.clock = limit, per, block, clock
        self._hits: dict[str, deque[float]] = defaultdict(deque)
        self._blocked_until: dict[str, float] = {}
        self.violations: list[tuple[str, float]] = []  # (key, when) each time the limit was exceeded
        self._lock = threading.Lock()

    def hit(self, key: str) -> str:
        """'ok', 'too_fast' (this request exceeded the limit and started a block) or 'blocked'."""
        with self._lock:
            now = self.clock()
            if self._blocked_until.get(key, 0.0) > now:
                return "blocked"
            hits = self._hits[key]
            while hits and hits[0] <= now - self.per:
                hits.popleft()
            if len(hits) >= self.limit:
                self._blocked_until[key] = now + self.block
                self.violations.append((key, now))
                return "too_fast"
            hits.append(now)
            return "ok"

    def blocked(self, key: str) -> bool:
        return self._blocked_until.get(key, 0.0) > self.clock()


class FakeVendor:
    """Base of the fakes: start()/stop() (or `with`), `url`, `received`, `accepted`, and faults.

    Faults: `fail_next("500", "timeout", "reset", ...)` for the next requests, or `down("503")` until
    `up()`. A "timeout" holds the request `hang` seconds (longer than the client waits) then answers 504.
    """

    name = "fake"

    def __init__(self, *, clock: Clock = time.monotonic, limit: int = 20, per: float = 60.0, block: float = 600.0):
        self.clock = clock
        self.rate = RateWindow(limit, per, block, clock)
        self.received: list[Received] = []
        self.accepted: list[Received] = []
        self.refused: list[Received] = []
        self.hang = 30.0
        self._script: deque[str] = deque()
        self._down: str | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- what subclasses implement -------------------------------------------------------------
    def handle(self, request: Received) -> Reply:
        raise NotImplementedError

    # -- faults --------------------------------------------------------------------------------
    def fail_next(self, *behaviours: str) -> None:
        with self._lock:
            self._script.extend(behaviours)

    def down(self, behaviour: str = "503") -> None:
        self._down = behaviour

    def up(self) -> None:
        self._down = None

    def _fault(self) -> str | None:
        with self._lock:
            if self._script:
                return self._script.popleft()
        return self._down

    # -- server --------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        vendor = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                request = Received(
                    at=vendor.clock(),
                    method=self.command,
                    path=parts.path,
                    query=dict(parse_qsl(parts.query, keep_blank_values=True)),
                    headers={k: v for k, v in self.headers.items()},
                    body=body,
                )
                with vendor._lock:
                    vendor.received.append(request)
                fault = vendor._fault()
                if fault is not None:
                    with vendor._lock:
                        vendor.refused.append(request)
                if fault == "reset":
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.close_connection = True
                    self.connection.close()
                    return
                if fault == "timeout":
                    vendor._stopping.wait(vendor.hang)
                    reply = Reply(504, {"error": "gateway timeout"})
                elif fault is not None:
                    reply = Reply(int(fault), {"error": f"injected {fault}"})
                else:
                    reply = vendor.handle(request)
                    with vendor._lock:
                        ok = reply.status == 200 and vendor._accepts(reply)
                        (vendor.accepted if ok else vendor.refused).append(request)
                data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.headers.get("Content-Type", "application/json"))
                    for k, v in reply.headers.items():
                        if k != "Content-Type":
                            self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

            do_POST = _serve
            do_GET = _serve
            do_PUT = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        server = self._server
        self._thread = threading.Thread(
            target=lambda: server.serve_forever(poll_interval=0.05), name=f"fake-{self.name}", daemon=True
        )
        self._thread.start()
        return self

    def _accepts(self, reply: Reply) -> bool:
        """Whether a 200 reply means delivered; vendors answering 200 with an error code override this."""
        return True

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

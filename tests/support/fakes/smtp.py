"""A local SMTP sink (aiosmtpd in its own thread) with optional AUTH, STARTTLS or implicit TLS.

Messages arrive parsed as `email.message.EmailMessage`s in `messages` (their envelopes in
`envelopes`). Faults are scripted: `fail_next("451 4.3.0 Try again later")` answers the next DATA
with that reply, `fail_next("reset")` resets the connection there instead and `fail_next("timeout")`
holds it `hang` seconds (longer than the client waits), the words `FakeVendor` uses for the same
faults; `refuse(address)` answers RCPT TO for that address with a 550. TLS uses a throwaway
self-signed certificate made by `self_signed_cert()` (with the `openssl` command), valid for
127.0.0.1 and localhost; `client_context()` is an SSL context that trusts it. With `users` and no
TLS, aiosmtpd warns that AUTH without TLS is unsafe (a UserWarning): tests of that case filter it.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import struct
import subprocess
import threading
from collections import deque
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path
from typing import Any, Literal, cast

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session

__all__ = ["Delivery", "FakeSmtp", "TlsFiles", "openssl_available", "self_signed_cert"]

Security = Literal["none", "starttls", "tls"]


@dataclass(frozen=True)
class TlsFiles:
    cert: Path
    key: Path


@dataclass(frozen=True)
class Delivery:
    mail_from: str
    rcpt_tos: tuple[str, ...]


def openssl_available() -> bool:
    return shutil.which("openssl") is not None


def self_signed_cert(directory: Path) -> TlsFiles:
    """A certificate and key for CN=localhost with subjectAltName localhost and 127.0.0.1 (2 days)."""
    files = TlsFiles(directory / "cert.pem", directory / "key.pem")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(files.key),
            "-out",
            str(files.cert),
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return files


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class _Handler:
    def __init__(self, sink: FakeSmtp) -> None:
        self.sink = sink

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, rcpt_options: list[str]
    ) -> str:
        reply = self.sink.refused.get(address.lower())
        if reply is not None:
            return reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        with self.sink.lock:
            scripted = self.sink.script.popleft() if self.sink.script else None
        if scripted == "reset":  # after AUTH and the whole message: the worst moment to lose the line
            assert server.transport is not None
            sock = server.transport.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            cast(asyncio.Transport, server.transport).abort()
            return "421 4.4.2 connection reset"  # written to nobody: the transport is gone
        if scripted == "timeout":
            await asyncio.sleep(self.sink.hang)
            return "451 4.4.2 timed out"
        if scripted is not None:
            return scripted
        data = envelope.original_content or b""
        message = BytesParser(policy=policy.default).parsebytes(data)
        assert isinstance(message, EmailMessage)
        with self.sink.lock:
            self.sink.messages.append(message)
            self.sink.envelopes.append(Delivery(str(envelope.mail_from), tuple(envelope.rcpt_tos)))
        return "250 2.0.0 Message accepted for delivery"


class FakeSmtp:
    """`users`: username -> password; when given, AUTH is required (also without TLS, for tests)."""

    def __init__(
        self, *, security: Security = "none", users: dict[str, str] | None = None, tls: TlsFiles | None = None
    ) -> None:
        if security != "none" and tls is None:
            raise ValueError("STARTTLS and implicit TLS need a certificate (self_signed_cert)")
        self.security = security
        self.users = users or {}
        self.tls = tls
        self.host = "127.0.0.1"
        self.port = 0
        self.messages: list[EmailMessage] = []
        self.envelopes: list[Delivery] = []
        self.logins: list[str] = []
        self.failed_logins = 0
        self.refused: dict[str, str] = {}
        self.script: deque[str] = deque()
        self.hang = 30.0
        self.lock = threading.Lock()
        self._controller: Controller | None = None

    def fail_next(self, *replies: str) -> None:
        """The next DATA commands are answered with these replies, e.g. "451 4.3.0 Try again later", or
        meet a fault: "reset" (the connection reset), "timeout" (no answer for `hang` seconds)."""
        with self.lock:
            self.script.extend(replies)

    def refuse(self, address: str, reply: str = "550 5.1.1 Recipient address rejected: User unknown") -> None:
        self.refused[address.lower()] = reply

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts this sink's certificate (and verifies the host name)."""
        assert self.tls is not None
        return ssl.create_default_context(cafile=str(self.tls.cert))

    def _server_context(self) -> ssl.SSLContext:
        assert self.tls is not None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(self.tls.cert), str(self.tls.key))
        return context

    def _authenticate(
        self, server: SMTP, session: Session, envelope: Envelope, mechanism: str, auth_data: Any
    ) -> AuthResult:
        if isinstance(auth_data, LoginPassword):
            user, password = auth_data.login.decode(), auth_data.password.decode()
            if user in self.users and self.users[user] == password:
                with self.lock:
                    self.logins.append(user)
                return AuthResult(success=True)
        with self.lock:
            self.failed_logins += 1
        return AuthResult(success=False, handled=False)

    def start(self) -> FakeSmtp:
        kwargs: dict[str, Any] = {"server_hostname": "fake-smtp.test"}
        if self.users:  # without users, AUTH is not offered over plain text (aiosmtpd's default)
            kwargs.update(authenticator=self._authenticate, auth_required=True, auth_require_tls=False)
        if self.security == "starttls":
            kwargs.update(tls_context=self._server_context(), require_starttls=True)
        if self.security == "tls":
            kwargs["ssl_context"] = self._server_context()
        self.port = _free_port()
        self._controller = Controller(_Handler(self), hostname=self.host, port=self.port, **kwargs)
        self._controller.start()
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def __enter__(self) -> FakeSmtp:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

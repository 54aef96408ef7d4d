"""The email channel: one multipart/alternative message (text + HTML) over SMTP with aiosmtplib.

`security`: `starttls` upgrades a plain connection (587), `tls` is TLS from the first byte (465),
`none` sends in the clear and never upgrades. The HTML is whatever the renderer made of the
`email/<kind>.html` template, which autoescapes; this module never builds HTML itself.

SMTP replies: 5xx (535 bad credentials, 550 mailbox refused) are permanent, 4xx (451 try later) and
connection failures or timeouts transient. A TLS certificate that does not verify is permanent: it
stays wrong until someone fixes the server or the trust store.
"""

from __future__ import annotations

import base64
import logging
import ssl
from collections.abc import Sequence
from datetime import UTC, datetime
from email.header import Header
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid, parseaddr
from typing import NamedTuple

import aiosmtplib

from alertrouter.channels.base import ChannelError, Notification, Renderer
from alertrouter.ruleset.channels import EmailChannelConfig

__all__ = ["SUBJECT_LIMIT_BYTES", "EmailChannel", "InlineImage", "build_email", "smtp_error", "smtp_send"]

log = logging.getLogger(__name__)

SUBJECT_LIMIT_BYTES = 200


class InlineImage(NamedTuple):
    """An image the HTML shows as `<img src="cid:{cid}">` (the weekly digest's charts)."""

    cid: str
    data: bytes
    subtype: str = "png"


def _one_line(text: str) -> str:
    """A header value: CR/LF would end the header (and inject others), so they become spaces."""
    return " ".join(text.split())


def _set_subject(message: EmailMessage, subject: str) -> None:
    """CPython's header folder can drop the space between two encoded words it splits a long
    non-ASCII subject into (`华北 节点` read back as `华北节点`, about one subject in twenty with
    Chinese words). The older encoder keeps the spaces inside the encoded words, so a non-ASCII
    subject is stored already encoded and folded (lines under 78 characters are sent as they are)."""
    if subject.isascii():
        message["Subject"] = subject
    else:
        message.set_raw("Subject", Header(subject, "utf-8", header_name="Subject").encode(linesep="\n"))


def build_email(
    *,
    sender: str,
    to: Sequence[str],
    subject: str,
    text: str,
    html: str | None = None,
    inline_images: Sequence[InlineImage | tuple[str, bytes, str]] = (),
    date: datetime | None = None,
    message_id: str | None = None,
) -> EmailMessage:
    """A ready-to-send message: text/plain, or multipart/alternative with the HTML as the last part.

    With `inline_images` the HTML part becomes multipart/related holding the images, each with
    `Content-ID: <cid>`. `Message-ID` is made on the sender's domain (no DNS lookup of our hostname).
    """
    if inline_images and html is None:
        raise ValueError("inline images need an HTML part to show them")
    message = EmailMessage()
    _set_subject(message, _one_line(subject))
    message["From"] = sender
    message["To"] = ", ".join(to)
    message["Date"] = format_datetime(date or datetime.now(UTC))
    domain = parseaddr(sender)[1].rpartition("@")[2] or "alertrouter.invalid"
    message["Message-ID"] = message_id or make_msgid(domain=domain)
    message["Auto-Submitted"] = "auto-generated"  # RFC 3834: no vacation auto-replies to alerts
    message.set_content(text)
    if html is not None:
        message.add_alternative(html, subtype="html")
        html_part = list(message.iter_parts())[-1]
        for cid, data, subtype in inline_images:
            html_part.add_related(data, maintype="image", subtype=subtype, cid=f"<{cid.strip('<>')}>")
    return message


def _response_error(where: str, code: int, reply: str, secrets: Sequence[str]) -> ChannelError:
    for secret in secrets:
        reply = reply.replace(secret, "***")
    text = f"{where}: {code} {reply.strip()[:200]}".rstrip()
    return ChannelError(text, permanent=code >= 500, code=f"smtp-{code}")


def smtp_error(exc: Exception, where: str, secrets: Sequence[str] = ()) -> ChannelError:
    """The `ChannelError` for what aiosmtplib (or the socket under it) raised.

    `secrets` are scrubbed from server replies (a server has no business echoing a password, but one
    that did must not put it in our records).
    """
    if isinstance(exc, aiosmtplib.SMTPRecipientsRefused):
        refused = [(r.recipient, r.code, r.message) for r in exc.recipients]
        shown = ", ".join(f"{rcpt} ({code})" for rcpt, code, _ in refused[:10])
        permanent = all(code >= 500 for _, code, _ in refused)
        first = refused[0][1] if refused else 0
        return ChannelError(f"{where}: recipients refused: {shown}", permanent=permanent, code=f"smtp-{first}")
    if isinstance(exc, aiosmtplib.SMTPResponseException) and exc.code >= 400:
        return _response_error(where, exc.code, exc.message, secrets)
    if isinstance(exc, aiosmtplib.SMTPNotSupported) or type(exc) is aiosmtplib.SMTPException:
        # aiosmtplib's own refusals: no STARTTLS, no AUTH, no SMTPUTF8 on this server. The settings do
        # not fit the server, and will not until someone changes one of them.
        return ChannelError(f"{where}: {exc.message}", permanent=True, code="smtp-not-supported")
    cause = exc.__cause__ or exc.__context__
    if isinstance(exc, ssl.SSLCertVerificationError) or isinstance(cause, ssl.SSLCertVerificationError):
        return ChannelError(f"{where}: TLS certificate not trusted", permanent=True, code="smtp-tls-verify")
    if isinstance(exc, TimeoutError):
        return ChannelError(f"{where}: timed out ({type(exc).__name__})", code="timeout")
    if isinstance(exc, aiosmtplib.SMTPResponseException):
        return _response_error(where, exc.code, exc.message, secrets)
    return ChannelError(f"{where}: {type(exc).__name__}", code="connection")


def _where(config: EmailChannelConfig) -> str:
    return f"email {config.name} ({config.host}:{config.effective_port})"


def _secrets(config: EmailChannelConfig) -> list[str]:
    """The password as it may appear in an error: plain, base64, and inside an AUTH PLAIN string."""
    password = config.password.get_secret_value() if config.password is not None else ""
    if not password:
        return []
    plain = base64.b64encode(f"\0{config.username or ''}\0{password}".encode()).decode()
    return [password, base64.b64encode(password.encode()).decode(), plain]


async def smtp_send(
    config: EmailChannelConfig, message: EmailMessage, *, ssl_context: ssl.SSLContext | None = None
) -> dict[str, aiosmtplib.SMTPResponse]:
    """One message through the channel's SMTP server (a connection per message); errors raised as
    `ChannelError`, classed and without secrets. Returns the recipients the server refused."""
    username = config.username or None  # no username: no AUTH, whatever the password
    password = config.password.get_secret_value() if config.password is not None else ""
    try:
        refused, _ = await aiosmtplib.send(
            message,
            hostname=config.host,
            port=config.effective_port,
            username=username,
            password=password if username else None,
            use_tls=config.security == "tls",
            start_tls=config.security == "starttls",
            tls_context=ssl_context,
            timeout=config.timeout.total_seconds(),
        )
    except (aiosmtplib.SMTPException, OSError) as exc:
        raise smtp_error(exc, _where(config), _secrets(config)) from None
    return refused


class EmailChannel:
    """Email over SMTP. `ssl_context` replaces the default trust (tests trust a throwaway certificate)."""

    type: str = "email"

    def __init__(
        self, config: EmailChannelConfig, *, renderer: Renderer, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self.name = config.name
        self.config = config
        self._renderer = renderer
        self._ssl_context = ssl_context
        self._where = _where(config)

    def message(self, notification: Notification) -> EmailMessage:
        recipients = notification.recipients or tuple(self.config.to)
        if not recipients:
            raise ChannelError(f"{self._where}: no recipients", permanent=True, code="no-recipients")
        return build_email(
            sender=self.config.from_,
            to=recipients,
            subject=self._renderer.title(notification, limit_bytes=SUBJECT_LIMIT_BYTES),
            text=self._renderer.render("email", "txt", notification),
            html=self._renderer.render("email", "html", notification),
        )

    async def send(self, notification: Notification) -> None:
        refused = await smtp_send(self.config, self.message(notification), ssl_context=self._ssl_context)
        if refused:  # some recipients took it: a retry would repeat it to them, so report and move on
            shown = ", ".join(f"{rcpt} ({reply.code})" for rcpt, reply in refused.items())
            log.warning("%s: delivered, but refused for %s", self._where, shown)

    async def aclose(self) -> None:
        """Nothing to close: each send opens and closes its own SMTP connection."""

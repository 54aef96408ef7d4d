"""The email channel against a local aiosmtpd sink: plain, STARTTLS and implicit TLS, with and without
AUTH; the message it builds; and how SMTP failures are classed."""

from __future__ import annotations

import base64
import dataclasses
import html
import ssl
from collections.abc import Iterator
from datetime import UTC, datetime
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default as default_policy
from email.utils import parsedate_to_datetime
from typing import Any

import aiosmtplib
import pytest
from aiosmtplib.email import flatten_message

from alertrouter.channels.base import ChannelError, Notification
from alertrouter.channels.email import EmailChannel, InlineImage, build_email, smtp_error
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.ruleset.channels import EmailChannelConfig
from support.channels import ITEM, notification
from support.contract import (
    SMTP_FAULTS,
    ChannelContract,
    Fault,
    assert_no_secret,
    assert_no_secret_leaks,
    assert_transient,
)
from support.fakes.smtp import FakeSmtp, Security, TlsFiles, openssl_available, self_signed_cert
from support.need import need

# AUTH without TLS is what the plain-text cases test, on purpose; aiosmtpd warns about it each time.
pytestmark = pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS:UserWarning")

USER = "alertrouter"
PASSWORD = "smtp-Pa55word-do-not-leak"
WRONG_PASSWORD = "smtp-Wr0ng-Pa55word"
# The passwords, and each as AUTH PLAIN sends it (base64 of user and password together).
SECRETS = (
    PASSWORD,
    WRONG_PASSWORD,
    *(base64.b64encode(f"\0{USER}\0{password}".encode()).decode() for password in (PASSWORD, WRONG_PASSWORD)),
)
HOSTILE = '<script>alert("x")</script> & <b>bold</b>'
SAMPLE = notification(recipients=("oncall@example.com",))


class EscapingRenderer:
    """A `Renderer` that, like the real HTML templates, escapes every value it puts in HTML."""

    def render(self, channel: str, fmt: str, notification: Notification, *, limit_bytes: int | None = None) -> str:
        assert channel == "email"
        item = notification.first
        if fmt == "html":
            rows = "".join(
                f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>" for k, v in item.labels.items()
            )
            return f"<h1>{html.escape(item.headline)}</h1><table>{rows}</table>"
        return f"{item.headline}\n{notification.link}\n"

    def title(self, notification: Notification, *, limit_bytes: int | None = None) -> str:
        return f"[{notification.severity.upper()}] {notification.first.headline}"


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    need(openssl_available(), "the openssl command makes the throwaway TLS certificate")
    return self_signed_cert(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def sink_factory(tls_files: TlsFiles) -> Iterator[Any]:
    started: list[FakeSmtp] = []

    def make(security: Security = "none", users: dict[str, str] | None = None) -> FakeSmtp:
        sink = FakeSmtp(security=security, users=users, tls=tls_files if security != "none" else None)
        started.append(sink.start())
        return sink

    yield make
    for sink in started:
        sink.stop()


@pytest.fixture
def plain(sink_factory: Any) -> FakeSmtp:
    sink: FakeSmtp = sink_factory()
    return sink


def config(sink: FakeSmtp, *, login: bool = False, password: str = PASSWORD, **overrides: Any) -> EmailChannelConfig:
    data: dict[str, Any] = {
        "name": "mail-oncall",
        "type": "email",
        "host": sink.host,
        "port": sink.port,
        "security": sink.security,
        "from": "Alertrouter <alertrouter@example.com>",
        "to": ["fallback@example.com"],
        "timeout": "5s",
    }
    if login:
        data.update(username=USER, password=password)
    return EmailChannelConfig.model_validate({**data, **overrides})


def channel(cfg: EmailChannelConfig, sink: FakeSmtp | None = None) -> EmailChannel:
    context = sink.client_context() if sink is not None and sink.tls is not None else None
    return EmailChannel(cfg, renderer=EscapingRenderer(), ssl_context=context)


async def failure(ch: EmailChannel, notification: Notification = SAMPLE) -> ChannelError:
    with pytest.raises(ChannelError) as caught:
        await ch.send(notification)
    assert_no_secret(SECRETS, errors=[caught.value])
    return caught.value


def contract(security: Security, tls_files: TlsFiles) -> ChannelContract[FakeSmtp]:
    """The shared checks' view of this channel: a sink with AUTH over `security`, a wrong password and a
    refused recipient."""

    def channel_to(sink: FakeSmtp, timeout: str = "5s", password: str = PASSWORD) -> EmailChannel:
        return channel(config(sink, login=True, password=password, timeout=timeout), sink)

    def refusing(sink: FakeSmtp) -> EmailChannel:
        sink.refuse("oncall@example.com")
        return channel_to(sink)

    return ChannelContract(
        vendor=lambda: FakeSmtp(
            security=security, users={USER: PASSWORD}, tls=tls_files if security != "none" else None
        ),
        channel=channel_to,
        delivered=lambda sink: len(sink.messages),
        notification=SAMPLE,
        secrets=SECRETS,
        faults=SMTP_FAULTS,
        mistakes={
            "wrong password": lambda sink: channel_to(sink, password=WRONG_PASSWORD),
            "refused recipient": refusing,
        },
        vendor_loggers=("mail.log",),  # the sink's own server-side logging: aiosmtpd's, not ours
    )


def assert_alert_mail(message: EmailMessage) -> None:
    assert message["Subject"] == "[CRITICAL] gpu-node-07: GPUHighTemp on 6/8 GPUs"
    assert message["From"] == "Alertrouter <alertrouter@example.com>"
    assert message["To"] == "oncall@example.com"
    assert message["Message-ID"].endswith("@example.com>")
    assert parsedate_to_datetime(message["Date"]).tzinfo is not None
    assert message.get_content_type() == "multipart/alternative"
    plain_part = message.get_body(preferencelist=("plain",))
    html_part = message.get_body(preferencelist=("html",))
    assert isinstance(plain_part, EmailMessage)
    assert isinstance(html_part, EmailMessage)
    assert "http://alertrouter.example/incidents/12" in plain_part.get_content()
    assert "<h1>gpu-node-07: GPUHighTemp on 6/8 GPUs</h1>" in html_part.get_content()


# -- the message ---------------------------------------------------------------------------------


def test_build_email() -> None:
    message = build_email(
        sender="alertrouter@example.com",
        to=["a@example.com", "b@example.com"],
        subject="line one\r\nBcc: victim@example.com",
        text="text body",
        html="<p>html body</p>",
        date=datetime(2026, 11, 21, 10, 0, tzinfo=UTC),
    )
    assert message["Subject"] == "line one Bcc: victim@example.com"  # no header injection
    assert message["Bcc"] is None
    assert message["To"] == "a@example.com, b@example.com"
    assert message["Date"] == "Sat, 21 Nov 2026 10:00:00 +0000"
    assert message["Message-ID"].endswith("@example.com>")
    assert message["Auto-Submitted"] == "auto-generated"
    assert [p.get_content_type() for p in message.iter_parts()] == ["text/plain", "text/html"]


def test_build_email_text_only() -> None:
    message = build_email(sender="a@example.com", to=["b@example.com"], subject="s", text="only text")
    assert message.get_content_type() == "text/plain"


def test_build_email_inline_images() -> None:
    png = b"\x89PNG\r\n\x1a\nfake"
    message = build_email(
        sender="a@example.com",
        to=["b@example.com"],
        subject="weekly digest",
        text="see the chart",
        html='<img src="cid:chart-1">',
        inline_images=[InlineImage("chart-1", png), ("chart-2", b"GIF89a", "gif")],
    )
    _, related = message.iter_parts()
    assert related.get_content_type() == "multipart/related"
    html_part, *images = related.iter_parts()
    assert html_part.get_content_type() == "text/html"
    assert [(i.get_content_type(), i["Content-ID"]) for i in images] == [
        ("image/png", "<chart-1>"),
        ("image/gif", "<chart-2>"),
    ]
    assert images[0].get_content() == png


def test_inline_images_need_html() -> None:
    with pytest.raises(ValueError, match="HTML"):
        build_email(sender="a@x", to=["b@x"], subject="s", text="t", inline_images=[InlineImage("c", b"")])


# -- over SMTP -----------------------------------------------------------------------------------


@pytest.mark.parametrize("security", ["none", "starttls", "tls"])
@pytest.mark.parametrize("login", [False, True], ids=["no-auth", "auth"])
async def test_send(sink_factory: Any, security: Security, login: bool) -> None:
    sink: FakeSmtp = sink_factory(security, {USER: PASSWORD} if login else None)
    await channel(config(sink, login=login), sink).send(SAMPLE)
    (message,) = sink.messages
    assert_alert_mail(message)
    assert sink.envelopes[0].rcpt_tos == ("oncall@example.com",)
    assert sink.envelopes[0].mail_from == "alertrouter@example.com"
    assert sink.logins == ([USER] if login else [])


async def test_hostile_values_stay_escaped(plain: FakeSmtp) -> None:
    hostile = {**ITEM, "headline": HOSTILE, "labels": {**ITEM["labels"], "node": HOSTILE}}
    await channel(config(plain)).send(dataclasses.replace(SAMPLE, items=(MessageSnapshot.from_json(hostile),)))
    html_part = plain.messages[0].get_body(preferencelist=("html",))
    assert isinstance(html_part, EmailMessage)
    body = html_part.get_content()
    assert "<script>" not in body
    assert "<b>bold</b>" not in body
    assert body.count("&lt;script&gt;") == 2
    assert "&amp; &lt;b&gt;bold&lt;/b&gt;" in body


async def test_a_chinese_subject_arrives_with_every_space(plain: FakeSmtp) -> None:
    """Python's header folding drops the space between two encoded words at a line break: the subject
    of a storm in Chinese would read `40 个节点GPUXidError`."""
    storm = "[严重] north 区 r12 机架 40 个节点 GPUXidError，共 320 块 GPU"  # as zh-CN titles it

    class Titled(EscapingRenderer):
        def title(self, notification: Notification, *, limit_bytes: int | None = None) -> str:
            return notification.first.headline

    item = {**ITEM, "headline": storm}
    sent = dataclasses.replace(SAMPLE, items=(MessageSnapshot.from_json(item),), recipients=("a@x.org", "b@x.org"))
    await EmailChannel(config(plain), renderer=Titled()).send(sent)
    (message,) = plain.messages
    assert message["Subject"] == storm
    assert plain.envelopes[0].rcpt_tos == ("a@x.org", "b@x.org")


async def test_falls_back_to_configured_recipients(plain: FakeSmtp) -> None:
    await channel(config(plain)).send(dataclasses.replace(SAMPLE, recipients=()))
    assert plain.envelopes[0].rcpt_tos == ("fallback@example.com",)
    assert plain.messages[0]["To"] == "fallback@example.com"


async def test_no_recipients_is_permanent(plain: FakeSmtp) -> None:
    error = await failure(channel(config(plain, to=[])), dataclasses.replace(SAMPLE, recipients=()))
    assert error.permanent
    assert not plain.messages


async def test_refused_recipient_is_permanent(plain: FakeSmtp) -> None:
    plain.refuse("oncall@example.com")
    error = await failure(channel(config(plain)))
    assert error.permanent
    assert error.code == "smtp-550"
    assert "oncall@example.com" in error.message


async def test_one_refused_recipient_of_two_still_delivers(plain: FakeSmtp, caplog: pytest.LogCaptureFixture) -> None:
    plain.refuse("gone@example.com")
    await channel(config(plain)).send(
        dataclasses.replace(SAMPLE, recipients=("oncall@example.com", "gone@example.com"))
    )
    assert plain.envelopes[0].rcpt_tos == ("oncall@example.com",)
    assert "gone@example.com (550)" in caplog.text


async def test_554_on_data_is_permanent(plain: FakeSmtp) -> None:
    plain.fail_next("554 5.7.1 Message rejected as spam")
    error = await failure(channel(config(plain)))
    assert error.permanent
    assert error.code == "smtp-554"


@pytest.mark.parametrize("security", ["none", "starttls", "tls"])
async def test_wrong_password_is_permanent(sink_factory: Any, security: Security) -> None:
    sink: FakeSmtp = sink_factory(security, {USER: "the-right-one"})
    error = await failure(channel(config(sink, login=True), sink))
    assert error.permanent
    assert error.code == "smtp-535"
    assert sink.failed_logins >= 1  # aiosmtplib tries each mechanism the server offers (PLAIN, LOGIN)
    assert not sink.messages


async def test_untrusted_certificate_is_permanent(sink_factory: Any) -> None:
    sink: FakeSmtp = sink_factory("tls")
    error = await failure(EmailChannel(config(sink), renderer=EscapingRenderer(), ssl_context=None))
    assert error.permanent
    assert error.code == "smtp-tls-verify"


async def test_starttls_against_a_server_without_it_is_permanent(plain: FakeSmtp) -> None:
    error = await failure(channel(config(plain, security="starttls")))
    assert error.permanent
    assert error.code == "smtp-not-supported"


async def test_login_against_a_server_without_auth_is_permanent(plain: FakeSmtp) -> None:
    error = await failure(channel(config(plain, login=True)))
    assert error.permanent
    assert error.code == "smtp-not-supported"


async def test_security_none_never_upgrades(sink_factory: Any) -> None:
    sink: FakeSmtp = sink_factory("starttls")  # offers STARTTLS and refuses mail without it
    error = await failure(channel(config(sink, security="none")))
    assert error.permanent
    assert error.code == "smtp-530"
    assert not sink.messages


@pytest.mark.parametrize(
    ("exc", "permanent"),
    [
        (aiosmtplib.SMTPResponseException(451, "4.3.0 later"), False),
        (aiosmtplib.SMTPResponseException(421, "4.7.0 closing"), False),
        (aiosmtplib.SMTPResponseException(554, "5.7.1 no"), True),
        (aiosmtplib.SMTPAuthenticationError(535, "5.7.8 bad credentials"), True),
        (aiosmtplib.SMTPAuthenticationError(454, "4.7.0 temporary auth failure"), False),
        (aiosmtplib.SMTPSenderRefused(550, "5.7.1 not allowed", "a@x"), True),
        (aiosmtplib.SMTPRecipientsRefused([aiosmtplib.SMTPRecipientRefused(450, "busy", "a@x")]), False),
        (
            aiosmtplib.SMTPRecipientsRefused(
                [
                    aiosmtplib.SMTPRecipientRefused(450, "busy", "a@x"),
                    aiosmtplib.SMTPRecipientRefused(550, "unknown", "b@x"),
                ]
            ),
            False,
        ),
        (aiosmtplib.SMTPServerDisconnected("gone"), False),
        (aiosmtplib.SMTPConnectTimeoutError("slow"), False),
        (aiosmtplib.SMTPReadTimeoutError("slow"), False),
        (ConnectionResetError(), False),
        (aiosmtplib.SMTPNotSupported("SMTP AUTH extension not supported by server."), True),
        (ssl.SSLCertVerificationError("certificate verify failed"), True),
    ],
)
def test_error_classes(exc: Exception, permanent: bool) -> None:
    assert smtp_error(exc, "email test").permanent is permanent


def test_server_reply_echoing_the_password_is_scrubbed() -> None:
    error = smtp_error(aiosmtplib.SMTPAuthenticationError(535, f"bad password {PASSWORD}"), "email", [PASSWORD])
    assert PASSWORD not in error.message
    assert "***" in error.message


@pytest.mark.parametrize("security", ["none", "starttls", "tls"])
@pytest.mark.parametrize("fault", SMTP_FAULTS, ids=str)
async def test_faults_are_transient(tls_files: TlsFiles, security: Security, fault: Fault) -> None:
    await assert_transient(contract(security, tls_files), fault)


@pytest.mark.parametrize("security", ["none", "starttls", "tls"])
async def test_faults_leak_no_secret(tls_files: TlsFiles, security: Security, caplog: pytest.LogCaptureFixture) -> None:
    await assert_no_secret_leaks(contract(security, tls_files), caplog)


@pytest.mark.parametrize(
    "subject",
    [
        "[CRITICAL] 机房 机房 gpu-node-07: 过高 ¡¡ GPUs 过高 6/8 on 华北 GPUs",  # CPython's folder lost a space here
        '[WARNING] db-1: {instance="db-1:9100", job="备份 任务", region="华北 一区", severity="warning"}',
        "[CRITICAL] gpu-node-07: GPUHighTemp on 6/8 GPUs, region north, rack r12, since 08:00 UTC and more words",
    ],
)
def test_a_long_subject_keeps_every_space_as_sent(subject: str) -> None:
    message = build_email(sender="ar@example.com", to=["a@x.org"], subject=subject, text="t", html="<p>t</p>")
    assert str(message["Subject"]) == subject
    for raw in (message.as_bytes(), flatten_message(message)):  # what tests read and what aiosmtplib sends
        assert str(message_from_bytes(raw, policy=default_policy)["Subject"]) == subject
        assert max(len(line) for line in raw.splitlines()) <= 78

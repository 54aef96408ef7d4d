"""The contract every channel keeps, checked the same way for each: the vendor's faults are transient,
and no secret reaches an error or a log record.

A channel's tests describe the channel once as a `ChannelContract` (how to make its fake vendor, how to
point the channel at it, which strings are secrets) and call `assert_transient(contract, fault)` for
each fault of its table (`HTTP_FAULTS` or `SMTP_FAULTS`) and `assert_no_secret_leaks(contract, caplog)`
once. The leak check is Alertmanager's "no secret in an error" test helper widened to everything a
send leaves behind: each error's message, repr, attributes and chain as a traceback prints them, and
every log record at every level, with each secret also looked for in the forms it takes on the way
out (percent- and form-encoded in a URL, base64).
"""

from __future__ import annotations

import base64
import logging
import time
import traceback
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar
from urllib.parse import quote, quote_plus

import pytest

from alertrouter.channels.base import Channel, ChannelError, Notification

__all__ = [
    "HTTP_FAULTS",
    "SMTP_FAULTS",
    "ChannelContract",
    "Fault",
    "Seen",
    "assert_no_secret",
    "assert_no_secret_leaks",
    "assert_transient",
    "secret_forms",
]

HANG = 3.0  # how long a fake holds a request for the "timeout" fault
FAULT_TIMEOUT = "500ms"  # the channel's timeout when meeting that fault; well under HANG
TIMEOUT = "5s"  # the channel's timeout otherwise: loopback and a TLS handshake on a busy machine


class Vendor(Protocol):
    """What the checks use of a fake: `FakeVendor` (HTTP) and `FakeSmtp` both have it."""

    hang: float

    def start(self) -> object: ...

    def stop(self) -> None: ...

    def fail_next(self, *behaviours: str) -> None: ...


V = TypeVar("V", bound=Vendor)


@dataclass(frozen=True)
class Fault:
    """One row of a fault table: what the fake is told, and the `ChannelError.code` the channel must give.

    `script` is passed to the fake's `fail_next` ("500", "reset", "timeout", an SMTP reply); None
    means no fake at all: it is stopped before the send, so the connection is refused.
    """

    name: str
    script: str | None
    code: str

    def __str__(self) -> str:  # the test id
        return self.name


_TRANSPORT = (
    Fault("reset", "reset", "connection"),
    Fault("timeout", "timeout", "timeout"),
    Fault("refused", None, "connection"),
)
HTTP_FAULTS: tuple[Fault, ...] = (
    Fault("500", "500", "http-500"),
    Fault("502", "502", "http-502"),
    Fault("503", "503", "http-503"),
    *_TRANSPORT,
)
SMTP_FAULTS: tuple[Fault, ...] = (
    Fault("421", "421 4.7.0 Service not available, closing transmission channel", "smtp-421"),
    Fault("451", "451 4.3.0 Try again later", "smtp-451"),
    Fault("452", "452 4.3.1 Insufficient system storage", "smtp-452"),
    *_TRANSPORT,
)


def _nothing(vendor: object) -> Iterable[str]:
    return ()


@dataclass(frozen=True)
class ChannelContract(Generic[V]):
    """One channel as the contract checks drive it.

    `vendor`: a new fake, not started, that knows the channel's credentials.
    `channel(vendor, timeout)`: the channel pointed at the started `vendor`, with `timeout` ("5s").
    `delivered(vendor)`: how many messages the fake accepted.
    `secrets`: every credential any channel built here is configured with, the wrong ones included.
    `mistakes`: channels set up wrong (a bad secret, a deleted robot), by name; each may prepare the
    fake first, and each send must fail. Their errors are checked for leaks like the faults'.
    `wire_secrets(vendor)`: credentials made per request (signatures), read from what the fake received.
    `vendor_loggers`: the fake's own server-side loggers (aiosmtpd's), not the code under test.
    """

    vendor: Callable[[], V]
    channel: Callable[[V, str], Channel]
    delivered: Callable[[V], int]
    notification: Notification
    secrets: Collection[str]
    faults: Sequence[Fault] = HTTP_FAULTS
    mistakes: Mapping[str, Callable[[V], Channel]] = field(default_factory=dict)
    wire_secrets: Callable[[V], Iterable[str]] = _nothing
    vendor_loggers: Collection[str] = ()

    def started(self) -> V:
        vendor = self.vendor()
        vendor.hang = HANG
        vendor.start()
        return vendor


@dataclass
class Seen:
    """What one leak check saw, for a channel's own assertions: errors by fault or mistake name, and
    the text of every log record of the code under test."""

    errors: dict[str, ChannelError]
    logs: list[str]


# -- transient faults -----------------------------------------------------------------------------


async def _fail(channel: Channel, notification: Notification, what: str) -> ChannelError:
    try:
        await channel.send(notification)
    except ChannelError as exc:
        return exc
    raise AssertionError(f"{channel.type} {channel.name}: {what}: the send did not fail")


async def assert_transient(contract: ChannelContract[V], fault: Fault) -> ChannelError:
    """Send through a fresh fake that meets `fault`; the error must be transient and not a rate limit
    (the delivery loop retries soon, and does not hold the channel back), coded `fault.code`, free of
    secrets, and come from the channel's own timeout rather than the fake's late answer. Nothing is
    delivered by the failed send, and the next send through the same channel is (unless the fake is
    gone). Returns the error."""
    vendor = contract.started()
    try:
        channel = contract.channel(vendor, FAULT_TIMEOUT if fault.script == "timeout" else TIMEOUT)
        if fault.script is None:
            vendor.stop()
        else:
            vendor.fail_next(fault.script)
        started = time.monotonic()
        error = await _fail(channel, contract.notification, str(fault))
        took = time.monotonic() - started
        assert (error.permanent, error.rate_limited, error.code) == (False, False, fault.code), error.message
        assert took < HANG - 1.0, f"{fault}: {took:.1f}s, waited for the fake rather than its own timeout"
        assert contract.delivered(vendor) == 0
        assert_no_secret(contract.secrets, errors=[error])
        if fault.script is not None:
            await channel.send(contract.notification)
            assert contract.delivered(vendor) == 1
        return error
    finally:
        vendor.stop()


# -- secrets --------------------------------------------------------------------------------------


def secret_forms(secret: str) -> set[str]:
    """`secret` as it may leave: itself, percent-encoded (in a URL path or query, once or twice),
    form-encoded (+ for space), and base64 (an HTTP or SMTP credential)."""
    assert len(secret) >= 8, f"{secret!r}: a secret this short would be found in unrelated text"
    once = quote(secret, safe="")
    return {
        secret,
        once,
        quote(secret),
        quote_plus(secret),
        quote(once, safe=""),
        base64.b64encode(secret.encode()).decode(),
    }


def _error_texts(error: BaseException) -> Iterator[str]:
    """The traceback as logging would print it, and message, repr and attributes of each error in the
    chain it prints (a context suppressed with `from None` is not printed, and not looked at)."""
    yield "".join(traceback.format_exception(error))
    current: BaseException | None = error
    seen: set[int] = set()
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield str(current)
        yield repr(current)
        yield repr(getattr(current, "__dict__", {}))
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)


def _record_texts(record: logging.LogRecord) -> Iterator[str]:
    yield record.getMessage()
    yield repr(vars(record))  # args, extras, exc_info
    if record.exc_info:
        yield "".join(traceback.format_exception(*record.exc_info))
    if record.stack_info:
        yield record.stack_info


def assert_no_secret(
    secrets: Iterable[str], *, errors: Iterable[BaseException] = (), records: Iterable[logging.LogRecord] = ()
) -> None:
    """No form of any secret in any of `errors` (chain included) or `records`."""
    forms = {form: secret for secret in secrets for form in secret_forms(secret)}
    texts = [(f"error {e!r}", t) for e in errors for t in _error_texts(e)]
    texts += [(f"log record {r.name}:{r.levelname}", t) for r in records for t in _record_texts(r)]
    leaks = sorted(
        {f"{where}: {secret!r} as {form!r}" for where, text in texts for form, secret in forms.items() if form in text}
    )
    assert leaks == [], "\n".join(leaks)


async def assert_no_secret_leaks(contract: ChannelContract[V], caplog: pytest.LogCaptureFixture) -> Seen:
    """Drive the channel, with every logger at DEBUG (whatever an earlier test set them to), through
    each fault of its table, one good send, and each of its mistakes; then no secret, nor a form of
    one, nor a signature the fake received, may be in an error or a log record."""
    caplog.set_level(logging.DEBUG)
    for name in {*logging.root.manager.loggerDict, "httpx", "httpcore", "aiosmtplib", "alertrouter"}:
        caplog.set_level(logging.DEBUG, logger=name)
    errors: dict[str, ChannelError] = {}
    vendor = contract.started()
    try:
        for fault in contract.faults:
            if fault.script is None:
                continue  # below, with a fake of its own: this one's connections may be kept alive
            channel = contract.channel(vendor, FAULT_TIMEOUT if fault.script == "timeout" else TIMEOUT)
            vendor.fail_next(fault.script)
            errors[str(fault)] = await _fail(channel, contract.notification, str(fault))
        await contract.channel(vendor, TIMEOUT).send(contract.notification)
        for name, mistake in contract.mistakes.items():
            errors[name] = await _fail(mistake(vendor), contract.notification, name)
        wire = set(contract.wire_secrets(vendor))
    finally:
        vendor.stop()
    for fault in contract.faults:
        if fault.script is None:
            gone = contract.started()
            channel = contract.channel(gone, TIMEOUT)
            gone.stop()
            errors[str(fault)] = await _fail(channel, contract.notification, str(fault))

    assert caplog.records, "nothing was logged: the check below would prove nothing"
    ours = [r for r in caplog.records if not any(_within(r.name, v) for v in contract.vendor_loggers)]
    assert_no_secret({*contract.secrets, *wire}, errors=errors.values(), records=ours)
    return Seen(errors, [r.getMessage() for r in ours])


def _within(name: str, logger: str) -> bool:
    return name == logger or name.startswith(logger + ".")

"""The SMS channel: recipients, template variables and text that fit an SMS, handed to one provider.

What is shared by every provider lives here: which numbers, the template variables built from
`notification_fields()` per `config.params`, and the text rules. Non-GSM characters (a non-breaking
space pasted into an alert summary, a smart quote, an em dash) switch a whole message to UCS-2, which
halves its length and doubles its cost, so they are mapped to ASCII where an ASCII twin exists.
Chinese text is legitimate and stays (it is UCS-2 anyway). The provider modules only sign and post.
"""

from __future__ import annotations

import logging
import re
import time
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import httpx

from alertrouter.channels.base import (
    ChannelError,
    Notification,
    Renderer,
    neutralise_links,
    notification_fields,
    truncate_utf8,
    utf8_len,
)
from alertrouter.channels.headline import fitted_headline
from alertrouter.channels.http import protect_logs, redact
from alertrouter.channels.sms_aliyun import AliyunSms
from alertrouter.channels.sms_generic import GenericSms
from alertrouter.channels.sms_tencent import TencentSms
from alertrouter.ruleset.channels import SmsChannelConfig

__all__ = [
    "CUT_MARKER",
    "EMPTY_PARAM",
    "TEXT_LIMIT_BYTES",
    "SmsChannel",
    "SmsProvider",
    "fit_param",
    "gsm7_compatible",
    "normalize_sms",
    "sms_numbers",
    "sms_params",
    "sms_text",
]

log = logging.getLogger(__name__)

CUT_MARKER = ".."  # ASCII, so a cut variable does not itself switch the message to UCS-2
EMPTY_PARAM = "-"  # vendors reject empty template variables; a dash reads as "none"
TEXT_LIMIT_BYTES = 459  # three concatenated GSM-7 segments (3 x 153 characters)

Clock = Callable[[], float]


class SmsProvider(Protocol):
    """One vendor's send: every number gets the same template variables (and, for gateways, text).

    `params` is ordered (Tencent's variables are positional). Raises `ChannelError`; splitting a long
    number list into the vendor's batch size is the provider's business.
    """

    async def send(self, numbers: Sequence[str], params: Mapping[str, str], text: str) -> None: ...


# Characters with an ASCII twin; anything of Unicode category Zs is a space, Cc/Cf is dropped.
_ASCII_TWINS: dict[int, str] = {
    **dict.fromkeys(map(ord, "\u2018\u2019\u201a\u201b\u2032\u2039\u203a\uff07"), "'"),
    **dict.fromkeys(map(ord, "\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb\uff02"), '"'),
    **dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2043"), "-"),
    ord("\u2026"): "...",
    ord("\u2022"): "*",
    ord("\u2192"): "->",
    ord("\u2190"): "<-",
    ord("\u2265"): ">=",
    ord("\u2264"): "<=",
    ord("\u00b0"): "",  # 92°C -> 92C
    ord("\u00ad"): "",  # soft hyphen
    ord("\t"): " ",
    ord("\r"): "\n",
    ord("\u2028"): "\n",
    ord("\u2029"): "\n",
    ord("\u0085"): "\n",
}
_SPACES = re.compile(r"[ \t]+")
_WHITESPACE = re.compile(r"\s+")
_BLANK_LINES = re.compile(r"\n{3,}")
_NUMBER_PUNCTUATION = re.compile(r"[\s\-().]")

# GSM 03.38 basic character set (extension-table characters such as [ ] { } ~ | cost two septets but
# do not force UCS-2, so they count as compatible too).
_GSM7 = frozenset(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?"
    "¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
    "^{}\\[~]|€\f"
)


def _char(c: str) -> str:
    if c == "\n":
        return c
    category = unicodedata.category(c)
    if category == "Zs":
        return " "
    if category in ("Cc", "Cf", "Cs"):  # controls; zero-width, BOM, bidi overrides; lone surrogates
        return ""
    return c


def normalize_sms(text: str, *, single_line: bool = False) -> str:
    """`text` with unicode spaces, smart punctuation and invisible characters made GSM/ASCII.

    `single_line` (template variables): every whitespace run, newlines included, becomes one space.
    Otherwise line breaks stay, with trailing spaces and runs of blank lines removed.
    """
    text = text.replace("\r\n", "\n").translate(_ASCII_TWINS)
    text = "".join(_char(c) for c in text)
    if single_line:
        return _WHITESPACE.sub(" ", text).strip()
    lines = (_SPACES.sub(" ", line).rstrip() for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def gsm7_compatible(text: str) -> bool:
    """Whether `text` can go as GSM-7 (160 characters a segment) rather than UCS-2 (70)."""
    return all(c in _GSM7 for c in text)


def fit_param(value: str, max_length: int) -> str:
    """A template variable: normalised, one line, at most `max_length` characters, never empty.

    A cut value ends in `CUT_MARKER`, so a reader sees it was cut (when there is room for it).
    """
    text = normalize_sms(value, single_line=True)
    if not text:
        return EMPTY_PARAM[:max_length]
    if len(text) <= max_length:
        return text
    if max_length <= len(CUT_MARKER):
        return text[:max_length]
    return text[: max_length - len(CUT_MARKER)].rstrip() + CUT_MARKER


def sms_params(notification: Notification, params: Mapping[str, str], max_length: int) -> dict[str, str]:
    """Vendor template variable -> value, in the order of `params` (variable -> field of `SMS_FIELDS`).

    `headline` is fitted to `max_length` keeping the alert name whole (`fitted_headline` shortens the node).
    Every field but `link` (the product's own) may come from labels: a URL or markdown link in it is
    neutralised in the ASCII form (`http[:]//x[.]y`, see `neutralise_links`), so that a phone does not
    make it tappable and the message stays GSM-7. Vendors refuse variables holding links, too.
    """
    fields = notification_fields(notification)
    if "headline" in params.values():
        fields["headline"] = fitted_headline(
            notification.words,
            notification.first,
            lambda text: len(normalize_sms(neutralise_links(text, ascii_only=True), single_line=True)) <= max_length,
            CUT_MARKER,
        )
    return {
        variable: fit_param(value if source == "link" else neutralise_links(value, ascii_only=True), max_length)
        for variable, source in params.items()
        for value in (fields.get(source, ""),)
    }


def sms_text(renderer: Renderer, notification: Notification, *, limit_bytes: int = TEXT_LIMIT_BYTES) -> str:
    """The free text a gateway sends, rendered within `limit_bytes` and normalised.

    Normalising never lengthens the UTF-8 form (every replacement is at most as long as the
    character it replaces), so the cut below only guards against a renderer overshooting its limit.
    """
    text = normalize_sms(renderer.render("sms", "txt", notification, limit_bytes=limit_bytes))
    return truncate_utf8(text, limit_bytes, ellipsis="...") if utf8_len(text) > limit_bytes else text


def sms_numbers(recipients: Sequence[str]) -> list[str]:
    """Recipients without spaces, dashes, dots or brackets, blanks dropped, duplicates once, order kept."""
    numbers: dict[str, None] = {}
    for recipient in recipients:
        number = _NUMBER_PUNCTUATION.sub("", recipient)
        if number:
            numbers[number] = None
    return list(numbers)


def _secrets(config: SmsChannelConfig) -> list[str]:
    values: list[str] = []
    if config.aliyun is not None:
        values += [config.aliyun.access_key_id.get_secret_value(), config.aliyun.access_key_secret.get_secret_value()]
    if config.tencent is not None:
        values += [config.tencent.secret_id.get_secret_value(), config.tencent.secret_key.get_secret_value()]
    if config.generic is not None and config.generic.token is not None:
        values.append(config.generic.token.get_secret_value())
    return [v for v in values if v]


def _provider(config: SmsChannelConfig, client: httpx.AsyncClient, clock: Clock) -> SmsProvider:
    timeout = config.timeout.total_seconds()
    if config.provider == "aliyun" and config.aliyun is not None:
        return AliyunSms(config.aliyun, client=client, timeout=timeout, clock=clock)
    if config.provider == "tencent" and config.tencent is not None:
        return TencentSms(config.tencent, client=client, timeout=timeout, clock=clock)
    if config.provider == "generic" and config.generic is not None:
        return GenericSms(config.generic, client=client, timeout=timeout, clock=clock)
    raise ValueError(f"sms channel {config.name}: provider {config.provider} has no settings")


class SmsChannel:
    """An SMS channel over one provider. The `client` is shared and owned by the caller."""

    type: str = "sms"

    def __init__(
        self, config: SmsChannelConfig, *, client: httpx.AsyncClient, renderer: Renderer, clock: Clock = time.time
    ) -> None:
        self.name = config.name
        self.config = config
        self._renderer = renderer
        self._provider = _provider(config, client, clock)
        self._secrets = _secrets(config)
        protect_logs(*self._secrets)

    async def send(self, notification: Notification) -> None:
        numbers = sms_numbers(notification.recipients)
        if not numbers:
            raise ChannelError(f"sms {self.name}: no phone numbers to send to", permanent=True, code="no-recipients")
        params = sms_params(notification, self.config.params, self.config.param_max_length)
        text = sms_text(self._renderer, notification) if self.config.provider == "generic" else ""
        try:
            await self._provider.send(numbers, params, text)
        except ChannelError as exc:
            # Providers keep secrets out of their messages; a vendor's own message may still echo one
            # (Aliyun's SignatureDoesNotMatch quotes its string-to-sign, AccessKeyId included).
            raise ChannelError(
                redact(exc.message, self._secrets),
                permanent=exc.permanent,
                rate_limited=exc.rate_limited,
                retry_after=exc.retry_after,
                code=exc.code,
            ) from None
        log.debug("sms %s: %s accepted %d number(s)", self.name, self.config.provider, len(numbers))

    async def aclose(self) -> None:
        """Nothing to close: the HTTP client belongs to whoever made it."""

"""The voice channel: a text-to-speech call to each number, the incident's headline spoken, by one vendor.

What is shared by the vendors lives here: which numbers, the spoken template variables and the rule
that a resolved message calls nobody. Both vendors call one number per request, so a message to three
numbers is three calls; when one fails, the error names how many were reached (`ChannelError.reached`)
and the retry calls only the others. The daily cap per number is the delivery loop's, as for SMS.

Template variables are spoken, not read: the characters Aliyun's voice template rules forbid
(help.aliyun.com/en/vms/user-guide/voice-template-specification: "Special symbols such as # / : - % $ [ ]",
no IP address, no "http" or "https") become spaces and links are dropped, so `gpu-node-07: XID 79`
is said as "gpu node 07 XID 79"; an IP address is said as its four numbers and "HTTP" spelled
"H T T P". Each variable is cut to `param_max_length` characters.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import httpx

from alertrouter.channels.base import ChannelError, Notification, notification_fields
from alertrouter.channels.headline import fitted_headline
from alertrouter.channels.http import protect_logs, redact
from alertrouter.channels.sms import CUT_MARKER, normalize_sms, sms_numbers
from alertrouter.channels.voice_aliyun import AliyunVoice
from alertrouter.channels.voice_tencent import TencentVoice
from alertrouter.ruleset.channels import VoiceChannelConfig

__all__ = ["VoiceChannel", "VoiceProvider", "mask_number", "speakable", "voice_params"]

log = logging.getLogger(__name__)

Clock = Callable[[], float]

# A link and the symbols the vendor refuses in what it speaks (a TTS engine would spell them out).
_LINK = re.compile(r"(?:https?://|www\.)[^\s)\]>\"']*", re.IGNORECASE)
_UNSPOKEN = re.compile(r"[#/:\-%$\[\]\\<>{}|*_~^=&@`?]+")
_SPACES = re.compile(r"\s+")
_HTTP = re.compile(r"https?", re.IGNORECASE)  # refused even as a word ("HTTP 500"): spelled out
_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")  # an IP address is refused too: said as its numbers


class VoiceProvider(Protocol):
    """One vendor's call to one number; returns the vendor's call id or raises `ChannelError`.
    `reference` goes with the call and comes back in the vendor's receipt (Aliyun OutId, Tencent
    SessionContext): the delivery id."""

    async def call(self, number: str, params: Mapping[str, str], *, reference: str | None = None) -> str: ...


def speakable(text: str) -> str:
    """`text` on one line, without links and without the symbols a voice template may not hold."""
    text = normalize_sms(text, single_line=True)
    text = _UNSPOKEN.sub(" ", _LINK.sub(" ", text))
    text = _IPV4.sub(lambda m: m.group().replace(".", " "), text)
    text = _HTTP.sub(lambda m: " ".join(m.group().upper()), text)
    return _SPACES.sub(" ", text).strip()


def _fit(value: str, max_length: int, empty: str) -> str:
    if not value:
        return empty[:max_length]
    if len(value) <= max_length:
        return value
    if max_length <= len(CUT_MARKER):
        return value[:max_length]
    return value[: max_length - len(CUT_MARKER)].rstrip() + CUT_MARKER


def voice_params(notification: Notification, params: Mapping[str, str], max_length: int) -> dict[str, str]:
    """Vendor template variable -> spoken value, in the order of `params` (variable -> field)."""
    fields = notification_fields(notification)
    words = notification.words
    if "headline" in params.values():  # the alert name said whole, the node shortened

        def fits(text: str) -> bool:
            """Said within the variable, and not cut after the alert name: a cut GPU count ("on 6..")
            says nothing, so a headline too long drops its count (`gpu node 07 GPUHighTemp`)."""
            return len(speakable(text)) <= max_length and not text.endswith(CUT_MARKER)

        fields["headline"] = fitted_headline(words, notification.first, fits, CUT_MARKER)
    empty = words.tr.gettext("none")  # vendors refuse ""
    return {variable: _fit(speakable(fields.get(source, "")), max_length, empty) for variable, source in params.items()}


def mask_number(number: str) -> str:
    """A number as an error message shows it: `138****0000`."""
    return number[:3] + "****" + number[-4:] if len(number) > 7 else "****"


def _secrets(config: VoiceChannelConfig) -> list[str]:
    values: list[str] = []
    if config.aliyun is not None:
        values += [config.aliyun.access_key_id.get_secret_value(), config.aliyun.access_key_secret.get_secret_value()]
    if config.tencent is not None:
        values += [config.tencent.secret_id.get_secret_value(), config.tencent.secret_key.get_secret_value()]
    return [v for v in values if v]


def _provider(config: VoiceChannelConfig, client: httpx.AsyncClient, clock: Clock) -> VoiceProvider:
    timeout, play_times = config.timeout.total_seconds(), config.play_times
    if config.provider == "aliyun" and config.aliyun is not None:
        return AliyunVoice(config.aliyun, client=client, play_times=play_times, timeout=timeout, clock=clock)
    if config.provider == "tencent" and config.tencent is not None:
        return TencentVoice(config.tencent, client=client, play_times=play_times, timeout=timeout, clock=clock)
    raise ValueError(f"voice channel {config.name}: provider {config.provider} has no settings")


def _recipients(recipients: Sequence[str]) -> dict[str, str]:
    """Number to call -> the recipient as the rules wrote it (what the delivery records and caps)."""
    found: dict[str, str] = {}
    for recipient in recipients:
        for number in sms_numbers([recipient]):
            found.setdefault(number, recipient)
    return found


class VoiceChannel:
    """A voice channel over one provider. The `client` is shared and owned by the caller."""

    type: str = "voice"

    def __init__(
        self,
        config: VoiceChannelConfig,
        *,
        client: httpx.AsyncClient,
        clock: Clock = time.time,
        provider: VoiceProvider | None = None,
    ) -> None:
        self.name = config.name
        self.config = config
        self._provider = provider or _provider(config, client, clock)
        self._secrets = _secrets(config)
        protect_logs(*self._secrets)

    async def send(self, notification: Notification) -> None:
        if all(item.resolved for item in notification.items):
            # The delivery loop never makes such a delivery (`VoiceChannelConfig.wants`); say so if one comes.
            raise ChannelError(f"voice {self.name}: nobody is called about a resolved incident", permanent=True,
                               code="resolved")  # fmt: skip
        numbers = _recipients(notification.recipients)
        if not numbers:
            raise ChannelError(f"voice {self.name}: no phone numbers to call", permanent=True, code="no-recipients")
        params = voice_params(notification, self.config.params, self.config.param_max_length)
        reference = str(notification.delivery_id) if notification.delivery_id is not None else None
        reached: list[str] = []
        failed: list[tuple[str, ChannelError]] = []
        for number, recipient in numbers.items():
            try:
                call_id = await self._provider.call(number, params, reference=reference)
            except ChannelError as exc:
                failed.append((number, exc))
                continue
            reached.append(recipient)
            log.info("voice %s: %s placed a call to %s (call %s)", self.name, self.config.provider,
                     mask_number(number), call_id or "?")  # fmt: skip
        if failed:
            raise self._failure(failed, reached, len(numbers))

    def _failure(self, failed: list[tuple[str, ChannelError]], reached: list[str], total: int) -> ChannelError:
        """One error for the calls that failed: permanent only if every one was, rate-limited if any was;
        its message says how many calls went out and quotes the first failure, secrets removed."""
        number, first = failed[0]
        errors = [e for _, e in failed]
        rate_limited = any(e.rate_limited for e in errors)
        permanent = all(e.permanent for e in errors)
        message = f"voice {self.name}: {len(reached)} of {total} called; {mask_number(number)}: {first.message}"
        code = next((e.code for e in errors if e.rate_limited), None) if rate_limited else first.code
        return ChannelError(
            redact(message, self._secrets),
            permanent=permanent,
            rate_limited=rate_limited,
            retry_after=first.retry_after,
            code=code,
            reached=tuple(reached),
        )

    async def aclose(self) -> None:
        """Nothing to close: the HTTP client belongs to whoever made it."""

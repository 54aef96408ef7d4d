"""What one delivery says, before a channel renders it: the notification, which template it is told with,
who it pings, and the words of its receiver's language."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from alertrouter.message.i18n import Locale
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.message.vocabulary import MessageKind
from alertrouter.message.words import Words, words_for

__all__ = ["Mentions", "MessageKind", "Notification"]


@dataclass(frozen=True, slots=True)
class Mentions:
    """Who a chat message should ping (DingTalk `at`, WeCom `mentioned_mobile_list` / `<@userid>`)."""

    mobiles: tuple[str, ...] = ()
    user_ids: tuple[str, ...] = ()
    all: bool = False

    def __bool__(self) -> bool:
        return bool(self.mobiles or self.user_ids or self.all)


@dataclass(frozen=True, slots=True)
class Notification:
    """What one delivery says, before a channel renders it.

    `items` are the engine's outbox snapshots (see `pipeline.incident.message_snapshot`): one, or several
    when coalesced, worst severity first. `link` points at the incident page (for coalesced messages,
    at the notifications list). `recipients`: phone numbers for SMS, addresses for email.
    `ack_link` / `silence_link`: signed, expiring, single-use links that acknowledge the incident or
    silence it for `silence_for` (see `alertrouter.auth.links`); set only on messages about one firing
    incident, and never put in an SMS.
    """

    kind: MessageKind
    receiver: str
    severity: str
    items: tuple[MessageSnapshot, ...]
    link: str | None = None
    mentions: Mentions = field(default_factory=Mentions)
    recipients: tuple[str, ...] = ()
    created_at: datetime | None = None
    delivery_id: int | None = None
    ack_link: str | None = None
    silence_link: str | None = None
    silence_for: timedelta | None = None
    locale: Locale | None = None  # the receiver's language and time zone; None: the renderer's defaults
    runbook_link: str | None = None  # an alert's runbook_url on a host of `global.runbook_hosts`
    _words: Words | None = field(default=None, compare=False, repr=False)  # `words`, once asked

    @property
    def first(self) -> MessageSnapshot:
        return self.items[0]

    @property
    def words(self) -> Words:
        """The words of the receiver's language (English without a locale), asked for once: kept, and
        carried by `dataclasses.replace` into a variant of the notification (a card without its links)."""
        language = (self.locale or Locale()).language
        if self._words is None or self._words.language != language:
            object.__setattr__(self, "_words", words_for(language))  # a cache of a frozen value's derivative
        assert self._words is not None
        return self._words

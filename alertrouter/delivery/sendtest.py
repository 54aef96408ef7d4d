"""`alertrouter send-test RECEIVER`: one sample message through each of a receiver's real channels."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from alertrouter.channels.base import ChannelError, Mentions, MessageKind, Notification
from alertrouter.channels.registry import build_channel
from alertrouter.message.facts import NodeFacts, Tally
from alertrouter.message.i18n import Locale, translations
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.model import AlertStatus, IncidentKind, utcnow
from alertrouter.pipeline.throttle import NotifyReason
from alertrouter.render.templates import Templates
from alertrouter.ruleset import Ruleset
from alertrouter.ruleset.build import unconfigured_channels

__all__ = ["TestResult", "send_test", "test_notification"]


@dataclass(frozen=True, slots=True)
class TestResult:
    channel: str
    type: str
    error: str | None  # None: the vendor accepted it


def test_notification(
    receiver: str,
    *,
    link: str | None,
    mentions: Mentions,
    recipients: tuple[str, ...],
    locale: Locale | None,
) -> Notification:
    now = utcnow()
    tr = translations((locale or Locale()).language)
    item = MessageSnapshot(
        incident="alertrouter/send-test",
        kind=IncidentKind.NODE,
        reason=NotifyReason.FIRST,
        status=AlertStatus.FIRING,
        severity="info",
        headline=tr.gettext("alertrouter test message for receiver %(receiver)s") % {"receiver": receiver},
        labels={"alertname": "AlertrouterSendTest", "receiver": receiver},
        summary=NodeFacts(tally=Tally(alerts=1, firing=1)),
        opened_at=now,
        at=now,
    )
    return Notification(
        kind=MessageKind.FIRING,
        receiver=receiver,
        severity="info",
        items=(item,),
        link=link,
        mentions=mentions,
        recipients=recipients,
        created_at=now,
        locale=locale,
    )


async def send_test(ruleset: Ruleset, receiver: str, *, templates: Templates) -> list[TestResult]:
    """Send now, bypassing the outbox, rate budget and retries: a person checking a robot wants the
    vendor's answer, not a queued row. Raises KeyError for an unknown receiver."""
    config = next((r for r in ruleset.receivers if r.name == receiver), None)
    if config is None:
        raise KeyError(receiver)
    channels = {c.name: c for c in ruleset.channels}
    missing = unconfigured_channels(ruleset)
    link = ruleset.global_.external_url
    results = []
    async with httpx.AsyncClient() as client:
        for ref in config.channels:
            cfg = channels[ref.channel]
            if cfg.name in missing:
                results.append(TestResult(cfg.name, cfg.type, f"not configured: {', '.join(missing[cfg.name])} empty"))
                continue
            channel = build_channel(cfg, client=client, renderer=templates)
            m = ref.mentions
            recipients = tuple(ref.to) or tuple(getattr(cfg, "to", ()) or ())
            notification = test_notification(
                receiver,
                link=link,
                mentions=Mentions(tuple(m.mobiles), tuple(m.user_ids), m.all),
                recipients=recipients,
                locale=ruleset.locale(receiver),
            )
            try:
                await channel.send(notification)
                results.append(TestResult(cfg.name, cfg.type, None))
            except ChannelError as exc:
                kind = "permanent" if exc.permanent else "rate limited" if exc.rate_limited else "transient"
                results.append(TestResult(cfg.name, cfg.type, f"{exc.message} ({kind})"))
            finally:
                await channel.aclose()
    return results

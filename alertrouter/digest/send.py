"""The digest orchestrator: claim a receiver's week, gather, render, send, record the outcome.

The claim is committed before any work, so a second scheduler (or a second leader) finds the period
taken. A crash after the claim leaves it `running`; once `claimed_until` passes the next attempt
takes it over, so a digest is sent at least once, and twice only if the crash falls between the SMTP
server accepting the message and the run being marked done (the Message-ID is the same both times,
so mail systems that deduplicate by it show one).
"""

from __future__ import annotations

import asyncio
import logging
import re
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from email.message import EmailMessage
from email.utils import parseaddr
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo

from alertrouter.channels.base import ChannelError
from alertrouter.channels.email import InlineImage, build_email, smtp_send
from alertrouter.digest.charts import draw_charts
from alertrouter.digest.jobs import job_weeks
from alertrouter.digest.period import week_bounds
from alertrouter.digest.rma import gpu_match
from alertrouter.digest.stats import week_rows
from alertrouter.digest.summarize import Labelling, summarize
from alertrouter.digest.types import DigestStats
from alertrouter.digest.view import RenderedDigest, render_digest
from alertrouter.message.i18n import DEFAULT_LANGUAGE
from alertrouter.model import RunResult, RunStatus, utcnow
from alertrouter.pipeline import aliases
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.render.templates import Templates
from alertrouter.ruleset import Ruleset
from alertrouter.ruleset.build import unconfigured_channels
from alertrouter.ruleset.channels import EmailChannelConfig
from alertrouter.ruleset.receivers import DigestConfig
from alertrouter.ruleset.rma import rma_rules
from alertrouter.ruleset.schedule import Schedule, parse_schedule, zone
from alertrouter.store import Database
from alertrouter.store.digest import read_week
from alertrouter.store.jobs import week_hits
from alertrouter.store.nodes import load_node_aliases
from alertrouter.store.runs import claim_run, finish_run, get_run

__all__ = ["MAX_ATTEMPTS", "DigestRunner", "DigestTarget", "RunOutcome", "digest_targets", "job_name"]

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 8
CLAIM_TTL = timedelta(minutes=10)  # longer than gathering, rendering and the SMTP timeout together
_RETRY_BASE, _RETRY_MAX = timedelta(minutes=5), timedelta(hours=6)


@dataclass(frozen=True, slots=True)
class DigestTarget:
    receiver: str
    config: DigestConfig
    channel: EmailChannelConfig | None  # None: unconfigured (no SMTP host in this deployment)
    channel_name: str
    schedule: Schedule
    tz: ZoneInfo  # the digest's own `timezone`, else the receiver's, else `global.timezone`
    language: str = DEFAULT_LANGUAGE  # the receiver's, else `global.language`

    @property
    def job(self) -> str:
        return job_name(self.receiver)

    @property
    def recipients(self) -> list[str]:
        return [a for a in (self.config.to or (self.channel.to if self.channel else [])) if a]


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """`result`: sent, unconfigured, failed, or claimed (someone else has or had it)."""

    result: RunResult
    period: str
    detail: dict[str, Any] = field(default_factory=dict)


def job_name(receiver: str) -> str:
    return f"digest:{receiver}"


def digest_targets(ruleset: Ruleset) -> list[DigestTarget]:
    """Every receiver with a `digest:` block (already validated by `compile_rules`)."""
    channels = {c.name: c for c in ruleset.channels}
    unconfigured = unconfigured_channels(ruleset)
    out = []
    for receiver in ruleset.receivers:
        if receiver.digest is None:
            continue
        cfg = channels.get(receiver.digest.channel)
        channel = cfg if isinstance(cfg, EmailChannelConfig) and cfg.name not in unconfigured else None
        d, locale = receiver.digest, ruleset.locale(receiver.name)
        tz = zone(d.timezone or locale.timezone)
        out.append(DigestTarget(receiver.name, d, channel, d.channel, parse_schedule(d.schedule), tz, locale.language))
    return out


def _message_id(target: DigestTarget, period: str, sender: str, resend: datetime | None) -> str:
    domain = parseaddr(sender)[1].rpartition("@")[2] or "alertrouter.invalid"
    name = re.sub(r"[^A-Za-z0-9.-]+", "-", target.receiver)
    suffix = f".resend-{resend:%Y%m%dT%H%M%S}" if resend is not None else ""
    return f"<alertrouter-digest.{period}.{name}{suffix}@{domain}>"


async def send_email(config: EmailChannelConfig, message: EmailMessage, *, ssl_context: ssl.SSLContext | None) -> None:
    """The digest through the receiver's email channel; refused recipients are logged, not retried
    (the others have it)."""
    refused = await smtp_send(config, message, ssl_context=ssl_context)
    if refused:
        log.warning("digest via %s: refused for %s", config.name, ", ".join(sorted(refused)))


class DigestRunner:
    def __init__(
        self,
        db: Database,
        ruleset: Ruleset,
        pipeline: CompiledRules,
        *,
        templates: Templates,
        holder: str,
        clock: Callable[[], datetime] = utcnow,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._db = db
        self._templates = templates
        self.holder = holder
        self._clock = clock
        self._ssl_context = ssl_context
        self.targets = {t.receiver: t for t in digest_targets(ruleset)}
        self._nodes = pipeline.nodes
        self._global = ruleset.global_
        self._rma = rma_rules(ruleset.rma)
        self._jobs = ruleset.jobs is not None

    def _labelling(self, learned: dict[str, str]) -> Labelling:
        g = self._global
        return Labelling(
            enrich=replace(self._nodes, learned=learned).enrich,
            node_label=g.node_label,
            severity_label=g.severity_label,
            severities=g.severities,
        )

    async def stats(self, target: DigestTarget | None, period: str, tz: ZoneInfo) -> DigestStats:
        """Nodes are named as the engine names them now: with the learned aliases in force (a NodeDown
        scraped by IP counts for its node, not for its address)."""
        start, end = week_bounds(period, tz)
        read_at = self._clock()
        async with self._db.read() as session:
            week = await read_week(session, start=start, end=end, gpus=gpu_match(self._rma))
            book = await load_node_aliases(session)
            jobs = await week_hits(session, start, end) if self._jobs else None
        rows = week_rows(week, start=start, end=end, now=read_at)
        learned = aliases.active(book, now=self._clock(), ttl=self._nodes.learned_ttl)
        receiver = target.receiver if target is not None else None
        stats = summarize(
            rows, period=period, tz=tz, labelling=self._labelling(learned), receiver=receiver, rma=self._rma
        )
        if jobs is None:
            return stats
        return replace(stats, jobs=job_weeks(jobs, start=start, end=end, now=read_at))

    async def build(
        self,
        target: DigestTarget | None,
        period: str,
        *,
        tz: ZoneInfo | None = None,
        language: str | None = None,
        inline: bool = False,
    ) -> tuple[DigestStats, RenderedDigest]:
        """The digest of `period` for `target` (None: the whole cluster), rendered; `tz` and `language`
        default to the target's, else to `global`'s."""
        tz = tz or (target.tz if target else zone(self._global.timezone))
        language = language or (target.language if target else self._global.language)
        stats = await self.stats(target, period, tz)
        charts = await asyncio.to_thread(
            partial(draw_charts, language=language),
            stats.per_day,
            stats.severities,
            stats.noisiest_nodes,
            stats.noise,
        )
        rendered = render_digest(self._templates, stats, charts, now=self._clock(), inline=inline, language=language)
        return stats, rendered

    async def pending(self, target: DigestTarget, period: str) -> bool:
        """A plain read: whether `period` still needs a run now (never run, or failed or crashed and
        due for a retry). Saves the scheduler's tick a write, and a log line, when nothing is to do."""
        now = self._clock()
        async with self._db.read() as session:
            run = await get_run(session, job=target.job, period=period)
        if run is None:
            return True
        return run.status != RunStatus.DONE and run.claimed_until < now and run.attempts < MAX_ATTEMPTS

    async def run(self, target: DigestTarget, period: str, *, force: bool = False) -> RunOutcome:
        """Claim `period` for `target`'s digest and send it; `force` resends a period already done."""
        now = self._clock()
        taken = await self._claim(target, period, now=now, force=force)
        if taken is not None:
            return taken
        if force:
            log.warning("digest %s %s: resending on request (--force)", target.receiver, period)
        channel = target.channel
        if channel is None:
            detail = {"sent": False, "reason": RunResult.UNCONFIGURED, "channel": target.channel_name}
            await self._finish(target, period, RunStatus.DONE, detail)
            log.info(
                "digest %s %s: channel %s is unconfigured, recorded as not sent",
                target.receiver,
                period,
                target.channel_name,
            )
            return RunOutcome(RunResult.UNCONFIGURED, period, detail)
        try:
            stats, rendered, message = await self._send(target, channel, period, resend=now if force else None)
        except Exception as exc:
            return await self._failed(target, period, exc, now=now)
        detail = {
            "sent": True,
            "to": target.recipients,
            "channel": channel.name,
            "subject": rendered.subject,
            "message_id": str(message["Message-ID"]),
            "alerts": stats.totals.fired,
        }
        if not await self._finish(target, period, RunStatus.DONE, detail):
            log.warning("digest %s %s: sent, but the claim had expired and was taken over", target.receiver, period)
        log.info("digest %s %s: sent to %s via %s", target.receiver, period, ", ".join(target.recipients), channel.name)
        return RunOutcome(RunResult.SENT, period, detail)

    async def _claim(self, target: DigestTarget, period: str, *, now: datetime, force: bool) -> RunOutcome | None:
        """None when the run of `period` is ours now (committed before any work); else the outcome
        `claimed`, with who has or had it."""
        async with self._db.write() as session:
            claimed = await claim_run(
                session,
                job=target.job,
                period=period,
                holder=self.holder,
                now=now,
                until=now + CLAIM_TTL,
                max_attempts=MAX_ATTEMPTS,
                force=force,
            )
            existing = None if claimed else await get_run(session, job=target.job, period=period)
            await session.commit()
        if claimed:
            return None
        status = existing.status if existing is not None else "unknown"
        holder = existing.holder if existing is not None else "?"
        log.info("digest %s %s: not ours (%s by %s), skipped", target.receiver, period, status, holder)
        return RunOutcome(RunResult.CLAIMED, period, {"status": status, "holder": holder})

    async def _send(
        self, target: DigestTarget, channel: EmailChannelConfig, period: str, *, resend: datetime | None
    ) -> tuple[DigestStats, RenderedDigest, EmailMessage]:
        """Build `period`'s digest and mail it through `channel`; a resend (at `resend`) gets a Message-ID
        of its own. No recipients is a permanent failure, raised like any other."""
        if not target.recipients:
            raise ChannelError(f"digest {target.receiver}: no recipients", permanent=True)
        stats, rendered = await self.build(target, period)
        message = build_email(
            sender=channel.from_,
            to=target.recipients,
            subject=rendered.subject,
            text=rendered.text,
            html=rendered.html,
            inline_images=[InlineImage(c.cid, c.png) for c in rendered.charts],
            date=self._clock(),
            message_id=_message_id(target, period, channel.from_, resend),
        )
        await send_email(channel, message, ssl_context=self._ssl_context)
        return stats, rendered, message

    async def _failed(self, target: DigestTarget, period: str, exc: Exception, *, now: datetime) -> RunOutcome:
        """Record the run as failed, due again after a backoff that doubles with each attempt (from the
        claim's `now`), and log why."""
        attempts = await self._attempts(target, period)
        retry_at = now + min(_RETRY_MAX, _RETRY_BASE * 2 ** max(0, attempts - 1))
        error = str(exc) or type(exc).__name__
        detail = {"sent": False, "reason": RunResult.FAILED, "retry_at": retry_at.isoformat()}
        await self._finish(target, period, RunStatus.FAILED, detail, error=error, retry_at=retry_at)
        log.error(
            "digest %s %s: failed (attempt %d of %d, next after %s): %s",
            target.receiver,
            period,
            attempts,
            MAX_ATTEMPTS,
            retry_at.isoformat(timespec="minutes"),
            error,
            exc_info=None if isinstance(exc, ChannelError | OSError) else exc,  # a bug here deserves its traceback
        )
        return RunOutcome(RunResult.FAILED, period, {**detail, "error": error})

    async def _attempts(self, target: DigestTarget, period: str) -> int:
        async with self._db.read() as session:
            run = await get_run(session, job=target.job, period=period)
        return run.attempts if run is not None else 1

    async def _finish(
        self,
        target: DigestTarget,
        period: str,
        status: RunStatus,
        detail: dict[str, Any],
        *,
        error: str | None = None,
        retry_at: datetime | None = None,
    ) -> bool:
        async with self._db.write() as session:
            ok = await finish_run(
                session,
                job=target.job,
                period=period,
                holder=self.holder,
                now=self._clock(),
                status=status,
                detail=detail,
                error=error,
                retry_at=retry_at,
            )
            await session.commit()
        return ok

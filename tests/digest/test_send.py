"""Sending a digest: the email's parts, the per-period claim (two runners racing, a crashed run, a
failed one, --force), and an unconfigured channel, against a local aiosmtpd sink."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from pathlib import Path
from typing import cast

import pytest
from sqlalchemy import select

from alertrouter.digest.send import DigestRunner
from alertrouter.render.templates import Templates
from alertrouter.ruleset import Ruleset, load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.store import Database
from alertrouter.store.tables import ScheduledRunRow
from support.fakes.smtp import FakeSmtp

NOW = datetime(2026, 11, 23, 1, 30, tzinfo=UTC)  # Monday 09:30 in Shanghai: W47 is due
WEEK = "2026-W47"
JOB = "digest:digest"


def rules(tmp_path: Path, port: int, host: str = "127.0.0.1") -> Ruleset:
    (tmp_path / "rules.yml").write_text(
        f"""\
route: {{receiver: digest}}
receivers:
  - name: digest
    digest: {{channel: mail, to: [ops@example.com, lead@example.com], timezone: Asia/Shanghai}}
channels:
  - {{name: mail, type: email, host: "{host}", port: {port}, security: none, from: alertrouter@example.com}}
"""
    )
    return load_ruleset(tmp_path, env={})


def runner(db: Database, ruleset: Ruleset, holder: str, now: datetime = NOW) -> DigestRunner:
    return DigestRunner(db, ruleset, compile_rules(ruleset), templates=Templates(), holder=holder, clock=lambda: now)


@pytest.fixture
def sink() -> Iterator[FakeSmtp]:
    with FakeSmtp() as smtp:
        yield smtp


async def runs(db: Database) -> list[ScheduledRunRow]:
    async with db.read() as session:
        return list((await session.scalars(select(ScheduledRunRow))).all())


async def test_email_is_text_plus_html_with_inline_charts(db: Database, sink: FakeSmtp, tmp_path: Path) -> None:
    r = runner(db, rules(tmp_path, sink.port), "a")
    outcome = await r.run(r.targets["digest"], WEEK)
    assert outcome.result == "sent"
    (message,) = sink.messages
    assert sink.envelopes[0].rcpt_tos == ("ops@example.com", "lead@example.com")
    assert message["Subject"].startswith("Weekly alert digest 2026-W47: 0 alerts")
    assert message["Message-ID"] == "<alertrouter-digest.2026-W47.digest@example.com>"
    assert message.get_content_type() == "multipart/alternative"
    text, related = cast(list[EmailMessage], message.get_payload())
    assert text.get_content_type() == "text/plain"
    assert "Weekly alert digest 2026-W47" in text.get_content()
    assert related.get_content_type() == "multipart/related"
    html, *images = cast(list[EmailMessage], related.get_payload())
    assert html.get_content_type() == "text/html"
    body = html.get_content()
    assert "<script" not in body.lower()
    assert [i.get_content_type() for i in images] == ["image/png"] * 3
    for image in images:
        cid = image["Content-ID"].strip("<>")
        assert f'src="cid:{cid}"' in body
        assert image.get_content().startswith(b"\x89PNG")
    (run,) = await runs(db)
    assert (run.job, run.period, run.status, run.holder, run.attempts) == (JOB, WEEK, "done", "a", 1)
    assert run.detail is not None
    assert run.detail["sent"] is True
    assert run.detail["to"] == ["ops@example.com", "lead@example.com"]


async def test_two_runners_racing_send_one_email(db: Database, sink: FakeSmtp, tmp_path: Path) -> None:
    """Two replicas (separate engines and pools on one database), both past the lease: the claim decides."""
    ruleset = rules(tmp_path, sink.port)
    other = Database(str(db.url.render_as_string(hide_password=False)))
    try:
        a, b = runner(db, ruleset, "a"), runner(other, ruleset, "b")
        outcomes = await asyncio.gather(*(x.run(x.targets["digest"], WEEK) for x in (a, b, a, b)))
    finally:
        await other.dispose()
    assert sorted(o.result for o in outcomes) == ["claimed", "claimed", "claimed", "sent"]
    assert len(sink.messages) == 1
    (run,) = await runs(db)
    assert (run.status, run.attempts) == ("done", 1)


async def test_crashed_run_is_retried_after_its_claim_expires(db: Database, sink: FakeSmtp, tmp_path: Path) -> None:
    ruleset = rules(tmp_path, sink.port)
    async with db.write() as session:
        session.add(
            ScheduledRunRow(
                job=JOB,
                period=WEEK,
                status="running",
                holder="crashed",
                claimed_until=NOW + timedelta(minutes=3),
                attempts=1,
                started_at=NOW - timedelta(minutes=7),
            )
        )
        await session.commit()
    early = runner(db, ruleset, "b")
    assert not await early.pending(early.targets["digest"], WEEK)
    assert (await early.run(early.targets["digest"], WEEK)).result == "claimed"  # the claim still holds
    assert sink.messages == []
    later = runner(db, ruleset, "b", now=NOW + timedelta(minutes=4))
    assert await later.pending(later.targets["digest"], WEEK)
    assert (await later.run(later.targets["digest"], WEEK)).result == "sent"
    assert len(sink.messages) == 1
    (run,) = await runs(db)
    assert (run.status, run.holder, run.attempts) == ("done", "b", 2)


async def test_failed_send_is_recorded_and_retried_later(db: Database, sink: FakeSmtp, tmp_path: Path) -> None:
    ruleset = rules(tmp_path, sink.port)
    sink.fail_next("451 4.3.0 Try again later")
    first = runner(db, ruleset, "a")
    outcome = await first.run(first.targets["digest"], WEEK)
    assert outcome.result == "failed"
    assert "451" in outcome.detail["error"]
    (run,) = await runs(db)
    assert run.status == "failed"
    assert run.claimed_until == NOW + timedelta(minutes=5)  # the first retry waits 5 minutes
    assert not await first.pending(first.targets["digest"], WEEK)
    retry = runner(db, ruleset, "a", now=NOW + timedelta(minutes=5, seconds=1))
    assert await retry.pending(retry.targets["digest"], WEEK)
    assert (await retry.run(retry.targets["digest"], WEEK)).result == "sent"
    assert len(sink.messages) == 1


async def test_done_is_final_unless_forced(db: Database, sink: FakeSmtp, tmp_path: Path) -> None:
    r = runner(db, rules(tmp_path, sink.port), "a")
    target = r.targets["digest"]
    assert (await r.run(target, WEEK)).result == "sent"
    assert not await r.pending(target, WEEK)
    assert (await r.run(target, WEEK)).result == "claimed"
    assert (await r.run(target, WEEK, force=True)).result == "sent"
    assert len(sink.messages) == 2
    assert sink.messages[0]["Message-ID"] != sink.messages[1]["Message-ID"]  # a resend is a new message
    (run,) = await runs(db)
    assert run.attempts == 2


async def test_unconfigured_channel_is_recorded_not_sent(db: Database, tmp_path: Path) -> None:
    r = runner(db, rules(tmp_path, 25, host=""), "a")
    target = r.targets["digest"]
    assert target.channel is None
    assert (await r.run(target, WEEK)).result == "unconfigured"
    (run,) = await runs(db)
    assert run.status == "done"
    assert run.detail == {"sent": False, "reason": "unconfigured", "channel": "mail"}
    assert not await r.pending(target, WEEK)  # no retry loop

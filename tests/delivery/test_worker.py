"""The delivery loop against real databases, with scripted in-process channels: retries, dead letters,
rate budget and coalescing, the vendor's block, failover, crash recovery and two replicas."""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from alertrouter.auth.links import ACTION_PATH, LINK_PURPOSE, Action, ActionToken, read_action
from alertrouter.auth.signing import Signer, TokenError
from alertrouter.channels.base import ChannelError, Notification
from alertrouter.delivery.expand import ActionLinks
from alertrouter.delivery.worker import DeliveryWorker
from alertrouter.message.i18n import Locale
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.pipeline.throttle import NotifyReason
from alertrouter.pipeline.types import Intent
from alertrouter.ruleset.schema import Ruleset
from alertrouter.store import Database
from alertrouter.store.incidents import insert_intents
from alertrouter.store.tables import ChannelStateRow, DeliveryAttemptRow, DeliveryRow, IncidentRow, OutboxRow

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
S = timedelta(seconds=1)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


class ScriptedChannel:
    """Answers from a script (None = accepted, an exception = that failure), then accepts."""

    def __init__(self, name: str, type_: str = "dingtalk", script: Sequence[Exception | None] = ()) -> None:
        self.name, self.type = name, type_
        self.script: deque[Exception | None] = deque(script)
        self.sent: list[Notification] = []
        self.seen: list[Notification] = []  # every notification it was given, accepted or not
        self.calls = 0

    async def send(self, notification: Notification) -> None:
        self.calls += 1
        self.seen.append(notification)
        if self.script:
            error = self.script.popleft()
            if error is not None:
                raise error
        self.sent.append(notification)

    async def aclose(self) -> None:
        pass


def ruleset(**channel_overrides: Any) -> Ruleset:
    robot: dict[str, Any] = {
        "name": "robot",
        "type": "dingtalk",
        "access_token": "tok",
        "rate_limit": {"messages": 5, "per": "1m", "block": "10m"},
        "retry": {"initial": "10s", "max": "5m", "give_up_after": "1h"},
        **channel_overrides,
    }
    return Ruleset.model_validate(
        {
            "global": {"external_url": "http://ar.example"},
            "channels": [
                robot,
                {"name": "backup", "type": "dingtalk", "access_token": "tok2"},
                {
                    "name": "sms",
                    "type": "sms",
                    "provider": "generic",
                    "generic": {"url": "http://sms.example"},
                    "daily_cap_per_number": 2,
                },
                {"name": "unset", "type": "wecom", "key": ""},
            ],
            "receivers": [
                {"name": "oncall", "channels": [{"channel": "robot", "mentions": {"mobiles": ["13800000000"]}}]},
                {"name": "pager", "channels": [{"channel": "sms", "to": ["+8613800000000"]}]},
                {"name": "quiet", "channels": ["unset"]},
                {"name": "digest"},
            ],
        }
    )


def intent(n: int, receiver: str = "oncall", severity: str = "critical", reason: str = "first") -> Intent:
    return Intent(
        f"rule/GPUHighTemp/gpu-node-{n:02d}",
        receiver,
        NotifyReason(reason),
        MessageSnapshot.from_json(
            {
                "incident": f"rule/GPUHighTemp/gpu-node-{n:02d}",
                "kind": "node",
                "reason": reason,
                "status": "resolved" if reason == "resolved" else "firing",
                "severity": severity,
                "headline": f"gpu-node-{n:02d}: GPUHighTemp on 1/8 GPUs",
                "labels": {"alertname": "GPUHighTemp", "node": f"gpu-node-{n:02d}", "severity": severity},
                "summary": {},
                "alerts": [],
                "opened_at": T0.isoformat(),
                "at": T0.isoformat(),
            }
        ),
    )


async def add(db: Database, intents: list[Intent], at: datetime = T0) -> None:
    async with db.write() as s:
        await insert_intents(s, intents, at)
        await s.commit()


async def deliveries(db: Database) -> list[DeliveryRow]:
    async with db.read() as s:
        return list((await s.scalars(select(DeliveryRow).order_by(DeliveryRow.id))).all())


async def attempts(db: Database) -> list[DeliveryAttemptRow]:
    async with db.read() as s:
        return list((await s.scalars(select(DeliveryAttemptRow).order_by(DeliveryAttemptRow.id))).all())


def worker(
    db: Database, rules: Ruleset, channels: dict[str, ScriptedChannel], clock: Clock, **kw: Any
) -> DeliveryWorker:
    return DeliveryWorker(db, rules, channels, clock=clock, rng=random.Random(0), **kw)


def headlines(channel: ScriptedChannel) -> list[list[str]]:
    return [[i.headline for i in n.items] for n in channel.sent]


async def test_outbox_becomes_one_delivery_per_channel_and_is_sent_once(db: Database) -> None:
    clock, rules = Clock(), ruleset()
    robot = ScriptedChannel("robot")
    w = worker(db, rules, {"robot": robot}, clock)
    await add(db, [intent(1), intent(2, receiver="digest"), intent(3, receiver="quiet")])
    await w.run_once()
    await w.run_once()
    assert headlines(robot) == [["gpu-node-01: GPUHighTemp on 1/8 GPUs"]]
    sent = robot.sent[0]
    assert sent.mentions.mobiles == ("13800000000",)
    assert sent.link is not None
    assert sent.link.startswith("http://ar.example/incidents")
    rows = await deliveries(db)
    assert [(r.channel, r.status) for r in rows] == [("robot", "sent"), ("unset", "unconfigured")]
    async with db.read() as s:
        statuses = sorted((await s.scalars(select(OutboxRow.status))).all())
    assert statuses == ["dispatched", "dispatched", "no_channels"]
    (attempt,) = await attempts(db)
    assert attempt.outcome == "sent"
    assert attempt.finished_at is not None


async def test_each_notification_carries_its_receivers_language_and_time_zone(db: Database) -> None:
    data = ruleset().model_dump(by_alias=True)
    data["global"] |= {"language": "zh-CN", "timezone": "Asia/Shanghai"}
    data["receivers"][1] |= {"language": "en", "timezone": "Europe/Berlin"}
    rules = Ruleset.model_validate(data)
    clock, robot, sms = Clock(), ScriptedChannel("robot"), ScriptedChannel("sms", "sms")
    w = worker(db, rules, {"robot": robot, "sms": sms}, clock)
    await add(db, [intent(1), intent(2, receiver="pager")])
    await w.run_once()
    assert [n.locale for n in robot.sent] == [Locale("zh-CN", "Asia/Shanghai")]
    assert [n.locale for n in sms.sent] == [Locale("en", "Europe/Berlin")]


async def test_transient_failure_retries_with_backoff_then_sends(db: Database) -> None:
    clock, rules = Clock(), ruleset()
    robot = ScriptedChannel("robot", script=[ChannelError("HTTP 502"), ChannelError("timed out")])
    w = worker(db, rules, {"robot": robot}, clock)
    await add(db, [intent(1)])
    await w.run_once()
    (row,) = await deliveries(db)
    assert (row.status, row.attempts, row.last_error) == ("pending", 1, "HTTP 502")
    first_wait = row.next_attempt_at - clock.now
    assert 5 * S <= first_wait <= 10 * S
    await w.run_once()  # not due yet: nothing is sent
    assert robot.calls == 1
    clock.now = row.next_attempt_at
    await w.run_once()
    (row,) = await deliveries(db)
    assert (row.status, row.attempts) == ("pending", 2)
    assert row.next_attempt_at - clock.now > first_wait / 2
    clock.now = row.next_attempt_at
    await w.run_once()
    (row,) = await deliveries(db)
    assert (row.status, row.attempts) == ("sent", 3)
    assert [a.outcome for a in await attempts(db)] == ["retry", "retry", "sent"]
    assert len(robot.sent) == 1


async def test_permanent_failure_is_a_dead_letter_without_retry_storm(db: Database) -> None:
    clock, rules = Clock(), ruleset()
    robot = ScriptedChannel("robot", script=[ChannelError("errcode 310000 sign mismatch", permanent=True)] * 10)
    w = worker(db, rules, {"robot": robot}, clock)
    await add(db, [intent(n) for n in range(1, 5)])
    for _ in range(5):
        await w.run_once()
        clock.now += 10 * S
    assert robot.calls == 1  # the channel waits `retry.max` before probing again
    rows = await deliveries(db)
    assert [r.status for r in rows] == ["dead", "pending", "pending", "pending"]
    async with db.read() as s:
        state = (await s.scalars(select(ChannelStateRow))).one()
    assert not state.healthy
    assert state.last_error == "errcode 310000 sign mismatch"


@pytest.mark.parametrize(
    ("failure", "calls", "statuses"),
    [
        (ChannelError("HTTP 503"), 1, ["pending"] * 4),  # the network's: the next would meet the same
        (ChannelError("errcode 130101 send too fast", rate_limited=True), 1, ["pending"] * 4),
        (ValueError("template broke on a label value"), 4, ["pending", "sent", "sent", "sent"]),  # its own
    ],
    ids=["transient", "rate-limited", "unexpected"],
)
async def test_a_vendor_failure_ends_the_pass_a_message_failure_does_not(
    db: Database, failure: Exception, calls: int, statuses: list[str]
) -> None:
    clock, rules = Clock(), ruleset()
    robot = ScriptedChannel("robot", script=[failure])
    w = worker(db, rules, {"robot": robot}, clock)
    await add(db, [intent(n) for n in range(1, 5)])
    await w.run_once()
    assert robot.calls == calls
    assert [r.status for r in await deliveries(db)] == statuses


async def test_gives_up_after_the_configured_time(db: Database) -> None:
    clock, rules = Clock(), ruleset()
    robot = ScriptedChannel("robot", script=[ChannelError("HTTP 503")] * 100)
    w = worker(db, rules, {"robot": robot}, clock)
    await add(db, [intent(1)])
    while clock.now < T0 + timedelta(hours=2):
        await w.run_once()
        clock.now += timedelta(minutes=1)
    (row,) = await deliveries(db)
    assert row.status == "dead"
    assert row.last_error == "HTTP 503"
    assert 10 < robot.calls < 30  # backoff capped at 5 minutes over the hour


async def test_short_budget_coalesces_highest_severity_first(db: Database) -> None:
    clock, rules = Clock(), ruleset()  # 5 messages a minute
    robot = ScriptedChannel("robot")
    w = worker(db, rules, {"robot": robot}, clock)
    await add(db, [intent(n) for n in range(1, 4)])
    await w.run_once()
    assert len(robot.sent) == 3  # fits the budget: one by one
    await add(db, [intent(10 + n, severity="warning") for n in range(3)] + [intent(20, severity="critical")])
    clock.now += S
    await w.run_once()
    (merged,) = robot.sent[3:]  # budget 2 for 4 pending: one coalesced message
    assert merged.kind.value == "coalesced"
    assert [i.severity for i in merged.items] == ["critical", "warning", "warning", "warning"]
    rows = await deliveries(db)
    parent = rows[-1]
    assert parent.kind == "coalesced"
    assert parent.status == "sent"
    members = [r for r in rows if r.parent_id == parent.id]
    assert len(members) == 4
    assert {m.status for m in members} == {"coalesced"}


async def test_no_budget_means_waiting_not_sending(db: Database) -> None:
    clock, rules = Clock(), ruleset()
    robot = ScriptedChannel("robot")
    w = worker(db, rules, {"robot": robot}, clock)
    for n in range(5):
        await add(db, [intent(n)])
        await w.run_once()
    await add(db, [intent(9)])
    await w.run_once()
    assert len(robot.sent) == 5  # 5 per minute
    clock.now += 61 * S
    await w.run_once()
    assert len(robot.sent) == 6


async def test_vendor_block_holds_the_backlog_then_sends_it_coalesced(db: Database) -> None:
    clock, rules = Clock(), ruleset()
    robot = ScriptedChannel("robot", script=[ChannelError("errcode 130101 send too fast", rate_limited=True)])
    w = worker(db, rules, {"robot": robot}, clock)
    await add(db, [intent(1)])
    await w.run_once()
    (row,) = await deliveries(db)
    assert row.status == "pending"
    assert row.next_attempt_at == T0 + timedelta(minutes=10)
    await add(db, [intent(2, severity="warning"), intent(3)])
    for _ in range(9):
        clock.now += timedelta(minutes=1)
        await w.run_once()
    assert robot.calls == 1  # blocked: not one request for ten minutes
    clock.now = T0 + timedelta(minutes=10, seconds=1)
    await w.run_once()
    (merged,) = robot.sent
    assert merged.kind.value == "coalesced"
    assert sorted(i.headline[:11] for i in merged.items) == ["gpu-node-01", "gpu-node-02", "gpu-node-03"]
    assert merged.items[-1].severity == "warning"


async def test_critical_fails_over_while_blocked(db: Database) -> None:
    clock, rules = Clock(), ruleset(failover="backup")
    robot = ScriptedChannel("robot", script=[ChannelError("errcode 130101", rate_limited=True)])
    backup = ScriptedChannel("backup")
    w = worker(db, rules, {"robot": robot, "backup": backup}, clock)
    await add(db, [intent(1)])
    await w.run_once()
    await add(db, [intent(2, severity="warning"), intent(3)])
    clock.now += S
    await w.run_once()
    clock.now += S
    await w.run_once()
    assert sorted(h for n in backup.sent for h in [n.items[0].headline[:11]]) == ["gpu-node-01", "gpu-node-03"]
    rows = await deliveries(db)
    assert sorted((r.channel, r.status) for r in rows) == [
        ("backup", "sent"),
        ("backup", "sent"),
        ("robot", "failed_over"),
        ("robot", "failed_over"),
        ("robot", "pending"),  # the warning waits for its own robot
    ]


async def test_sms_daily_cap_per_number(db: Database) -> None:
    clock, rules = Clock(), ruleset()
    sms = ScriptedChannel("sms", type_="sms")
    w = worker(db, rules, {"sms": sms}, clock)
    for n in range(4):
        await add(db, [intent(n, receiver="pager")])
        await w.run_once()
        clock.now += timedelta(hours=1)
    assert len(sms.sent) == 2
    assert sms.sent[0].recipients == ("+8613800000000",)
    assert [r.status for r in await deliveries(db)] == ["sent", "sent", "capped", "capped"]
    clock.now = T0 + timedelta(hours=25)
    await add(db, [intent(9, receiver="pager")])
    await w.run_once()
    assert len(sms.sent) == 3


async def test_a_crashed_send_is_retried_once_claim_expires(db: Database) -> None:
    clock, rules = Clock(), ruleset()
    await add(db, [intent(1)])

    class Hangs(ScriptedChannel):
        async def send(self, notification: Notification) -> None:
            await asyncio.sleep(3600)

    hung = worker(db, rules, {"robot": Hangs("robot")}, clock)
    task = asyncio.create_task(hung.run_once())
    for _ in range(200):
        await asyncio.sleep(0.01)
        if [r.status for r in await deliveries(db)] == ["sending"]:
            break
    task.cancel()  # the process died mid-send: the row stays `sending`, the lease stays taken
    robot = ScriptedChannel("robot")
    w = worker(db, rules, {"robot": robot}, clock)
    await w.run_once()
    assert robot.sent == []  # the claim has not expired yet
    clock.now += timedelta(minutes=2)
    await w.run_once()
    assert len(robot.sent) == 1
    assert [a.outcome for a in await attempts(db)] == ["lost", "sent"]


async def test_two_replicas_never_send_the_same_delivery(db: Database) -> None:
    clock, rules = Clock(), ruleset(rate_limit={"messages": 1000, "per": "1m", "block": "10m"})
    a, b = ScriptedChannel("robot"), ScriptedChannel("robot")
    wa = worker(db, rules, {"robot": a}, clock, holder="a")
    wb = worker(db, rules, {"robot": b}, clock, holder="b")
    await add(db, [intent(n) for n in range(40)])
    await asyncio.gather(wa.run_once(), wb.run_once())
    await asyncio.gather(wa.run_once(), wb.run_once())
    sent = [n.delivery_id for n in a.sent + b.sent]
    assert len(sent) == 40
    assert len(set(sent)) == 40
    assert len(await deliveries(db)) == 40


async def test_unknown_channel_parks_its_deliveries(db: Database) -> None:
    clock, rules = Clock(), ruleset()
    robot = ScriptedChannel("robot")
    await add(db, [intent(1)])
    w = worker(db, rules, {"robot": robot}, clock)
    await w.expand()
    renamed = Ruleset.model_validate(rules.model_dump(by_alias=True) | {"channels": rules.model_dump()["channels"][1:]})
    await worker(db, renamed, {}, clock).run_once()
    (row,) = await deliveries(db)
    assert (row.status, row.last_error) == ("dead", "the channel is no longer configured")


@pytest.mark.parametrize("secret", ["tok-SECRET-1234"])
async def test_errors_are_recorded_without_secrets(db: Database, secret: str) -> None:
    clock, rules = Clock(), ruleset(access_token=secret)
    robot = ScriptedChannel("robot", script=[ChannelError("errcode 300001 token missing", permanent=True)])
    w = worker(db, rules, {"robot": robot}, clock)
    await add(db, [intent(1)])
    await w.run_once()
    for row in await deliveries(db):
        assert secret not in repr(row.message)
        assert secret not in (row.last_error or "")


# -- acknowledge / silence links ----------------------------------------------------------------------

LINK_KEY = "link-test-key-4f1c9a7e2b"
TTL = timedelta(hours=6)


def signing(
    w: DeliveryWorker,
    key: str = LINK_KEY,
    *,
    ttl: timedelta = timedelta(hours=24),
    silence: timedelta = timedelta(hours=1),
) -> DeliveryWorker:
    """`w` with the action links the app's startup gives it (the settings' defaults unless told)."""
    w.actions = ActionLinks(Signer(key, LINK_PURPOSE), ttl, silence)
    return w


async def add_incident(db: Database, n: int) -> int:
    """The incident row of `intent(n)` (the engine writes it in production); returns its id."""
    row = IncidentRow(
        key=f"rule/GPUHighTemp/gpu-node-{n:02d}", kind="node", rule="rule", status="firing", severity="critical",
        headline=f"gpu-node-{n:02d}: GPUHighTemp on 1/8 GPUs", labels={}, summary={}, parent_key=None,
        opened_at=T0, active_since=T0, updated_at=T0, resolved_at=None, acknowledged_at=None, acknowledged_by=None,
    )  # fmt: skip
    async with db.write() as s:
        s.add(row)
        await s.flush()
        incident_id = row.id
        await s.commit()
    return incident_id


def read(link: str | None, now: datetime, key: str = LINK_KEY) -> ActionToken:
    assert link is not None
    base, _, token = link.partition(ACTION_PATH)
    assert base == "http://ar.example"
    return read_action(Signer(key, LINK_PURPOSE), token, now=now)


async def test_firing_message_links_verify_name_the_incident_and_expire_after_link_ttl(db: Database) -> None:
    clock, rules = Clock(), ruleset()
    robot = ScriptedChannel("robot")
    w = signing(worker(db, rules, {"robot": robot}, clock), ttl=TTL, silence=timedelta(minutes=90))
    incident_id = await add_incident(db, 1)
    await add(db, [intent(1)])
    clock.now += 7 * S  # sent later than queued: the links count from the send
    await w.run_once()
    (sent,) = robot.sent
    ack, silence = read(sent.ack_link, clock.now), read(sent.silence_link, clock.now)
    assert (ack.action, ack.incident_id) == (Action.ACK, incident_id)
    assert (silence.action, silence.incident_id) == (Action.SILENCE, incident_id)
    assert ack.expires_at == silence.expires_at == clock.now + TTL
    assert ack.nonce != silence.nonce
    assert sent.silence_for == timedelta(minutes=90)
    assert read(sent.ack_link, clock.now + TTL - S).nonce == ack.nonce  # still good a second before
    for link in (sent.ack_link, sent.silence_link):
        with pytest.raises(TokenError, match="expired"):
            read(link, clock.now + TTL)
        with pytest.raises(TokenError, match="signature"):
            read(link, clock.now, key="another-deployments-key-00")


async def test_a_token_with_one_changed_character_is_refused(db: Database) -> None:
    clock, rules = Clock(), ruleset()
    robot = ScriptedChannel("robot")
    w = signing(worker(db, rules, {"robot": robot}, clock))
    await add_incident(db, 1)
    await add(db, [intent(1)])
    await w.run_once()
    (sent,) = robot.sent
    assert sent.ack_link is not None
    token = sent.ack_link.partition(ACTION_PATH)[2]
    signer = Signer(LINK_KEY, LINK_PURPOSE)
    read_action(signer, token, now=clock.now)
    dot = token.index(".")
    for i in (0, dot // 2, dot - 1, dot, dot + 1, len(token) - 1):  # payload, separator, signature
        forged = token[:i] + ("A" if token[i] != "A" else "B") + token[i + 1 :]
        with pytest.raises(TokenError):
            read_action(signer, forged, now=clock.now)


async def test_every_delivery_and_every_retry_gets_its_own_nonces(db: Database) -> None:
    clock, rules = Clock(), ruleset()
    robot = ScriptedChannel("robot", script=[ChannelError("HTTP 502")])
    w = signing(worker(db, rules, {"robot": robot}, clock))
    incident_id = await add_incident(db, 1)
    await add(db, [intent(1)])
    await w.run_once()  # refused
    (row,) = await deliveries(db)
    clock.now = row.next_attempt_at
    await w.run_once()  # the retry is accepted
    await add(db, [intent(1, reason="repeat")], at=clock.now)
    clock.now += S
    await w.run_once()  # a second message about the same incident
    assert [n.kind.value for n in robot.seen] == ["firing", "firing", "update"]
    tokens = [read(link, clock.now) for n in robot.seen for link in (n.ack_link, n.silence_link)]
    assert {t.incident_id for t in tokens} == {incident_id}
    assert len({t.nonce for t in tokens}) == 6


async def test_no_links_for_resolved_or_coalesced_messages(db: Database) -> None:
    clock, rules = Clock(), ruleset(rate_limit={"messages": 2, "per": "1m", "block": "10m"})
    robot = ScriptedChannel("robot")
    w = signing(worker(db, rules, {"robot": robot}, clock))
    for n in range(1, 6):
        await add_incident(db, n)
    await add(db, [intent(1), intent(2, reason="resolved")])
    await w.run_once()  # within the budget of 2: one by one
    clock.now += 61 * S
    await add(db, [intent(n) for n in range(3, 6)], at=clock.now)
    await w.run_once()  # 3 for a budget of 2: merged
    kinds = [(n.kind.value, n.ack_link is not None, n.silence_link is not None) for n in robot.sent]
    assert kinds == [("firing", True, True), ("resolved", False, False), ("coalesced", False, False)]
    assert all(n.link for n in robot.sent)


@pytest.mark.parametrize("missing", ["signers", "external_url", "incident"])
async def test_no_links_without_signers_external_url_or_incident(db: Database, missing: str) -> None:
    clock, rules = Clock(), ruleset()
    if missing == "external_url":
        rules = rules.model_copy(update={"global_": rules.global_.model_copy(update={"external_url": None})})
    robot = ScriptedChannel("robot")
    w = worker(db, rules, {"robot": robot}, clock)
    if missing != "signers":
        signing(w)
    if missing != "incident":
        await add_incident(db, 1)
    await add(db, [intent(1)])
    await w.run_once()
    (sent,) = robot.sent
    assert (sent.ack_link, sent.silence_link, sent.silence_for) == (None, None, None)
    assert (sent.link is None) == (missing == "external_url")

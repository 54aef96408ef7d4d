"""Escalation end to end through a real `alertrouter serve` and a fake DingTalk robot: a critical alert's
first message pings the primary on call; not acknowledged, the first step pings the secondary on call;
acknowledged through the message's signed link, the chain stops and the second step never goes; resolved,
both the primary (the route's receiver) and the secondary (paged by the step) are told."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from e2e.harness import Router, Store, gpu_labels, wait_for, webhook, webhook_alert
from support.fakes.dingtalk import FakeDingTalk

pytestmark = [pytest.mark.e2e]

DT_TOKEN = "dt-token-escalation-1"  # literal test credentials, nothing real
DT_SECRET = "SECescalation0a1b2c3d4e5f6"
PRIMARY = "13800000001"
SECONDARY = "13800000002"
LEAD = "13800000009"
STEP_2 = 25  # seconds after the first message: long enough to acknowledge on a slow machine


def rules(dingtalk: str) -> str:
    # One schedule each: today's person is the only one, whatever the date the test runs on.
    return f"""\
global: {{language: en, timezone: Asia/Shanghai, external_url: "${{ALERTROUTER_EXTERNAL_URL}}"}}
oncall:
  people:
    - {{name: ana, mobile: "${{ANA_MOBILE}}"}}
    - {{name: bo, mobile: "${{BO_MOBILE}}"}}
  schedules:
    - {{name: primary, layers: [{{people: [ana], rotation: 1w, start: "2026-01-05 10:00"}}]}}
    - {{name: secondary, layers: [{{people: [bo], rotation: 1w, start: "2026-01-05 10:00"}}]}}
  escalations:
    - name: critical-unacked
      steps:
        - {{after: 4s, receivers: [secondary]}}
        - {{after: {STEP_2}s, receivers: [lead]}}
route:
  receiver: oncall
  group_wait: 1s
  group_interval: 2s
  repeat_interval: 1h
  escalation: critical-unacked
receivers:
  - {{name: oncall, channels: [{{channel: robot, mentions: {{oncall: [primary]}}}}]}}
  - {{name: secondary, channels: [{{channel: robot, mentions: {{oncall: [secondary]}}}}]}}
  - {{name: lead, channels: [{{channel: robot, mentions: {{mobiles: ["{LEAD}"]}}}}]}}
channels:
  - name: robot
    type: dingtalk
    url: {dingtalk}/robot/send
    access_token: ${{DT_TOKEN}}
    secret: ${{DT_SECRET}}
    timeout: 2s
    retry: {{initial: 1s, max: 2s, give_up_after: 1h}}
"""


@pytest.fixture
def dingtalk() -> Iterator[FakeDingTalk]:
    with FakeDingTalk({DT_TOKEN: DT_SECRET}) as fake:
        yield fake


def texts(fake: FakeDingTalk) -> list[str]:
    return [str(body[body["msgtype"]].get("text", "")) for body in fake.messages(DT_TOKEN)]


def test_escalation_steps_until_acknowledged_through_the_link(
    store: Store, start_router: Callable[..., Router], dingtalk: FakeDingTalk, tmp_path: Path
) -> None:
    directory = tmp_path / "rules"
    directory.mkdir()
    (directory / "rules.yml").write_text(rules(dingtalk.url))
    router = start_router(
        store,
        env={
            "ALERTROUTER_CONFIG": str(directory),
            "ALERTROUTER_EXTERNAL_URL": "http://alertrouter.test",
            "ALERTROUTER_SECRET_KEY": "escalation-e2e-secret-key-0123456789",
            "ALERTROUTER_DELIVERY_INTERVAL": "200ms",
            "DT_TOKEN": DT_TOKEN,
            "DT_SECRET": DT_SECRET,
            "ANA_MOBILE": PRIMARY,
            "BO_MOBILE": SECONDARY,
        },
    )
    start_at = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
    labels = gpu_labels(7, 0, severity="critical")
    assert router.post_webhook(webhook([webhook_alert(labels, starts_at=start_at)])).status_code == 200

    (first,) = wait_for(lambda: texts(dingtalk) or None, what="the first message")
    assert f"@{PRIMARY}" in first
    assert "escalated" not in first
    first_seen = time.monotonic()

    second = wait_for(lambda: texts(dingtalk)[1:] or None, what="the first escalation step")[0]
    assert "escalated: not acknowledged for 4s, step 1 of 2" in second
    assert f"@{SECONDARY}" in second
    assert f"@{PRIMARY}" not in second
    (secondary_ping,) = [p for p in dingtalk.pings if SECONDARY in p.mobiles]
    assert secondary_ping.mobiles == (SECONDARY,)

    # the on-call person acknowledges through the step message's signed link (GET shows, POST acts)
    link = re.search(r"\(http://alertrouter\.test(/a/[^)\s]+)\)", second)
    assert link is not None, second
    done = httpx.post(router.url + link.group(1), timeout=30)
    assert done.status_code == 200, done.text
    (incident,) = router.http.get("/api/v1/incidents").json()["incidents"]
    assert incident["acknowledged_at"] is not None

    def stopped() -> dict[str, object] | None:
        detail = router.http.get(f"/api/v1/incidents/{incident['id']}").json()
        escalation: dict[str, object] = detail["escalation"]
        return escalation if escalation["stopped"] else None

    escalation = wait_for(stopped, what="the chain to stop")
    assert (escalation["stopped"], escalation["stopped_by"]) == ("acknowledged", "link")  # the link's principal
    assert (escalation["next_step"], escalation["next_at"]) == (1, None)
    # past the second step's time (polled, bounded), nothing more was sent: no lead, no repeat
    wait_for(lambda: time.monotonic() > first_seen + STEP_2 + 3, what="the second step's time", timeout=STEP_2 + 30)
    assert len(texts(dingtalk)) == 2
    assert not any(LEAD in p.mobiles for p in dingtalk.pings)

    # The incident resolves: the route's receiver and the receiver the step paged each get the resolve.
    ended = webhook_alert(labels, starts_at=start_at, ends_at=datetime.now(UTC).replace(microsecond=0))
    assert router.post_webhook(webhook([ended])).status_code == 200
    told = wait_for(lambda: texts(dingtalk)[2:] if len(texts(dingtalk)) >= 4 else None, what="the resolves")
    assert all("resolved" in text.lower() for text in told), told
    assert sorted(p.mobiles for p in dingtalk.pings[-2:]) == [(PRIMARY,), (SECONDARY,)]
    assert not any(LEAD in p.mobiles for p in dingtalk.pings)

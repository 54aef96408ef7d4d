"""Delivery end to end: alertrouter processes sending to local fake DingTalk and WeCom robots that
check signatures, byte limits and the 20/min limit like the real ones, through outages, the vendor's
block, permanent errors and a kill -9 mid-send."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from e2e.harness import TOKEN, Router, Store, gpu_labels, postable_alert, wait_for, webhook, webhook_alert
from e2e.test_alertmanager_e2e import alertmanager_config, push
from support.fakes.dingtalk import FakeDingTalk
from support.fakes.wecom import FakeWeCom
from support.procs import Proc

pytestmark = [pytest.mark.e2e]

DT_TOKEN = "dt-token-5f0e1c9a7b"  # literal test credentials, nothing real
DT_SECRET = "SEC0a1b2c3d4e5f60718293a4b5c6d7e8f9"
WECOM_KEY = "wecom-key-3b9d2f41"
ONCALL = "13800138000"


def rules(dingtalk: str, wecom: str, *, rate: str = "{messages: 20, per: 1m, block: 10m}") -> str:
    return f"""\
aggregation:
  - name: gpu-by-node
    matchers: ['gpu!=""']
    group_by: [alertname, node]
    count: {{label: gpu, per_group: 8}}
    group_wait: 1s
    rollup: off
route:
  receiver: oncall
  group_wait: 1s
  group_interval: 2s
  repeat_interval: 1h
receivers:
  - name: oncall
    channels:
      - {{channel: robot, mentions: {{mobiles: ["{ONCALL}"]}}}}
      - wecom
channels:
  - name: robot
    type: dingtalk
    url: {dingtalk}/robot/send
    access_token: ${{DT_TOKEN}}
    secret: ${{DT_SECRET}}
    timeout: 2s
    rate_limit: {rate}
    retry: {{initial: 1s, max: 2s, give_up_after: 1h}}
  - name: wecom
    type: wecom
    url: {wecom}/cgi-bin/webhook/send
    key: ${{WECOM_KEY}}
    timeout: 2s
    retry: {{initial: 1s, max: 2s, give_up_after: 1h}}
"""


@pytest.fixture
def dingtalk() -> Iterator[FakeDingTalk]:
    with FakeDingTalk({DT_TOKEN: DT_SECRET}, block=4.0) as fake:
        yield fake


@pytest.fixture
def wecom() -> Iterator[FakeWeCom]:
    with FakeWeCom([WECOM_KEY], block=4.0) as fake:
        yield fake


def start(
    start_router: Callable[..., Router], store: Store, tmp_path: Path, text: str, **env: str
) -> tuple[Router, dict[str, str]]:
    directory = tmp_path / "rules"
    directory.mkdir(exist_ok=True)
    (directory / "rules.yml").write_text(text)
    full = {
        "ALERTROUTER_CONFIG": str(directory),
        "ALERTROUTER_EXTERNAL_URL": "http://alertrouter.test",
        "DT_TOKEN": DT_TOKEN,
        "DT_SECRET": DT_SECRET,
        "WECOM_KEY": WECOM_KEY,
        "ALERTROUTER_DELIVERY_INTERVAL": "200ms",
        **env,
    }
    return start_router(store, env=full), full


def alert(node: int, *, severity: str = "critical", gpu: int = 0) -> dict[str, Any]:
    start_at = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
    return webhook([webhook_alert(gpu_labels(node, gpu, severity=severity), starts_at=start_at)])


def texts(fake: FakeDingTalk) -> list[str]:
    out = []
    for body in fake.messages(DT_TOKEN):
        part = body[body["msgtype"]]
        out.append(str(part.get("text", "")))
    return out


def notifications(router: Router, **params: Any) -> list[dict[str, Any]]:
    r = router.http.get("/api/v1/notifications", params={"limit": 1000, **params})
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()["notifications"]
    return found


def assert_no_secret_in(text: str) -> None:
    for secret in (DT_TOKEN, DT_SECRET, WECOM_KEY):
        assert secret not in text


def test_through_alertmanager_to_signed_robot_with_mentions(
    store: Store,
    start_router: Callable[..., Router],
    start_am: Callable[[str], Proc],
    dingtalk: FakeDingTalk,
    wecom: FakeWeCom,
    tmp_path: Path,
) -> None:
    router, _ = start(start_router, store, tmp_path, rules(dingtalk.url, wecom.url))
    am = start_am(alertmanager_config(router.url, TOKEN))
    push(am, [postable_alert(gpu_labels(7, g, severity="critical")) for g in range(3)])

    (text,) = wait_for(lambda: texts(dingtalk) or None, what="the DingTalk message")
    assert "gpu-node-07" in text
    assert f"@{ONCALL}" in text
    (ping,) = dingtalk.pings
    assert ping.mobiles == (ONCALL,)
    (wecom_body,) = wait_for(lambda: wecom.messages(WECOM_KEY) or None, what="the WeCom message")
    assert "gpu-node-07" in wecom_body[wecom_body["msgtype"]]["content"]

    def both_sent() -> list[dict[str, Any]] | None:
        sent = [n for n in notifications(router) if n["status"] == "sent"]
        return sent if len(sent) == 2 else None

    sent = wait_for(both_sent, what="both deliveries recorded as sent")
    assert sorted(n["channel"] for n in sent) == ["robot", "wecom"]
    assert all(n["attempts"] == 1 for n in sent)
    metrics = router.http.get("/metrics").text
    assert 'alertrouter_notifications_total{channel="robot",result="sent"} 1.0' in metrics
    assert_no_secret_in(router.proc.logs())
    assert_no_secret_in(router.http.get("/api/v1/channels").text)
    assert_no_secret_in(router.http.get(f"/api/v1/notifications/{sent[0]['id']}").text)


def test_vendor_down_then_back_delivers_once(
    sqlite_store: Store, start_router: Callable[..., Router], dingtalk: FakeDingTalk, wecom: FakeWeCom, tmp_path: Path
) -> None:
    router, _ = start(start_router, sqlite_store, tmp_path, rules(dingtalk.url, wecom.url))
    dingtalk.down("503")
    assert router.post_webhook(alert(1)).status_code == 200
    wait_for(lambda: len(dingtalk.received) >= 3, what="three failed attempts", timeout=30)
    # Between attempts (not during one, when it is "sending"), the delivery waits, pending, with its error.
    (row,) = wait_for(
        lambda: [r for r in notifications(router, channel="robot") if r["status"] != "sending"],
        what="the delivery between two attempts",
    )
    assert row["status"] == "pending"
    assert "503" in (row["last_error"] or "")
    dingtalk.up()
    wait_for(lambda: notifications(router, channel="robot")[0]["status"] == "sent", what="delivery after recovery")
    time.sleep(1.5)
    assert len(dingtalk.messages(DT_TOKEN)) == 1
    assert_no_secret_in(router.proc.logs())


def test_vendor_block_loses_nothing_and_sends_the_backlog_coalesced(
    sqlite_store: Store, start_router: Callable[..., Router], wecom: FakeWeCom, tmp_path: Path
) -> None:
    with FakeDingTalk({DT_TOKEN: DT_SECRET}, limit=3, per=3.0, block=4.0) as strict:
        # alertrouter believes in 20/min; this robot allows 3 in 3 seconds, then blocks for 4
        text = rules(strict.url, wecom.url, rate="{messages: 20, per: 1m, block: 4s}")
        router, _ = start(start_router, sqlite_store, tmp_path, text)
        for node in range(1, 7):
            assert router.post_webhook(alert(node)).status_code == 200
        wait_for(lambda: len(texts(strict)) >= 4, what="three messages and the coalesced backlog", timeout=40)
        delivered = "\n".join(texts(strict))
        for node in range(1, 7):
            assert f"gpu-node-{node:02d}" in delivered

        # The robot has the message before the worker records its answer: wait for the record.
        def recorded() -> list[dict[str, Any]] | None:
            rows = notifications(router, channel="robot")
            return rows if any(r["kind"] == "coalesced" and r["status"] == "sent" for r in rows) else None

        rows = wait_for(recorded, what="the coalesced backlog recorded as sent")
        assert not [r for r in rows if r["status"] in ("pending", "dead")]
        metrics = router.http.get("/metrics").text
        assert 'alertrouter_channel_rate_limited_total{by="vendor",channel="robot"} 1.0' in metrics


def test_permanent_error_is_a_dead_letter_without_retry_storm(
    sqlite_store: Store, start_router: Callable[..., Router], dingtalk: FakeDingTalk, wecom: FakeWeCom, tmp_path: Path
) -> None:
    router, _ = start(start_router, sqlite_store, tmp_path, rules(dingtalk.url, wecom.url), DT_SECRET="SECwrong0000")
    assert router.post_webhook(alert(1)).status_code == 200
    wait_for(lambda: notifications(router, status="dead") or None, what="a dead letter")
    time.sleep(3)  # several retry intervals: a broken channel is not hammered
    assert len(dingtalk.received) == 1
    channels = {c["name"]: c for c in router.http.get("/api/v1/channels").json()}
    assert channels["robot"]["healthy"] is False
    assert channels["robot"]["dead_letters"] == 1
    assert "310000" in (channels["robot"]["last_error"] or "")
    metrics = router.http.get("/metrics").text
    assert 'alertrouter_dead_letters{channel="robot"} 1.0' in metrics
    assert "SECwrong0000" not in router.proc.logs()


def test_kill_during_send_delivers_every_notification_at_most_one_twice(
    store: Store, start_router: Callable[..., Router], dingtalk: FakeDingTalk, wecom: FakeWeCom, tmp_path: Path
) -> None:
    text = rules(dingtalk.url, wecom.url)
    router, _ = start(start_router, store, tmp_path, text)
    dingtalk.hang = 20.0
    dingtalk.fail_next("timeout")  # the first send hangs: alertrouter is killed while waiting for it
    assert router.post_webhook(alert(1)).status_code == 200
    wait_for(lambda: len(dingtalk.received) == 1, what="the send in flight")
    router.proc.kill9()

    router2, _ = start(start_router, store, tmp_path, text)
    assert router2.post_webhook(alert(2)).status_code == 200
    wait_for(lambda: len(texts(dingtalk)) >= 2, what="both notifications delivered", timeout=60)
    time.sleep(1.5)
    delivered = texts(dingtalk)
    assert len(delivered) == 2
    assert sorted(t[t.index("gpu-node-") : t.index("gpu-node-") + 11] for t in delivered) == [
        "gpu-node-01",
        "gpu-node-02",
    ]
    (attempts,) = [
        router2.http.get(f"/api/v1/notifications/{n['id']}").json()["attempts"]
        for n in notifications(router2, channel="robot")
        if n["attempts"] > 1
    ]
    assert [a["outcome"] for a in attempts] == ["lost", "sent"]

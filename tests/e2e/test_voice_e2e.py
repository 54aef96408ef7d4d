"""Voice calls end to end: `alertrouter serve` calling through local fakes of Aliyun SingleCallByTts and
Tencent Cloud SendTtsVoice, which verify every signature and parameter like the vendors: one signed call
per number for a firing incident, the headline spoken, nobody called when it resolves, and the daily cap
per number stopping the call after it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from e2e.harness import Router, Store, gpu_labels, wait_for, webhook, webhook_alert
from support.fakes.aliyun_voice import FakeAliyunVoice
from support.fakes.smsgateway import FakeSmsGateway
from support.fakes.tencent_voice import FakeTencentVoice

pytestmark = [pytest.mark.e2e]

# literal test credentials, nothing real
ALIYUN_KEY_ID, ALIYUN_SECRET = "LTAI5tVoiceE2eKey07", "aliyun-voice-e2e-Secret/+*~07"
TENCENT_ID, TENCENT_KEY = "AKIDvoiceE2eSecretId07", "tencent-voice-e2e-SecretKey07"
GATEWAY_TOKEN = "gateway-voice-e2e-token-9f2a"
SECRETS = (ALIYUN_KEY_ID, ALIYUN_SECRET, TENCENT_ID, TENCENT_KEY, GATEWAY_TOKEN)
TTS, TEMPLATE, APP, SHOWN = "TTS_100000001", "4356", "1400006666", "057100005678"
ALIYUN_PHONES = ("+8613800138000", "13800138001")
TENCENT_PHONE = "13800138002"
CAP = 2


@dataclass
class Vendors:
    aliyun: FakeAliyunVoice
    tencent: FakeTencentVoice
    gateway: FakeSmsGateway

    def refused(self) -> list[str]:
        fakes: list[Any] = [self.aliyun, self.tencent, self.gateway]
        return [r.body.decode(errors="replace")[:300] for f in fakes for r in f.refused]


@pytest.fixture
def vendors() -> Iterator[Vendors]:
    # The vendors' default flow control (Aliyun: 1 call a minute per number) would refuse the second
    # incident's call seconds after the first; a dedicated-mode account has it raised, as here.
    aliyun = FakeAliyunVoice(
        {ALIYUN_KEY_ID: ALIYUN_SECRET}, templates={TTS: ("alert", "level")}, show_numbers=(SHOWN,),
        flow_control=((20, 86400.0),),
    )  # fmt: skip
    tencent = FakeTencentVoice({TENCENT_ID: TENCENT_KEY}, app_ids=(APP,), templates={TEMPLATE: 1}, param_limit=40)
    gateway = FakeSmsGateway(GATEWAY_TOKEN)
    with aliyun, tencent, gateway:
        yield Vendors(aliyun, tencent, gateway)


def rules(v: Vendors) -> str:
    every = "timeout: 3s\n    retry: {initial: 1s, max: 2s, give_up_after: 1h}"
    aliyun_to = ", ".join(f'"{n}"' for n in ALIYUN_PHONES)
    return f"""\
global:
  external_url: http://alertrouter.test
aggregation:
  - name: gpu-by-node
    matchers: ['gpu!=""']
    group_by: [alertname, node]
    count: {{label: gpu, per_group: 8}}
    group_wait: 1s
    group_interval: 2s
route:
  receiver: oncall-voice
  group_wait: 1s
  group_interval: 2s
  repeat_interval: 1h
  send_resolved: true
receivers:
  - name: oncall-voice
    channels:
      - {{channel: voice-aliyun, to: [{aliyun_to}]}}
      - {{channel: voice-tencent, to: ["{TENCENT_PHONE}"]}}
      - {{channel: sms-gateway, to: ["{TENCENT_PHONE}"]}}
channels:
  - name: voice-aliyun
    type: voice
    provider: aliyun
    aliyun:
      access_key_id: ${{ALIYUN_KEY_ID}}
      access_key_secret: ${{ALIYUN_SECRET}}
      tts_code: {TTS}
      called_show_number: "{SHOWN}"
      endpoint: {v.aliyun.url}/
    params: {{alert: headline, level: severity}}
    param_max_length: 40
    play_times: 3
    daily_cap_per_number: {CAP}
    {every}
  - name: voice-tencent
    type: voice
    provider: tencent
    tencent:
      secret_id: ${{TENCENT_ID}}
      secret_key: ${{TENCENT_KEY}}
      voice_sdk_app_id: "{APP}"
      template_id: "{TEMPLATE}"
      endpoint: {v.tencent.url}/
    params: {{"1": headline}}
    param_max_length: 40
    daily_cap_per_number: {CAP}
    {every}
  - name: sms-gateway
    type: sms
    provider: generic
    generic: {{url: {v.gateway.url}/v1/sms, token: "${{GATEWAY_TOKEN}}"}}
    {every}
"""


def start(start_router: Callable[..., Router], store: Store, tmp_path: Path, v: Vendors) -> Router:
    directory = tmp_path / "rules"
    directory.mkdir(exist_ok=True)
    (directory / "rules.yml").write_text(rules(v))
    env = {
        "ALERTROUTER_CONFIG": str(directory),
        "ALERTROUTER_DELIVERY_INTERVAL": "200ms",
        "ALIYUN_KEY_ID": ALIYUN_KEY_ID,
        "ALIYUN_SECRET": ALIYUN_SECRET,
        "TENCENT_ID": TENCENT_ID,
        "TENCENT_KEY": TENCENT_KEY,
        "GATEWAY_TOKEN": GATEWAY_TOKEN,
    }
    return start_router(store, env=env)


def notifications(router: Router) -> list[dict[str, Any]]:
    r = router.http.get("/api/v1/notifications", params={"limit": 1000})
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()["notifications"]
    return sorted(found, key=lambda n: n["id"])


def fire(router: Router, node: int, *, since: datetime, ended: datetime | None = None) -> None:
    alerts = [
        webhook_alert(gpu_labels(node, g, alertname="GPUHighTemp", severity="critical"), starts_at=since, ends_at=ended)
        for g in (0, 1)
    ]
    r = router.post_webhook(webhook(alerts))
    assert r.status_code == 200, r.text


def gateway_took(router: Router, v: Vendors, n: int, what: str) -> None:
    """Wait until the SMS gateway (same receiver, every message kind) has taken `n` messages: by then the
    voice channels have had theirs, or decided to call nobody. Fail at once on anything a fake refused."""

    def check() -> bool:
        assert v.refused() == [], "a fake refused a request"
        assert not [r for r in notifications(router) if r["status"] == "dead"], "a delivery became a dead letter"
        return len(v.gateway.sent) >= n

    wait_for(check, what=what, timeout=30)


def settled(router: Router, channel: str, count: int) -> list[dict[str, Any]]:
    def check() -> list[dict[str, Any]]:
        rows = [r for r in notifications(router) if r["channel"] == channel]
        return rows if len(rows) == count and all(r["status"] in ("sent", "capped") for r in rows) else []

    return wait_for(check, what=f"{count} deliveries through {channel} done", timeout=30)


def test_a_critical_incident_calls_each_number_once_and_the_cap_stops_the_next(
    store: Store, start_router: Callable[..., Router], vendors: Vendors, tmp_path: Path
) -> None:
    router = start(start_router, store, tmp_path, vendors)
    since = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)

    fire(router, 7, since=since)
    gateway_took(router, vendors, 1, "the firing message")
    settled(router, "voice-aliyun", 1)
    settled(router, "voice-tencent", 1)
    spoken = "gpu node 07 GPUHighTemp on 2 8 GPUs"  # "gpu-node-07: GPUHighTemp on 2/8 GPUs", said aloud
    first = next(r["id"] for r in notifications(router) if r["channel"] == "voice-aliyun")
    assert vendors.aliyun.calls == [
        ("13800138000", {"alert": spoken, "level": "critical"}, 3, str(first)),
        ("13800138001", {"alert": spoken, "level": "critical"}, 3, str(first)),
    ]
    assert [(n, values, times) for n, values, times, _ in vendors.tencent.calls] == [("+8613800138002", [spoken], 2)]
    assert all(r.form()["CalledShowNumber"] == SHOWN for r in vendors.aliyun.accepted)

    # It resolves: the SMS says so, nobody is called.
    fire(router, 7, since=since, ended=datetime.now(UTC).replace(microsecond=0))
    gateway_took(router, vendors, 2, "the resolved message")
    assert (len(vendors.aliyun.calls), len(vendors.tencent.calls)) == (2, 1)

    # Two more critical incidents the same day: the second call to each number is made, the third is not.
    fire(router, 8, since=since)
    gateway_took(router, vendors, 3, "node 8's firing message")
    fire(router, 9, since=since)
    gateway_took(router, vendors, 4, "node 9's firing message")
    aliyun, tencent = settled(router, "voice-aliyun", 3), settled(router, "voice-tencent", 3)
    assert [r["status"] for r in aliyun] == ["sent", "sent", "capped"]
    assert [r["status"] for r in tencent] == ["sent", "sent", "capped"]
    assert [n for n, *_ in vendors.aliyun.calls] == ["13800138000", "13800138001"] * CAP
    assert [n for n, *_ in vendors.tencent.calls] == ["+8613800138002"] * CAP
    assert [p["alert"] for _, p, *_ in vendors.aliyun.calls[2:]] == ["gpu node 08 GPUHighTemp on 2 8 GPUs"] * 2

    assert router.metric("alertrouter_voice_calls_total", channel="voice-aliyun") == 4
    assert router.metric("alertrouter_voice_calls_total", channel="voice-tencent") == 2
    assert router.metric("alertrouter_voice_calls_capped_total", channel="voice-aliyun") == 2
    assert router.metric("alertrouter_voice_calls_capped_total", channel="voice-tencent") == 1
    assert router.metric("alertrouter_notifications_total", channel="voice-aliyun", result="capped") == 1

    readable = [router.proc.logs(), router.http.get("/api/v1/channels").text]
    readable += [router.http.get(f"/api/v1/notifications/{n['id']}").text for n in notifications(router)]
    for secret in SECRETS:
        assert not any(secret in text for text in readable), "a secret leaked"

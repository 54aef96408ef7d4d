"""What an XID means, end to end: a real `alertrouter serve` receives the webhook Alertmanager sends for
the shipped GPUXidError/GPUFallenOffBus rules on dcgm-exporter 4.x series (`err_code`, `err_msg`, the pod
mapping's `exported_*`), and the signed DingTalk robot's message says, per XID, the GPUs, NVIDIA's meaning
and first action, and the workload that was on the GPUs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from e2e.harness import Router, Store, gpu_labels, wait_for, webhook, webhook_alert
from support.fakes.dingtalk import FakeDingTalk
from support.fakes.wecom import FakeWeCom

pytestmark = [pytest.mark.e2e]

DT_TOKEN = "dt-token-xid-7c2e90"  # literal test credentials, nothing real
DT_SECRET = "SEC9f8e7d6c5b4a39281706f5e4d3c2b1a0"

AGGREGATION = """\
aggregation:
  - name: gpu-by-node
    matchers: ['gpu!=""']
    group_by: [alertname, Hostname]
    count: {label: gpu, per_group: 8}
    group_wait: 1s
    rollup: off
# Xid 94/95 are consequences in NVIDIA's catalog: with no root on the node they page on their own, once
# the hold for a late root (`follow_on_hold`, 30s by default) is over; none here.
gpu_triage: {follow_on_hold: 0s}
"""
RULES = (
    AGGREGATION
    + """\
route:
  receiver: oncall
  group_wait: 1s
  group_interval: 2s
  repeat_interval: 1h
receivers:
  - name: oncall
    channels: [robot]
channels:
  - name: robot
    type: dingtalk
    url: %s/robot/send
    access_token: ${DT_TOKEN}
    secret: ${DT_SECRET}
    timeout: 2s
    retry: {initial: 1s, max: 2s, give_up_after: 1h}
"""
)


@pytest.fixture
def dingtalk() -> Iterator[FakeDingTalk]:
    with FakeDingTalk({DT_TOKEN: DT_SECRET}) as fake:
        yield fake


def xid_alert(gpu: int, code: str, pod: str) -> dict[str, str]:
    """gpu-node-07's GPU `gpu` as the shipped GPUXidError rule fires it on dcgm-exporter 4.x."""
    return {
        **gpu_labels(7, gpu, alertname="GPUXidError", severity="critical"),
        "xid": code,
        "err_code": code,
        "err_msg": "Contained ECC error" if code == "94" else "Uncontained ECC error",
        "exported_namespace": "ml-team",
        "exported_pod": pod,
        "exported_container": "trainer",
        "DCGM_FI_DRIVER_VERSION": "550.90.07",
    }


def texts(fake: FakeDingTalk) -> list[str]:
    return [str(body[body["msgtype"]].get("text", "")) for body in fake.messages(DT_TOKEN)]


def test_the_dingtalk_message_says_what_each_xid_means(
    store: Store, start_router: Callable[..., Router], dingtalk: FakeDingTalk, tmp_path: Path
) -> None:
    directory = tmp_path / "rules"
    directory.mkdir()
    (directory / "rules.yml").write_text(RULES % dingtalk.url)
    router = start_router(
        store,
        env={
            "ALERTROUTER_CONFIG": str(directory),
            "ALERTROUTER_EXTERNAL_URL": "http://alertrouter.test",
            "DT_TOKEN": DT_TOKEN,
            "DT_SECRET": DT_SECRET,
            "ALERTROUTER_DELIVERY_INTERVAL": "200ms",
        },
    )
    started = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
    alerts = [xid_alert(2, "95", "llama-70b-0"), xid_alert(6, "95", "llama-70b-1"), xid_alert(4, "94", "vllm-0")]
    body = webhook([webhook_alert(labels, starts_at=started) for labels in alerts])
    r = router.post_webhook(body)
    assert r.status_code == 200, r.text

    (text,) = wait_for(lambda: texts(dingtalk) or None, what="the DingTalk message")
    plain = text.replace("\\", "")  # markdown escapes of label values
    assert "XID 94 on GPU 4: Contained ECC error — action: restart the application" in plain
    assert "XID 95 on GPU 2, 6: Uncontained ECC error — action: reset the GPU" in plain
    assert "ml-team/llama-70b-0, ml-team/llama-70b-1, ml-team/vllm-0" in plain
    assert "gpu-node-07" in plain


WECOM_KEY = "wecom-key-rma-5d1e"  # a literal test credential, nothing real
RMA_RULES = (
    """\
global: {language: zh-CN, timezone: Asia/Shanghai}
"""
    + AGGREGATION
    + """\
route:
  receiver: oncall
  group_wait: 1s
  group_interval: 2s
  repeat_interval: 1h
  routes:
    - {receiver: oncall, continue: true}
    - {receiver: abroad}
receivers:
  - name: oncall
    channels: [robot]
  - name: abroad
    language: en
    timezone: Europe/Berlin
    channels: [wecom]
channels:
  - name: robot
    type: dingtalk
    url: %s/robot/send
    access_token: ${DT_TOKEN}
    secret: ${DT_SECRET}
  - name: wecom
    type: wecom
    url: %s/cgi-bin/webhook/send
    key: ${WECOM_KEY}
"""
)


@contextmanager
def zh_and_en_router(
    store: Store, start_router: Callable[..., Router], dingtalk: FakeDingTalk, tmp_path: Path
) -> Iterator[tuple[Router, FakeWeCom]]:
    """A `serve` on RMA_RULES: the on-call DingTalk robot in zh-CN, the WeCom robot of the team abroad in en."""
    directory = tmp_path / "rules"
    directory.mkdir()
    with FakeWeCom([WECOM_KEY]) as wecom:
        (directory / "rules.yml").write_text(RMA_RULES % (dingtalk.url, wecom.url))
        env = {"ALERTROUTER_CONFIG": str(directory), "DT_TOKEN": DT_TOKEN, "DT_SECRET": DT_SECRET}
        yield start_router(store, env=env | {"WECOM_KEY": WECOM_KEY, "ALERTROUTER_DELIVERY_INTERVAL": "200ms"}), wecom


def test_a_gpu_with_its_second_xid_48_in_11_days_is_paged_as_an_rma_candidate(
    store: Store, start_router: Callable[..., Router], dingtalk: FakeDingTalk, tmp_path: Path
) -> None:
    # NVIDIA: a double-bit ECC error (Xid 48) that comes back after the row remap is an RMA. The first one
    # started 11 days before alertrouter heard of it (Alertmanager sends what still fires).
    with zh_and_en_router(store, start_router, dingtalk, tmp_path) as (router, wecom):
        now = datetime.now(UTC).replace(microsecond=0)
        labels = xid_alert(3, "48", "llama-70b-0") | {"err_msg": "Double Bit ECC Error"}
        first = now - timedelta(days=11, hours=2)
        assert router.post_webhook(webhook([webhook_alert(labels, starts_at=first)])).status_code == 200
        (once,) = wait_for(lambda: texts(dingtalk) or None, what="the first Xid 48 page")
        assert "RMA 候选" not in once  # one Xid 48 is not a pattern
        resolved = webhook([webhook_alert(labels, starts_at=first, ends_at=now - timedelta(seconds=30))])
        assert router.post_webhook(resolved).status_code == 200
        wait_for(lambda: texts(dingtalk)[1:] or None, what="the resolved message")
        assert router.post_webhook(webhook([webhook_alert(labels, starts_at=now)])).status_code == 200
        page = wait_for(lambda: texts(dingtalk)[2:] or None, what="the second Xid 48 page")[0]
        english = wait_for(lambda: wecom_texts(wecom)[2:] or None, what="the English page")[0]
    uuid = labels["UUID"][:12]
    assert f"RMA 候选：GPU 3（{uuid}…）：11 天内 Xid 48 共 2 次" in page.replace("\\", "")
    assert f"RMA candidate: GPU 3 ({uuid}…): Xid 48 twice in 11 days" in english
    gpu = router.http.get(f"/api/v1/gpus/{labels['UUID']}").json()
    assert (gpu["rma_candidate"], [e["xid"] for e in gpu["events"]]) == (True, [48, 48])


def wecom_texts(fake: FakeWeCom) -> list[str]:
    return [str(body[body["msgtype"]].get("content", "")) for body in fake.messages(WECOM_KEY)]


def test_the_fifth_xid_48_in_a_day_on_one_gpu_is_told_as_the_hardware(
    store: Store, start_router: Callable[..., Router], dingtalk: FakeDingTalk, tmp_path: Path
) -> None:
    # NVSentinel's rule, in the triage's defaults: the same fatal Xid five times in 24 h on one GPU is the GPU.
    # dcgm-exporter keeps one series per GPU, so the repeats are episodes of one alert: only the GPU's history
    # shows them. The four before were reset and resolved; Alertmanager sends them as it does after a restart.
    with zh_and_en_router(store, start_router, dingtalk, tmp_path) as (router, wecom):
        now = datetime.now(UTC).replace(microsecond=0)
        labels = xid_alert(3, "48", "llama-70b-0") | {"err_msg": "Double Bit ECC Error"}
        for hours in (20, 15, 10, 5):
            began = now - timedelta(hours=hours)
            episode = webhook([webhook_alert(labels, starts_at=began, ends_at=began + timedelta(minutes=20))])
            assert router.post_webhook(episode).status_code == 200
        assert router.post_webhook(webhook([webhook_alert(labels, starts_at=now)])).status_code == 200
        page = wait_for(lambda: texts(dingtalk) or None, what="the page")[-1].replace("\\", "")
        english = wait_for(lambda: wecom_texts(wecom) or None, what="the English page")[-1]
    assert "同一 GPU 在 24 小时内 5 次报告 Xid 48：硬件故障" in page
    assert "the same Xid 48 5 times in 24 h on this GPU: hardware" in english
    assert "GPU 3: Xid 48 (Double Bit ECC Error)" in english  # the root it is about, with NVIDIA's meaning
    assert len(router.http.get(f"/api/v1/gpus/{labels['UUID']}").json()["events"]) == 5

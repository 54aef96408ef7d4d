"""Maintenance end to end: a real `alertrouter serve`, a node put in maintenance with the CLI (as on bare
metal: the same store, no API), the hot GPUs of that node and of a neighbour posted as Alertmanager
does, and the signed DingTalk robot's messages read back. The node in maintenance sends nothing while
its neighbour is paged; ending the window through the API pages its hot GPUs at once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from alertrouter.cli.main import main
from e2e.harness import Router, Store, gpu_annotations, gpu_labels, wait_for, webhook, webhook_alert
from support.fakes.dingtalk import FakeDingTalk

pytestmark = [pytest.mark.e2e]

DT_TOKEN = "dt-token-maint-41c7"  # literal test credentials, nothing real
DT_SECRET = "SEC0a1b2c3d4e5f60718293a4b5c6d7e8f9"
API_TOKEN = "api-token-maint-7e5d0c"

RULES = """\
aggregation:
  - name: gpu-by-node
    matchers: ['gpu!=""']
    group_by: [alertname, Hostname]
    count: {label: gpu, per_group: 8}
    group_wait: 1s
    rollup: off
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


@pytest.fixture
def dingtalk() -> Iterator[FakeDingTalk]:
    with FakeDingTalk({DT_TOKEN: DT_SECRET}) as fake:
        yield fake


def texts(fake: FakeDingTalk) -> list[str]:
    return [str(body[body["msgtype"]].get("text", "")).replace("\\", "") for body in fake.messages(DT_TOKEN)]


def hot(node: int) -> list[dict[str, str]]:
    return [gpu_labels(node, g, severity="critical") for g in (3, 5)]


def test_a_node_in_maintenance_is_paged_only_when_its_window_ends(
    store: Store, start_router: Callable[..., Router], dingtalk: FakeDingTalk, tmp_path: Path
) -> None:
    directory = tmp_path / "rules"
    directory.mkdir()
    (directory / "rules.yml").write_text(RULES % dingtalk.url)
    router = start_router(
        store,
        env={
            "ALERTROUTER_CONFIG": str(directory),
            "ALERTROUTER_API_TOKENS": f"ci:{API_TOKEN}",
            "DT_TOKEN": DT_TOKEN,
            "DT_SECRET": DT_SECRET,
            "ALERTROUTER_DELIVERY_INTERVAL": "200ms",
        },
    )
    argv = ["maintenance", "--database-url", store.url, "start", "10.0.0.7", "--for", "4h", "--reason", "RMA 4711"]
    assert main(argv) == 0  # by its address: the alerts name the node by Hostname, and teach the address
    started = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)
    body = webhook([webhook_alert(lbl, starts_at=started, annotations=gpu_annotations(lbl)) for lbl in hot(7) + hot(8)])
    assert router.post_webhook(body).status_code == 200

    (first,) = wait_for(lambda: texts(dingtalk) or None, what="the neighbour's page")
    assert "CRITICAL | gpu-node-08: GPUHighTemp on 2/8 GPUs" in first
    assert "gpu-node-07" not in first
    decisions = {a["labels"]["Hostname"]: a["decision"] for a in router.alerts()}
    assert decisions == {"gpu-node-07": "maintenance", "gpu-node-08": "aggregated"}
    maintained = next(a for a in router.alerts() if a["labels"]["Hostname"] == "gpu-node-07")
    window = router.detail(maintained["fingerprint"])["alert"]["decision_detail"]["maintenance"]
    assert (window["node"], window["reason"], window["source"]) == ("10.0.0.7", "RMA 4711", "manual")
    assert window["by"].startswith("cli")

    auth = {"Authorization": f"Bearer {API_TOKEN}"}
    listed = httpx.get(router.url + "/api/v1/maintenance", headers=auth, timeout=10).json()
    assert [(w["node"], w["reason"], w["state"]) for w in listed] == [("10.0.0.7", "RMA 4711", "active")]
    ended = httpx.delete(router.url + "/api/v1/maintenance/10.0.0.7", headers=auth, timeout=10)
    assert ended.status_code == 200, ended.text

    messages = wait_for(lambda: texts(dingtalk) if len(texts(dingtalk)) == 2 else None, what="the page at its end")
    second = messages[1]
    assert "CRITICAL | gpu-node-07: GPUHighTemp on 2/8 GPUs" in second
    assert "- GPU 3: GPU 3 on gpu-node-07 is running hot" in second
    assert "- GPU 5: GPU 5 on gpu-node-07 is running hot" in second
    assert {a["decision"] for a in router.alerts()} == {"aggregated"}

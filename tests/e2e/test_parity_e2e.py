"""Alertmanager parity end to end: an alert without `alertname` (Alertmanager stores and forwards any
alert with one label) and OpenTelemetry label names (`service.name`) reach a running `alertrouter
serve`, are accepted, and are delivered to a fake DingTalk robot named by their labels."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from e2e.harness import TOKEN, Router, Store, postable_alert, wait_for, webhook, webhook_alert
from e2e.test_alertmanager_e2e import alertmanager_config, push
from support.fakes.dingtalk import FakeDingTalk
from support.procs import Proc

pytestmark = [pytest.mark.e2e]

DT_TOKEN = "dt-token-parity-13"  # literal test credentials, nothing real
DT_SECRET = "SEC13parity0a1b2c3d4e5f60718293a4b5c6d"
NO_NAME = {"job": "nightly-backup", "instance": "db-1:9100", "severity": "warning"}
OTEL = {
    "service.name": "checkout",
    "k8s.namespace.name": "shop",
    "k8s.pod.name": "checkout-7d9f8b6c5-x2x4q",
    "k8s.node.name": "gpu-node-07",
    "severity": "critical",
}

RULES = """\
global:
  node_labels: [k8s.node.name, node, instance]
inhibit_rules:
  - target_matchers: ['severity="info"']   # no source side, as Alertmanager allows
    equal: ['k8s.pod.name']
route:
  receiver: oncall
  group_wait: 1s
  group_interval: 2s
  repeat_interval: 1h
  routes:
    - receiver: checkout
      matchers: ['"service.name"="checkout"']
receivers:
  - {name: oncall, channels: [robot]}
  - {name: checkout, channels: [robot]}
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


def start(start_router: Callable[..., Router], store: Store, tmp_path: Path, robot: str) -> Router:
    directory = tmp_path / "rules"
    directory.mkdir(exist_ok=True)
    (directory / "rules.yml").write_text(RULES % robot)
    env = {
        "ALERTROUTER_CONFIG": str(directory),
        "DT_TOKEN": DT_TOKEN,
        "DT_SECRET": DT_SECRET,
        "ALERTROUTER_DELIVERY_INTERVAL": "200ms",
    }
    return start_router(store, env=env)


def texts(fake: FakeDingTalk) -> list[str]:
    return [str(body[body["msgtype"]].get("text", "")) for body in fake.messages(DT_TOKEN)]


def sent_with(fake: FakeDingTalk, *words: str) -> list[str] | None:
    found = [t for t in texts(fake) if all(w in t for w in words)]
    return found or None


def test_alert_without_alertname_and_otel_names_are_delivered(
    store: Store, start_router: Callable[..., Router], dingtalk: FakeDingTalk, tmp_path: Path
) -> None:
    router = start(start_router, store, tmp_path, dingtalk.url)
    started = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
    plain = webhook_alert(NO_NAME, starts_at=started, annotations={})
    r = router.post_webhook(webhook([plain], group_by=("job",)))
    assert r.status_code == 200, r.text
    r = router.post_api_v2([postable_alert(OTEL, annotations={"summary": "checkout p99 over 2s"})])
    assert r.status_code == 200, r.text

    (backup,) = wait_for(lambda: sent_with(dingtalk, "nightly-backup"), what="the message about the nameless alert")
    assert "db-1" in backup
    assert "job" in backup
    (otel,) = wait_for(lambda: sent_with(dingtalk, "checkout p99"), what="the message about the OTel alert")
    assert "gpu-node-07" in otel  # its node named by the UTF-8 label k8s.node.name

    def stored() -> list[dict[str, Any]] | None:
        alerts = router.alerts()
        return alerts if len(alerts) == 2 and all(a.get("incident_key") for a in alerts) else None

    by_job = {a["labels"].get("job", a["labels"].get("service.name")): a for a in wait_for(stored, what="both stored")}
    assert by_job["nightly-backup"]["alertname"] == ""
    assert by_job["checkout"]["labels"] == OTEL
    # the route on "service.name" took the OTel alert, the other went to the root receiver
    checkout = router.http.get("/api/v1/notifications", params={"receiver": "checkout"}).json()["notifications"]
    assert len(checkout) == 1, checkout


def test_through_real_alertmanager_an_alert_without_alertname_is_delivered(
    sqlite_store: Store,
    start_router: Callable[..., Router],
    start_am: Callable[[str], Proc],
    dingtalk: FakeDingTalk,
    tmp_path: Path,
) -> None:
    router = start(start_router, sqlite_store, tmp_path, dingtalk.url)
    am = start_am(alertmanager_config(router.url, TOKEN))
    push(am, [postable_alert(NO_NAME, annotations={})])
    (text,) = wait_for(lambda: sent_with(dingtalk, "nightly-backup"), what="the message via Alertmanager")
    assert "db-1" in text
    (stored,) = router.alerts()
    assert stored["labels"] == NO_NAME

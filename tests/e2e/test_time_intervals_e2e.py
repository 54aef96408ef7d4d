"""A route muted by a time interval that is active now, through a running `alertrouter serve`: its
WeCom robot receives nothing while the unmuted route's robot is told, and /api/v1/alerts says why."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from e2e.harness import Router, Store, gpu_labels, wait_for, webhook, webhook_alert
from support.fakes.wecom import FakeWeCom

pytestmark = [pytest.mark.e2e]

OPS_KEY = "wecom-ops-key-7c21"  # literal test credentials, nothing real
ONCALL_KEY = "wecom-oncall-key-4e90"

# `00:00`-`24:00` every day: active whenever the test runs.
RULES = """\
time_intervals:
  - name: change-freeze
    time_intervals:
      - times: [{{start_time: '00:00', end_time: '24:00'}}]
        location: Asia/Shanghai
aggregation:
  - name: gpu-by-node
    matchers: ['gpu!=""']
    group_by: [alertname, node]
    group_wait: 1s
    rollup: off
route:
  receiver: oncall
  group_wait: 1s
  group_interval: 2s
  routes:
    - matchers: ['severity="warning"']
      receiver: ops
      mute_time_intervals: [change-freeze]
receivers:
  - {{name: oncall, channels: [oncall-robot]}}
  - {{name: ops, channels: [ops-robot]}}
channels:
  - {{name: oncall-robot, type: wecom, url: "{url}/cgi-bin/webhook/send", key: "${{ONCALL_KEY}}", timeout: 2s}}
  - {{name: ops-robot, type: wecom, url: "{url}/cgi-bin/webhook/send", key: "${{OPS_KEY}}", timeout: 2s}}
"""


@pytest.fixture
def wecom() -> Iterator[FakeWeCom]:
    with FakeWeCom([OPS_KEY, ONCALL_KEY]) as fake:
        yield fake


def test_a_route_muted_now_sends_nothing_and_says_so(
    store: Store, start_router: Callable[..., Router], wecom: FakeWeCom, tmp_path: Path
) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "rules.yml").write_text(RULES.format(url=wecom.url))
    env = {
        "ALERTROUTER_CONFIG": str(rules),
        "OPS_KEY": OPS_KEY,
        "ONCALL_KEY": ONCALL_KEY,
        "ALERTROUTER_DELIVERY_INTERVAL": "200ms",
    }
    router = start_router(store, env=env)
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
    warm = gpu_labels(7, 0, severity="warning")
    dead = gpu_labels(8, 0, alertname="GPUFallenOffBus", severity="critical")
    body = webhook([webhook_alert(warm, starts_at=start), webhook_alert(dead, starts_at=start)])
    assert router.post_webhook(body).status_code == 200

    # The unmuted route is told: delivery works, and the pass that decided it also decided the muted one.
    (told,) = wait_for(lambda: wecom.messages(ONCALL_KEY) or None, what="the on-call robot's message")
    assert "gpu-node-08" in told[told["msgtype"]]["content"]

    def decided() -> dict[str, object] | None:
        found = [a for a in router.alerts() if a["labels"].get("alertname") == "GPUHighTemp"]
        return found[0] if found and found[0]["decision"] == "muted_by_interval" else None

    muted = wait_for(decided, what="the warning alert decided muted_by_interval")
    detail = muted["decision_detail"]
    assert isinstance(detail, dict)
    assert detail["muted_by_interval"] == {"ops": ["change-freeze"]}
    assert detail["routed_to"] == ["ops"]
    notifications = router.http.get("/api/v1/notifications", params={"receiver": "ops"}).json()["notifications"]
    assert notifications == []
    assert wecom.messages(OPS_KEY) == []

"""Heartbeats on the wall clock through a real `alertrouter serve`: a source that stops POSTing its
heartbeat makes the signed DingTalk robot say "monitoring is blind", and its return resolves it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from e2e.harness import Router, Store, wait_for
from support.fakes.dingtalk import FakeDingTalk

pytestmark = [pytest.mark.e2e]

DT_TOKEN = "dt-token-hb-7d21c0"  # literal test credentials, nothing real
DT_SECRET = "SEChb0a1b2c3d4e5f60718293a4b5c6d7e8f9"


def rules(dingtalk: str) -> str:
    return f"""\
heartbeats:
  - name: cron-north
    timeout: 5s
    labels: {{severity: critical, region: north}}
    description: the north region's backup job
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


class Beating:
    """POSTs the heartbeat every 0.3s on a thread until stopped, as a live source would."""

    def __init__(self, router: Router, name: str) -> None:
        self._router, self._name = router, name
        self._stop = threading.Event()
        self.answers: list[int] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.answers.append(self._router.http.post(f"/api/v1/heartbeats/{self._name}").status_code)
            self._stop.wait(0.3)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def texts(fake: FakeDingTalk) -> list[str]:
    return [str(body[body["msgtype"]].get("text", "")) for body in fake.messages(DT_TOKEN)]


def test_a_silent_heartbeat_pages_and_its_return_resolves(
    store: Store, start_router: Callable[..., Router], dingtalk: FakeDingTalk, tmp_path: Path
) -> None:
    directory = tmp_path / "rules"
    directory.mkdir()
    (directory / "rules.yml").write_text(rules(dingtalk.url))
    env = {
        "ALERTROUTER_CONFIG": str(directory),
        "DT_TOKEN": DT_TOKEN,
        "DT_SECRET": DT_SECRET,
        "ALERTROUTER_DELIVERY_INTERVAL": "200ms",
    }
    router = start_router(store, env=env)
    beating = Beating(router, "cron-north")
    wait_for(lambda: len(beating.answers) >= 10, what="ten heartbeats accepted")
    beating.stop()
    assert set(beating.answers) == {200}
    # The wait above (at least 3s) comes close to the 5s timeout: heard from all along, nothing was raised.
    (before,) = router.http.get("/api/v1/heartbeats").json()["heartbeats"]
    assert before["seen_via"] == "http"
    assert texts(dingtalk) == []

    (page,) = wait_for(lambda: texts(dingtalk) or None, what="the 'monitoring is blind' page", timeout=60)
    assert "monitoring is blind: cron-north" in page
    assert "silent since" in page
    (lost,) = router.http.get("/api/v1/heartbeats").json()["heartbeats"]
    assert lost["state"] == "missing"
    assert router.metric("alertrouter_heartbeat_missing", heartbeat="cron-north") == 1

    beating = Beating(router, "cron-north")
    try:
        messages = wait_for(
            lambda: t if len(t := texts(dingtalk)) >= 2 else None, what="the resolved message", timeout=60
        )
    finally:
        beating.stop()
    assert "RESOLVED" in messages[1]
    assert "monitoring is blind: cron-north" in messages[1]
    (back,) = router.http.get("/api/v1/heartbeats").json()["heartbeats"]
    assert back["state"] == "ok"
    assert router.metric("alertrouter_heartbeat_missing", heartbeat="cron-north") == 0

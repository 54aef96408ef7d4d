"""The Watchdog heartbeat through the whole real chain (tests/cluster/box.py): the real Prometheus fires the
shipped Watchdog, the Alertmanager pair re-sends it, both alertrouter replicas hear it. Prometheus stops:
once the Alertmanagers let the Watchdog go and the heartbeat's timeout passes, the on-call is told
"monitoring is blind" once; Prometheus comes back: the resolved message follows.

The box shortens, besides `for:` and `group_interval`, the heartbeat's timeout (20s), the Watchdog's repeat
in Alertmanager (2s) and Prometheus' resend delay (1s, so an alert it stopped sending ends after 4s).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from cluster.box import ClusterBox
from cluster.scenarios import MARKS, Boxes, Scenario
from cluster.told import clock, lasted, told
from e2e.harness import parse_time, wait_for

pytestmark = MARKS

BLIND = "监控失明：prometheus"  # the shipped rules speak zh-CN; the shipped heartbeat is named `prometheus`


@dataclass
class Outcome:
    heard: dict[str, Any]  # the heartbeat as the API showed it while Prometheus ran
    page: dict[str, list[str]]  # what was told once it was lost
    resolved: dict[str, list[str]]  # and once it was back
    lost: dict[str, Any]
    back: dict[str, Any]
    watchdogs_stored: int
    blind: dict[str, Any]  # alertrouter's own AlertrouterHeartbeatMissing, as the alerts API stores it


def _heartbeat(box: ClusterBox) -> dict[str, Any]:
    (beat,) = box.routers[0].http.get("/api/v1/heartbeats").json()["heartbeats"]
    assert isinstance(beat, dict)
    return beat


def _blind(box: ClusterBox, messages: int) -> bool:
    """`messages` "monitoring is blind" messages (the page, then its resolve) on each channel of the critical
    receiver: DingTalk and WeCom by their text, SMS by count (its template carries the alertname). Each channel
    sends on its own, so one having it says nothing of the others."""
    out = told(box)
    chats = all(len([t for t in out[channel] if BLIND in t]) >= messages for channel in ("dingtalk-core", "wecom-core"))
    return chats and len(out["sms-oncall"]) >= messages


def _when(box: ClusterBox, key: str, value: str) -> dict[str, Any] | None:
    beat = _heartbeat(box)
    return beat if beat[key] == value else None


def run(box: ClusterBox) -> Outcome:
    heard = wait_for(
        lambda: _when(box, "seen_via", "alert"), what="the Watchdog heard through the Alertmanagers", timeout=120
    )
    box.prometheus.stop()
    wait_for(lambda: _blind(box, 1), what="'monitoring is blind' told on every critical channel", timeout=180)
    page = told(box)
    lost = _heartbeat(box)
    box.restart_prometheus()
    wait_for(lambda: _blind(box, 2), what="the resolved message on every critical channel", timeout=180)
    back = wait_for(lambda: _when(box, "state", "ok"), what="the heartbeat ok again")
    r = box.routers[0].http.get("/api/v1/alerts", params={"filter": 'alertname="Watchdog"'})
    assert r.status_code == 200, r.text
    missing = box.routers[0].http.get("/api/v1/alerts", params={"filter": 'alertname="AlertrouterHeartbeatMissing"'})
    assert missing.status_code == 200, missing.text
    (blind,) = missing.json()["alerts"]
    return Outcome(heard, page, told(box), lost, back, r.json()["total"], blind)


def _box() -> ClusterBox:
    return ClusterBox(nodes=1, group_interval="2s", heartbeat_timeout="20s", watchdog_repeat="2s", resend_delay="1s")


SCENARIO = Scenario(box=_box, run=run)


@pytest.fixture(scope="module")
def outcome(boxes: Boxes) -> Iterator[Outcome]:
    with boxes.outcome(SCENARIO) as found:
        yield found


def test_the_watchdog_is_heard_and_never_stored_nor_told(outcome: Outcome) -> None:
    assert outcome.heard["state"] == "ok"
    assert outcome.heard["matchers"] == ['alertname="Watchdog"']
    assert outcome.watchdogs_stored == 0
    for channel, texts in outcome.page.items():
        assert not [t for t in texts if "Watchdog" in t and BLIND not in t], channel


def test_a_stopped_prometheus_is_told_once_as_monitoring_blind(outcome: Outcome) -> None:
    assert outcome.lost["state"] == "missing"
    (page,) = [t for t in outcome.page["dingtalk-core"] if BLIND in t]
    assert "严重" in page  # critical, as the shipped heartbeat's labels say
    assert "起无心跳" in page  # "silent since <time>"
    assert len([t for t in outcome.page["wecom-core"] if BLIND in t]) == 1
    # the SMS template's `alert` parameter is the alertname, cut to the template's 20 characters
    sms = [json.loads(p) for p in outcome.resolved["sms-oncall"]]
    assert [(p["severity"], p["alert"]) for p in sms] == [
        ("严重", "AlertrouterHeartbe.."),  # the receiver's words for critical and resolved (zh-CN as shipped)
        ("已恢复", "AlertrouterHeartbe.."),
    ]


def test_its_return_is_told_as_resolved(outcome: Outcome) -> None:
    assert outcome.back["state"] == "ok"
    first, second = [t for t in outcome.resolved["dingtalk-core"] if BLIND in t]
    assert "已恢复" in second
    assert "已恢复" not in first
    # blind from when the Watchdog was last heard until it was heard again, in Beijing time (zh-CN as shipped)
    blind = outcome.blind
    start, end = parse_time(blind["starts_at"]), parse_time(blind["ends_at"])
    heard_again = parse_time(outcome.back["last_seen"])
    assert start is not None
    assert end is not None
    assert heard_again is not None
    assert start == parse_time(outcome.lost["last_seen"])
    assert start < end <= heard_again
    since = clock([blind])
    assert f"监控失明：prometheus 自 {since} 起无心跳" in first
    assert f"- **持续：** {lasted([blind], 'zh-CN')}（{since} 开始）" in second

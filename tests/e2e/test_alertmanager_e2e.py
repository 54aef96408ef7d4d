"""A real Alertmanager 0.25 in front of a real alertrouter, on SQLite and on PostgreSQL.

Alerts are pushed to Alertmanager's `POST /api/v2/alerts` the way Prometheus does; Alertmanager
groups them and delivers webhooks to alertrouter with a Bearer credential. Also: Prometheus
pushing straight to alertrouter's own `/api/v2/alerts`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from e2e.harness import (
    TOKEN,
    Router,
    Store,
    gpu_annotations,
    gpu_labels,
    parse_time,
    postable_alert,
    read_metric,
    wait_for,
)
from support.procs import Proc

pytestmark = pytest.mark.e2e

NODE = 7  # gpu-node-07, instance 10.0.0.7:9400


def alertmanager_config(router_url: str, token: str) -> str:
    """The configuration recommended in front of alertrouter: one catch-all route to its webhook."""
    return f"""\
route:
  receiver: alertrouter
  group_by: [alertname, Hostname]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: alertrouter
    webhook_configs:
      - url: {router_url}/webhook/alertmanager
        send_resolved: true
        http_config:
          authorization:
            type: Bearer
            credentials: {token}
"""


def push(am: Proc, alerts: list[dict[str, Any]]) -> None:
    r = httpx.post(am.url + "/api/v2/alerts", json=alerts, timeout=10)
    assert r.status_code == 200, r.text


def am_fingerprints(am: Proc) -> dict[str, dict[str, str]]:
    """Fingerprint -> labels of every alert Alertmanager holds, resolved ones included."""
    r = httpx.get(am.url + "/api/v2/alerts", timeout=10)
    assert r.status_code == 200, r.text
    return {a["fingerprint"]: a["labels"] for a in r.json()}


def now_s() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def all_in_state(router: Router, count: int, status: str, starts_at: datetime) -> dict[str, dict[str, Any]] | None:
    """The stored alerts once there are `count` of them, all `status`, all of the episode `starts_at`."""
    alerts = router.by_fingerprint()
    done = len(alerts) == count and all(
        a["status"] == status and parse_time(a["starts_at"]) == starts_at for a in alerts.values()
    )
    return alerts if done else None


@pytest.mark.alertmanager
def test_alertmanager_delivers_fire_resolve_refire(router: Router, start_am: Callable[[str], Proc]) -> None:
    am = start_am(alertmanager_config(router.url, TOKEN))
    labels = [gpu_labels(NODE, gpu) for gpu in range(8)]
    by_labels = {frozenset(lbl.items()): lbl for lbl in labels}

    # 1. Fire: no endsAt, as Prometheus sends it (Alertmanager applies its resolve_timeout).
    first_start = now_s() - timedelta(minutes=10)
    push(am, [postable_alert(lbl, starts_at=first_start) for lbl in labels])
    stored = wait_for(lambda: all_in_state(router, 8, "firing", first_start), what="8 firing alerts in alertrouter")

    held = am_fingerprints(am)
    assert set(stored) == set(held), "alertrouter must key alerts by Alertmanager's own fingerprints"
    for fp, alert in stored.items():
        assert alert["labels"] == held[fp]
        assert frozenset(alert["labels"].items()) in by_labels
        assert alert["alertname"] == "GPUHighTemp"
        assert alert["annotations"] == gpu_annotations(alert["labels"])
        assert alert["ends_at"] is None  # Alertmanager sends Go's zero time for a firing alert
        assert alert["resolved_by"] is None
        assert alert["episodes"] == 1

    # 2. Resolve: the same alerts with an endsAt in the past.
    resolved_at = now_s() - timedelta(seconds=1)
    push(am, [postable_alert(lbl, starts_at=first_start, ends_at=resolved_at) for lbl in labels])
    stored = wait_for(lambda: all_in_state(router, 8, "resolved", first_start), what="8 resolved alerts")
    for fp, alert in stored.items():
        assert alert["resolved_by"] == "source"
        assert parse_time(alert["ends_at"]) == resolved_at
        assert alert["episodes"] == 1
        detail = router.detail(fp)
        assert len(detail["episodes"]) == 1
        episode = detail["episodes"][0]
        assert parse_time(episode["starts_at"]) == first_start
        assert parse_time(episode["ends_at"]) == resolved_at
        assert episode["resolved_by"] == "source"
        assert [e["kind"] for e in detail["events"] if e["kind"] != "decision"] == ["resolved", "firing"]

    # 3. Fire again with a new startsAt: a second episode of the same alerts.
    second_start = max(now_s(), resolved_at + timedelta(seconds=1))
    push(am, [postable_alert(lbl, starts_at=second_start) for lbl in labels])
    stored = wait_for(lambda: all_in_state(router, 8, "firing", second_start), what="8 re-fired alerts")
    assert set(stored) == set(am_fingerprints(am))
    for fp in stored:
        detail = router.detail(fp)
        assert detail["alert"]["episodes"] == 2
        assert detail["alert"]["resolved_by"] is None
        episodes = sorted(detail["episodes"], key=lambda e: e["starts_at"])
        assert [parse_time(e["starts_at"]) for e in episodes] == [first_start, second_start]
        assert [e["resolved_by"] for e in episodes] == ["source", None]
        assert episodes[1]["ends_at"] is None
        assert [e["kind"] for e in detail["events"] if e["kind"] != "decision"] == ["refired", "resolved", "firing"]
    assert router.metric("alertrouter_webhooks_received_total", endpoint="webhook", result="unauthorized") == 0


@pytest.mark.alertmanager
def test_alertmanager_with_wrong_token_is_refused(router: Router, start_am: Callable[[str], Proc]) -> None:
    am = start_am(alertmanager_config(router.url, "not-the-" + TOKEN))
    push(am, [postable_alert(gpu_labels(9, gpu)) for gpu in range(2)])

    wait_for(
        lambda: router.metric("alertrouter_webhooks_received_total", endpoint="webhook", result="unauthorized") > 0,
        what="alertrouter to refuse Alertmanager's webhook",
    )
    assert router.total() == 0
    assert router.metric("alertrouter_webhooks_received_total", endpoint="webhook", result="stored") == 0
    assert router.metric("alertrouter_alerts_received_total", endpoint="webhook") == 0

    # Alertmanager saw the 401 as a failed notification.
    def failed() -> float:
        text = httpx.get(am.url + "/metrics", timeout=10).text
        return read_metric(text, "alertmanager_notifications_failed_total", integration="webhook")

    wait_for(lambda: failed() > 0, what="Alertmanager to count the refused notification")


def test_prometheus_push_without_times_defaults_like_alertmanager(router: Router) -> None:
    """Missing startsAt is "now", missing endsAt is "now + resolve_timeout (5m)", both at receipt."""
    fresh = gpu_labels(12, 0)
    old = gpu_labels(12, 1)  # started an hour ago, still firing: endsAt is now + 5m, not startsAt + 5m
    over = gpu_labels(12, 2)  # endsAt in the past: resolved on arrival
    hour_ago = now_s() - timedelta(hours=1)
    ended = now_s() - timedelta(minutes=10)

    before = datetime.now(UTC)
    r = router.post_api_v2(
        [
            postable_alert(fresh),
            postable_alert(old, starts_at=hour_ago),
            postable_alert(over, starts_at=hour_ago, ends_at=ended),
        ]
    )
    after = datetime.now(UTC)
    assert r.status_code == 200, r.text

    stored = {a["labels"]["gpu"]: a for a in router.alerts()}
    assert set(stored) == {"0", "1", "2"}
    # Not a performance bound: `before`/`after` bracket the request; the slack only absorbs clock rounding.
    slack = timedelta(seconds=5)
    ttl = timedelta(minutes=5)

    a = stored["0"]
    assert a["labels"] == fresh
    assert a["status"] == "firing"
    starts, ends = parse_time(a["starts_at"]), parse_time(a["ends_at"])
    assert starts is not None
    assert ends is not None
    assert before - slack <= starts <= after + slack
    assert before + ttl - slack <= ends <= after + ttl + slack

    b = stored["1"]
    assert b["status"] == "firing"
    assert parse_time(b["starts_at"]) == hour_ago
    ends = parse_time(b["ends_at"])
    assert ends is not None
    assert before + ttl - slack <= ends <= after + ttl + slack

    c = stored["2"]
    assert c["status"] == "resolved"
    assert c["resolved_by"] == "source"
    assert parse_time(c["ends_at"]) == ended
    assert c["episodes"] == 1


@pytest.mark.alertmanager
def test_direct_push_fingerprints_match_alertmanager(router: Router, start_am: Callable[[str], Proc]) -> None:
    """Prometheus pointed at alertrouter must yield the fingerprints Alertmanager would have used."""
    am = start_am(alertmanager_config(router.url, TOKEN))
    alerts = [postable_alert(gpu_labels(NODE + 1, gpu, severity="critical")) for gpu in range(3)]
    alerts.append(postable_alert({**gpu_labels(NODE + 1, 3), "err_msg": 'Xid 79: GPU has fallen off the bus "!"'}))
    r = router.post_api_v2(alerts)
    assert r.status_code == 200, r.text
    direct = {fp: a["labels"] for fp, a in router.by_fingerprint().items()}
    assert len(direct) == 4

    push(am, alerts)
    assert direct == am_fingerprints(am)
    # Alertmanager forwards them to alertrouter's webhook too: same fingerprints, so no new alerts.
    wait_for(
        lambda: router.metric("alertrouter_alerts_received_total", endpoint="webhook") >= 4,
        what="Alertmanager's webhook with the same alerts",
    )
    assert {fp: a["labels"] for fp, a in router.by_fingerprint().items()} == direct


def test_serve_times_its_garbage_collections(router: Router) -> None:
    """`/metrics` says how long Python's cyclic collector stopped the process, by generation (a long
    generation 2 collection delays every answer); young collections come with any traffic."""

    def collected() -> bool:
        alerts = [postable_alert(gpu_labels(NODE + 2, gpu)) for gpu in range(8)]
        assert router.post_api_v2(alerts).status_code == 200
        return router.metric("alertrouter_gc_pause_seconds_count", generation="0") > 0

    wait_for(collected, what="a young collection timed")
    assert router.metric("alertrouter_gc_pause_seconds_sum", generation="0") > 0


def test_serve_checkpoints_sqlites_log_in_a_loop_of_its_own(router: Router, store: Store) -> None:
    """On SQLite the write-ahead log is copied into the database file every second by a supervised loop
    (not by whichever commit crosses SQLite's mark); PostgreSQL has no such loop."""
    registered = router.metric("alertrouter_loop_last_pass_timestamp_seconds", loop="checkpoint") > 0
    if store.kind == "postgresql":
        assert not registered
        return
    assert registered
    alerts = [postable_alert(gpu_labels(NODE + 3, gpu)) for gpu in range(8)]
    assert router.post_api_v2(alerts).status_code == 200
    wait_for(lambda: router.metric("alertrouter_sqlite_wal_pages") > 0, what="a checkpoint of a log with pages")
    assert router.metric("alertrouter_sqlite_checkpoint_duration_seconds_count") > 0

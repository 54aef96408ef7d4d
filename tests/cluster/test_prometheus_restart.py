"""Prometheus restarted with alerts firing and told, through the whole real chain (tests/cluster/box.py,
timeline in restart.py): it sends its active alerts again through the Alertmanager pair, and nobody is told
twice; alertrouter's store shows them firing all along, not resolved and fired again.

The timeline runs once for the module (about a minute and a half), then each test checks one promise.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime

import httpx
import pytest

from cluster.box import ClusterBox
from cluster.restart import DOWN, HOT, MARKER, NODES, XID48, Restart, run_restart
from cluster.scenarios import MARKS, Boxes, Scenario
from cluster.told import clock
from e2e.harness import parse_time

pytestmark = MARKS

RESTORED = {"NodeDown", "GPUHighTemp", "DCGMExporterDown"}  # rules with a `for:`, whose activeAt is restored
TOLD = {"NodeDown", "GPUHighTemp", "GPUXidError"}  # what reached people before the restart


def _time(text: str) -> datetime:
    at = parse_time(text.replace("+00:00", "Z"))
    assert at is not None
    return at


def _second(text: str) -> datetime:
    return _time(text).replace(microsecond=0)


SCENARIO = Scenario(box=lambda: ClusterBox(nodes=NODES), run=run_restart)


@pytest.fixture(scope="module")
def restart(boxes: Boxes) -> Iterator[Restart]:
    with boxes.outcome(SCENARIO) as outcome:
        yield outcome


def test_the_restarted_prometheus_sent_its_firing_alerts_again(restart: Restart) -> None:
    before, after = restart.prometheus_before, restart.prometheus_after
    assert {a["labels"]["alertname"] for a in before.values()} >= TOLD
    assert set(before) <= set(after)
    assert restart.resent >= 2 * len(before)  # to each Alertmanager of the pair
    # the `for` state came back from ALERTS_FOR_STATE, whose value is activeAt in whole seconds, for every alert
    # Prometheus found active when it restored: those whose rule still held on the data it had at the stop
    # (restart.py). They did not go pending again from zero (they would have a later activeAt).
    kept = {key for key, alert in before.items() if alert["labels"]["alertname"] in RESTORED}
    held = kept & restart.held_at_stop
    # the dark node's `up` is 0 whatever its last scrape did, so its NodeDown and DCGMExporterDown always are
    assert {before[key]["labels"]["alertname"] for key in held} >= {"NodeDown", "DCGMExporterDown"}, held
    for key in held:
        assert parse_time(after[key]["activeAt"]) == _second(before[key]["activeAt"]), key
    # A firing alert's rule stops holding at a clean stop only when its target's last scrape failed, in
    # practice a scrape the stop cut: Prometheus records `up` 0 and marks the target's series stale, so nothing
    # is restored for it. That must be the target's only failed scrape since the "before" snapshot; earlier
    # ones (a scrape timing out on a loaded machine) would mean the alert flapped before the stop.
    for key in kept - held:
        target = f"{before[key]['labels']['job']}/{before[key]['labels']['instance']}"
        cut = (restart.up_at_stop.get(target), restart.failed_scrapes.get(target))
        assert cut == ("0", 1), (key, "up at the stop, failed scrapes since the snapshot:", cut)


def test_the_alertmanagers_kept_each_alerts_first_start(restart: Restart) -> None:
    """The re-sent alerts start now (Prometheus sends FiredAt); Alertmanager merged each into the alert it held,
    keeping the earlier start, so a webhook would still carry the start alertrouter stored."""
    told = {fp: a for fp, a in restart.stored_before.items() if a["status"] == "firing"}
    assert {a["alertname"] for a in told.values()} >= TOLD
    for am in restart.box.alertmanagers:
        held = {a["fingerprint"]: a for a in httpx.get(am.url + "/api/v2/alerts", timeout=10).json()}
        for fp, stored in told.items():
            assert fp in held, (am.url, stored["labels"])
            assert parse_time(held[fp]["startsAt"]) == _time(stored["starts_at"]), (fp, stored["labels"])
            assert held[fp]["status"]["state"] in ("active", "suppressed"), held[fp]


def test_no_new_message_for_what_was_already_told(restart: Restart) -> None:
    new = restart.told_after.since(restart.told_before)
    marker = f"gpu-node-{MARKER[0]:02d}"
    # the marker (raised after the restart) is the only thing told since, once per critical channel
    for channel in ("dingtalk_core", "wecom"):
        assert len(new[channel]) == 1, (channel, new[channel])
        assert marker in new[channel][0]
        assert f"gpu-node-{XID48[0]:02d}" not in new[channel][0]
    assert [p["node"] for p in new["sms"]] == [marker]
    started = [a for a in restart.stored_after.values() if a["alertname"] == "GPUXidError" and a["node"] == marker]
    assert started
    for channel in ("dingtalk_core", "wecom"):  # its own start (by the restarted Prometheus), in Beijing time
        assert clock(started) in new[channel][0], new[channel][0]
    assert new["dingtalk_ops"] == []
    assert new["mails"] == []
    # and in the store: deliveries since the restart are the marker's only
    before = {n["id"] for n in restart.notifications_before}
    since = [n for n in restart.notifications if n["id"] not in before]
    assert {n["channel"] for n in since} == {"dingtalk-core", "wecom-core", "sms-oncall"}
    assert {n["incident_key"] for n in since} == {f'gpu-by-node{{alertname="GPUXidError",node="{marker}"}}'}
    assert {n["kind"] for n in since} == {"firing"}


def test_the_store_shows_them_firing_all_along(restart: Restart) -> None:
    for fp, alert in restart.stored_before.items():
        now = restart.stored_after[fp]
        assert now["status"] == alert["status"], alert["labels"]
        assert now["episodes"] == alert["episodes"] == 1, alert["labels"]  # never resolved and fired again
        assert now["starts_at"] == alert["starts_at"], alert["labels"]
    firing = {a["alertname"] for a in restart.stored_after.values() if a["status"] == "firing"}
    assert firing >= TOLD
    for iid, incident in restart.incidents_before.items():
        now = restart.incidents_after[iid]
        assert now["status"] == incident["status"] == "firing", incident["key"]
        assert now["resolved_at"] is None
        assert now["opened_at"] == incident["opened_at"]
    assert not [n for n in restart.notifications if n["kind"] == "resolved"]


def test_what_was_told_before_the_restart(restart: Restart) -> None:
    """The starting point is what the test means it to be: each alert told once where it belongs."""
    told = restart.told_before
    assert len([t for t in told.dingtalk_core if "NodeDown" in t]) == 1
    assert len([t for t in told.dingtalk_core if "GPUXidError" in t]) == 1
    assert f"gpu-node-{DOWN:02d}" in json.dumps(told.dingtalk_core)
    hot = f"gpu-node-{HOT[0]:02d}：6/8 块 GPU GPUHighTemp"  # zh-CN, as the shipped rules say
    assert [t for t in told.dingtalk_ops if hot in t] == told.dingtalk_ops
    assert len(told.dingtalk_ops) == 1
    hot_alerts = [a for a in restart.stored_before.values() if a["alertname"] == "GPUHighTemp"]
    assert clock(hot_alerts) in told.dingtalk_ops[0], told.dingtalk_ops[0]
    assert sorted(p["alert"] for p in told.sms) == ["GPUXidError", "NodeDown"]

"""The GPU alert fixtures (tests/fixtures/gpu, loaded by tests/support/gpu_fixtures.py) against the facts of
what dcgm-exporter sends (tests/support/dcgm.py): real shapes have none of the problems the checks look for,
each hostile one has exactly its own; every post is a webhook alertrouter's parser takes whole; each story
says what its name promises."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from alertrouter.fingerprints import fingerprint
from alertrouter.gpu.xid import from_labels
from alertrouter.ingest.payloads import parse_webhook
from support.dcgm import KUBERNETES_WORKLOAD_LABELS, XID_TEXT, gpu_problems, uuid_clashes
from support.gpu_fixtures import GO_ZERO_TIME, GpuFixture, load, names
from support.procs import run_tool, tool

REPO = Path(__file__).resolve().parents[2]
STORIES = {"xid79_then_xid45", "xid48_twice_11_days", "dcgm4_err_code", "servicemonitor_xid13"}
HOSTILE = {"hostile_unknown_xid", "hostile_uuid_missing", "hostile_duplicate_uuid"}
RFC3339 = "%Y-%m-%dT%H:%M:%S.%fZ"
GROUP_BY = set(yaml.safe_load((REPO / "rules/deploy/alertmanager.yml").read_text())["route"]["group_by"])


def codes(fixture: GpuFixture) -> set[str]:
    labels = fixture.labels()
    found = [problem for one in labels for problem in gpu_problems(one)] + uuid_clashes(labels)
    return {problem.split(":")[0] for problem in found}


def test_the_fixtures_are_the_stories_and_the_hostile_shapes() -> None:
    assert set(names()) == STORIES | HOSTILE


@pytest.mark.parametrize("name", sorted(STORIES | HOSTILE))
def test_a_fixture_has_the_labels_dcgm_exporter_sends_or_its_own_flaw(name: str) -> None:
    fixture = load(name)
    assert codes(fixture) == set(fixture.problems)
    assert bool(fixture.problems) is (name in HOSTILE)


@pytest.mark.parametrize("name", sorted(STORIES | HOSTILE))
def test_every_post_is_a_webhook_alertrouter_takes_whole(name: str) -> None:
    for post in load(name).posts:
        parsed = parse_webhook(post.body())
        assert parsed.problems == []
        assert len(parsed.batch.alerts) == len(post.alerts())
        for alert in post.alerts():
            assert alert["fingerprint"] == fingerprint(alert["labels"])  # as Alertmanager computes it
            assert alert["startsAt"] <= post.at.strftime(RFC3339)
        payload = post.payload
        assert set(payload["groupLabels"]) <= GROUP_BY
        assert payload["groupLabels"].items() <= payload["commonLabels"].items()
        assert payload["groupKey"] == "{}:{" + ", ".join(f'{k}="{v}"' for k, v in payload["groupLabels"].items()) + "}"


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"UUID": "GPU-0"}, "uuid-malformed"),
        ({"device": "nvidia7"}, "device-mismatch"),
        ({"pci_bus_id": "0000:5d:00.0"}, "pci-bus-id-malformed"),
        ({"Hostname": "gpu-node-07"}, "host-label-twice"),
        ({"xid": "48"}, "xid-disagrees"),
        ({"err_msg": "Double Bit ECC Error"}, "err-msg-mismatch"),
        ({"xid": "79.0", "err_code": "79.0"}, "xid-malformed"),
        ({"exported_pod": "llama-train-worker-3"}, "workload-half"),
        ({"modelName": ""}, "label-missing"),
    ],
)
def test_the_checks_catch_what_dcgm_exporter_never_sends(change: Mapping[str, str], code: str) -> None:
    (fallen, *_) = load("xid79_then_xid45").labels()
    assert gpu_problems(fallen) == []
    assert [problem.split(":")[0] for problem in gpu_problems({**fallen, **change})] == [code]


def test_xid79_on_one_gpu_then_xid45_on_the_seven_others_seconds_later() -> None:
    first, followers = load("xid79_then_xid45").posts
    (fallen,) = first.alerts()
    assert (fallen["labels"]["alertname"], fallen["labels"]["gpu"], from_labels(fallen["labels"])) == (
        "GPUFallenOffBus",
        "3",
        from_labels({"xid": "79"}),
    )
    assert [a["labels"]["gpu"] for a in followers.alerts()] == ["0", "1", "2", "4", "5", "6", "7"]
    for alert in followers.alerts():
        labels = alert["labels"]
        assert (labels["alertname"], labels["xid"], labels["err_code"]) == ("GPUXidError", "45", "45")
        assert labels["err_msg"] == XID_TEXT[45]
        assert (labels["hostname"], labels["instance"]) == (fallen["labels"]["hostname"], "10.0.0.7:9400")
        assert alert["startsAt"][:19] == "2026-11-21T08:14:18"  # one 15s rule evaluation after the XID 79
    assert fallen["startsAt"][:19] == "2026-11-21T08:14:03"
    assert len({labels["UUID"] for labels in load("xid79_then_xid45").labels()}) == 8


def test_xid48_on_one_gpu_eleven_days_apart() -> None:
    fixture = load("xid48_twice_11_days")
    statuses = [(post.alerts()[0]["status"], post.alerts()[0]["startsAt"][:19]) for post in fixture.posts]
    assert statuses == [
        ("firing", "2026-11-10T08:14:03"),
        ("resolved", "2026-11-10T08:14:03"),
        ("firing", "2026-11-21T08:14:03"),
    ]
    assert len({alert["fingerprint"] for alert in fixture.alerts()}) == 1  # the same GPU, the same labels
    assert {labels["Hostname"] for labels in fixture.labels()} == {"gpu-node-12"}
    assert all("err_code" not in labels and labels["xid"] == "48" for labels in fixture.labels())


def test_shifted_moves_the_story_to_now_and_keeps_its_gaps() -> None:
    now = datetime(2027, 3, 1, 12, 0, tzinfo=UTC)
    fixture = load("xid48_twice_11_days").shifted(now)
    assert fixture.posts[-1].at == now
    first, resolved, again = (post.alerts()[0] for post in fixture.posts)
    assert again["startsAt"] == "2027-03-01T11:59:50.000000Z"  # posted 10s after it started
    assert (first["endsAt"], again["endsAt"]) == (GO_ZERO_TIME, GO_ZERO_TIME)
    started = now - timedelta(days=11, seconds=10)
    assert first["startsAt"] == resolved["startsAt"] == started.strftime(RFC3339)
    assert resolved["endsAt"] == (started + timedelta(hours=2, minutes=7)).strftime(RFC3339)  # the GPU reset
    assert load("xid48_twice_11_days").posts[-1].at.year == 2026  # the stored story is untouched


def test_the_err_code_shape_and_a_rule_that_names_the_xid_only_there() -> None:
    shipped, site = (post.alerts()[0]["labels"] for post in load("dcgm4_err_code").posts)
    assert (shipped["xid"], shipped["err_code"], shipped["err_msg"]) == ("94", "94", "Contained ECC error")
    assert "xid" not in site
    assert from_labels(site) == from_labels(shipped) == from_labels({"xid": "94"})
    assert "Hostname" in site


def test_the_servicemonitor_shape_names_the_workload_and_not_the_node_address() -> None:
    for labels in load("servicemonitor_xid13").labels():
        assert set(KUBERNETES_WORKLOAD_LABELS) <= set(labels)
        assert (labels["exported_pod"], labels["exported_namespace"]) == ("llama-train-worker-3", "ml-research")
        assert (labels["pod"], labels["instance"]) == ("nvidia-dcgm-exporter-5x7kq", "10.244.3.17:9400")
        assert "node" not in labels
        assert labels["prometheus"] == "monitoring/kube-prometheus-stack-prometheus"


def _rule_test(alert: dict[str, Any]) -> dict[str, Any]:
    """A promtool test group: the series the alert came from, and the alert itself as expected output."""
    labels = dict(alert["labels"])
    alertname, xid = labels.pop("alertname"), labels["xid"]
    series = {k: v for k, v in labels.items() if k not in ("severity", "xid")}
    selector = ",".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in series.items())
    return {
        "interval": "1m",
        "input_series": [{"series": f"DCGM_FI_DEV_XID_ERRORS{{{selector}}}", "values": f"{xid}x3"}],
        "alert_rule_test": [
            {
                "eval_time": "1m",
                "alertname": alertname,
                "exp_alerts": [{"exp_labels": labels, "exp_annotations": alert["annotations"]}],
            }
        ],
    }


def test_the_shipped_rules_alerts_are_what_gpu_rules_yml_renders(tmp_path: Path) -> None:
    """Every GPUXidError and GPUFallenOffBus of the fixtures, labels and both languages' text, is exactly what
    Prometheus makes of the series it names under the shipped rules (promtool, which compares them exactly)."""
    shipped = [
        a
        for name in names()
        for a in load(name).alerts()
        if a["labels"]["alertname"] in ("GPUXidError", "GPUFallenOffBus")
    ]
    assert len(shipped) == 18  # all but the site rule's DcgmXidErrors
    firing = [a for a in shipped if a["status"] == "firing"]
    (tmp_path / "gpu.rules.yml").write_text((REPO / "rules/prometheus/gpu.rules.yml").read_text(encoding="utf-8"))
    tests = {"rule_files": ["gpu.rules.yml"], "evaluation_interval": "1m", "tests": [_rule_test(a) for a in firing]}
    (tmp_path / "fixtures.tests.yml").write_text(yaml.safe_dump(tests, allow_unicode=True), encoding="utf-8")
    result = run_tool([tool("promtool", "prometheus"), "test", "rules", "fixtures.tests.yml"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]

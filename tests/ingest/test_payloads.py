"""Parsing both ingest shapes: realistic payloads, every rejection naming its field."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from alertrouter.fingerprints import fingerprint
from alertrouter.ingest.payloads import PayloadError, parse_api_v2, parse_webhook
from alertrouter.model import AlertStatus

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NOW = datetime(2026, 11, 21, 8, 17, tzinfo=UTC)


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def body(data: Any) -> bytes:
    return json.dumps(data).encode()


def test_webhook_fixture_parses_fully() -> None:
    parsed = parse_webhook((FIXTURES / "webhook_gpu_temp_firing.json").read_bytes())
    batch = parsed.batch
    assert parsed.problems == []
    assert [a.status for a in batch.alerts] == [AlertStatus.FIRING, AlertStatus.FIRING, AlertStatus.RESOLVED]
    first, second, third = batch.alerts
    assert first.fingerprint == "1a2b3c4d5e6f7081"  # Alertmanager's own fingerprint is kept
    assert second.fingerprint == fingerprint(second.labels)  # absent: computed the same way
    assert first.ends_at is None  # Go's zero time on a firing alert means "no end"
    assert first.starts_at == datetime(2026, 11, 21, 8, 14, 3, 517889, tzinfo=UTC)  # ns truncated to µs
    assert third.ends_at == datetime(2026, 11, 21, 8, 16, 3, 517889, tzinfo=UTC)
    assert first.labels["Hostname"] == "gpu-node-07"
    assert batch.receiver == "alertrouter"
    assert batch.group_key == '{}:{Hostname="gpu-node-07", alertname="GPUHighTemp"}'
    assert batch.external_url == "http://alertmanager-0.monitoring:9093"


def test_ha_twins_share_a_digest_and_other_changes_do_not() -> None:
    data = fixture("webhook_gpu_temp_firing.json")
    twin = {**data, "externalURL": "http://alertmanager-1.monitoring:9093"}
    changed = {**data, "truncatedAlerts": 3}
    digest = parse_webhook(body(data)).batch.digest
    assert parse_webhook(body(twin)).batch.digest == digest
    assert parse_webhook(body(changed)).batch.digest != digest
    # key order and whitespace do not matter either
    assert parse_webhook(json.dumps(data, indent=2, sort_keys=True).encode()).batch.digest == digest


def test_truncated_alerts_recorded() -> None:
    data = fixture("webhook_gpu_temp_firing.json") | {"truncatedAlerts": 12}
    assert parse_webhook(body(data)).batch.truncated_alerts == 12


def test_api_v2_defaults_follow_alertmanager() -> None:
    parsed = parse_api_v2((FIXTURES / "prometheus_push_node_down.json").read_bytes(), now=NOW)
    explicit, defaulted = parsed.batch.alerts
    assert explicit.status is AlertStatus.FIRING
    assert explicit.ends_at == datetime(2026, 11, 21, 8, 19, tzinfo=UTC)
    assert defaulted.starts_at == NOW
    assert defaulted.ends_at == NOW + timedelta(minutes=5)
    assert "cluster" not in defaulted.labels  # empty value = absent, as Alertmanager does
    assert defaulted.fingerprint == fingerprint({k: v for k, v in defaulted.labels.items()})


def test_api_v2_past_ends_at_is_resolved() -> None:
    data = [
        {
            "labels": {"alertname": "NodeDown"},
            "startsAt": "2026-11-21T08:00:00Z",
            "endsAt": "2026-11-21T08:10:00Z",
        }
    ]
    (alert,) = parse_api_v2(body(data), now=NOW).batch.alerts
    assert alert.status is AlertStatus.RESOLVED


GOOD = {"status": "firing", "labels": {"alertname": "X"}, "startsAt": "2026-11-21T08:00:00Z"}


@pytest.mark.parametrize(
    ("payload", "names"),
    [
        pytest.param(b"{not json", "invalid JSON", id="malformed-json"),
        pytest.param(b"[]", "expected a JSON object", id="array-not-object"),
        pytest.param(body({"alerts": []}), "version", id="missing-version"),
        pytest.param(body({"version": "5", "alerts": []}), "version", id="unknown-version"),
        pytest.param(body({"version": "4"}), "alerts", id="missing-alerts"),
        pytest.param(body({"version": "4", "alerts": {}}), "alerts", id="alerts-not-list"),
        pytest.param(body({"version": "4", "truncatedAlerts": -1, "alerts": []}), "truncatedAlerts", id="negative"),
        pytest.param(
            body({"version": "4", "alerts": [{**GOOD, "labels": {"alertname": 1}}]}),
            "alerts[0].labels.alertname",
            id="label-value-number",
        ),
        pytest.param(body({"version": "4", "alerts": [{**GOOD, "labels": {}}]}), "alerts[0].labels", id="no-labels"),
        pytest.param(
            body({"version": "4", "alerts": [{**GOOD, "labels": {"job": "x", "": "y"}}]}),
            "alerts[0].labels: empty label name",
            id="empty-label-name",
        ),
        pytest.param(
            body({"version": "4", "alerts": [{**GOOD, "status": "pending"}]}),
            "alerts[0].status",
            id="bad-status",
        ),
        pytest.param(
            body({"version": "4", "alerts": [{**GOOD, "startsAt": "yesterday"}]}),
            "alerts[0].startsAt",
            id="bad-time",
        ),
        pytest.param(
            body({"version": "4", "alerts": [{k: v for k, v in GOOD.items() if k != "startsAt"}]}),
            "alerts[0].startsAt",
            id="missing-starts",
        ),
        pytest.param(b"\xff\xfe{", "JSON", id="not-utf8"),
    ],
)
def test_webhook_rejections_name_the_field(payload: bytes, names: str) -> None:
    with pytest.raises(PayloadError) as info:
        parse_webhook(payload)
    assert any(names in p for p in info.value.problems), info.value.problems


@pytest.mark.parametrize(
    ("payload", "names"),
    [
        pytest.param(body({"labels": {"alertname": "X"}}), "expected a JSON array", id="object-not-array"),
        pytest.param(body([{"annotations": {}}]), "[0].labels", id="missing-labels"),
        pytest.param(body([{"labels": {}}]), "[0].labels: at least one label pair required", id="no-labels"),
        pytest.param(body([{"labels": {"job": ""}}]), "[0].labels: at least one label", id="only-empty-values"),
        pytest.param(
            body(
                [
                    {
                        "labels": {"alertname": "X"},
                        "startsAt": "2026-11-21T09:00:00Z",
                        "endsAt": "2026-11-21T08:00:00Z",
                    }
                ]
            ),
            "[0].endsAt",
            id="ends-before-starts",
        ),
        pytest.param(body([{"labels": {"alertname": ["X"]}}]), "[0].labels.alertname", id="label-value-list"),
    ],
)
def test_api_v2_rejections_name_the_field(payload: bytes, names: str) -> None:
    with pytest.raises(PayloadError) as info:
        parse_api_v2(payload, now=NOW)
    assert any(names in p for p in info.value.problems), info.value.problems


def test_one_bad_alert_does_not_lose_the_others() -> None:
    data = {
        "version": "4",
        "alerts": [GOOD, {**GOOD, "labels": {"alertname": 7}}, {**GOOD, "labels": {"alertname": "Y"}}],
    }
    parsed = parse_webhook(body(data))
    assert [a.alertname for a in parsed.batch.alerts] == ["X", "Y"]
    assert parsed.batch.rejected_alerts == 1
    assert len(parsed.problems) == 1
    assert parsed.problems[0].startswith("alerts[1].labels.alertname")


def test_empty_webhook_is_valid() -> None:
    parsed = parse_webhook(body({"version": "4", "alerts": []}))
    assert parsed.batch.alerts == []
    assert parsed.problems == []


def test_nul_characters_are_replaced_everywhere_and_the_senders_fingerprint_kept() -> None:
    data = fixture("webhook_gpu_temp_firing.json")
    first = data["alerts"][0]
    first["labels"]["gpu"] = "3\u0000"
    first["annotations"]["summary\u0000"] = "hot\u0000"
    first["generatorURL"] += "\u0000"
    data["groupKey"] += "\u0000"
    raw = body(data)
    assert b"\\u0000" in raw  # how JSON carries it
    batch = parse_webhook(raw).batch
    alert = batch.alerts[0]
    assert alert.labels["gpu"] == "3\ufffd"
    assert alert.annotations["summary\ufffd"] == "hot\ufffd"
    assert alert.generator_url.endswith("\ufffd")
    assert (batch.group_key or "").endswith("\ufffd")
    assert alert.fingerprint == first["fingerprint"]  # Alertmanager's, as sent
    texts = [t for a in batch.alerts for d in (a.labels, a.annotations) for t in (*d, *d.values())]
    assert not [t for t in texts if "\x00" in t]
    pushed = parse_api_v2(body([{"labels": {"alertname": "X", "gpu": "\u0000"}}]), now=NOW).batch.alerts[0]
    assert pushed.labels == {"alertname": "X", "gpu": "\ufffd"}
    assert pushed.fingerprint == fingerprint(pushed.labels)


# Alertmanager stores and forwards any alert with one valid label (no `alertname` needed) whose label
# names are non-empty UTF-8; it never retries a 4xx, so refusing one here would lose it for good.
OTEL_LABELS = {
    "service.name": "checkout",
    "k8s.pod.name": "checkout-7d9f8b6c5-x2x4q",
    "k8s.namespace.name": "shop",
    "severity": "warning",
}


@pytest.mark.parametrize(
    "labels",
    [
        pytest.param({"job": "backup", "instance": "db-1:9100"}, id="no-alertname"),
        pytest.param(OTEL_LABELS, id="otel-names-no-alertname"),
        pytest.param({**OTEL_LABELS, "alertname": "HighLatency"}, id="otel-names"),
        pytest.param({"0foo": "x", "foo🙂": "y", "with space": "z"}, id="utf8-names"),
    ],
)
def test_any_label_set_alertmanager_accepts_is_stored(labels: dict[str, str]) -> None:
    webhook = parse_webhook(body({"version": "4", "alerts": [{**GOOD, "labels": labels}]}))
    api = parse_api_v2(body([{"labels": labels}]), now=NOW)
    for parsed in (webhook, api):
        assert parsed.problems == []
        (alert,) = parsed.batch.alerts
        assert alert.labels == labels
        assert alert.fingerprint == fingerprint(labels)
        assert alert.alertname == labels.get("alertname", "")


# Valid alerts with every shape the boundary normalises: an offset time zone, nanoseconds, Go's zero
# time, an empty label value (dropped), no annotations, non-ASCII label values, a resolved alert.
_TRICKY = [
    {
        "status": "firing",
        "labels": {"alertname": "GPUHighTemp", "Hostname": "gpu-node-07", "gpu": "3", "team": ""},
        "annotations": {"summary": "GPU 3 on gpu-node-07 is at 91°C"},
        "startsAt": "2026-11-21T16:14:03.517889123+08:00",
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus-0:9090/graph?g0.expr=DCGM_FI_DEV_GPU_TEMP+%3E+85",
        "fingerprint": "1a2b3c4d5e6f7081",
    },
    {
        "status": "resolved",
        "labels": {"alertname": "GPUXidError", "Hostname": "gpu-node-08", "err_msg": "显存 ECC 错误"},
        "startsAt": "2026-11-21T08:00:00Z",
        "endsAt": "2026-11-21T08:05:00.5Z",
    },
]
_REFUSED = {"status": "firing", "labels": {"alertname": "Broken"}, "startsAt": "not a time"}


def test_a_payload_of_valid_alerts_parses_as_its_alerts_do_beside_a_refused_one() -> None:
    """A payload whose alerts all pass is validated in one go; beside a refused alert, the same alerts are
    checked one by one. Both ways must give the same alerts."""
    envelope = {"version": "4", "receiver": "r", "status": "firing", "groupKey": "g"}
    whole = parse_webhook(body({**envelope, "alerts": _TRICKY}))
    mixed = parse_webhook(body({**envelope, "alerts": [_TRICKY[0], _REFUSED, _TRICKY[1]]}))
    assert whole.problems == []
    assert mixed.problems == ["alerts[1].startsAt: Input should be a valid datetime or date, invalid character in year"]
    assert mixed.batch.alerts == whole.batch.alerts
    assert whole.batch.alerts[0].starts_at == datetime(2026, 11, 21, 8, 14, 3, 517889, tzinfo=UTC)
    assert whole.batch.alerts[0].starts_at.tzinfo is UTC
    assert "team" not in whole.batch.alerts[0].labels

    pushes = [{k: v for k, v in a.items() if k not in ("status", "fingerprint")} for a in _TRICKY]
    pushes.append({"labels": {"alertname": "NoTimes", "instance": "10.0.0.1:9400"}})
    whole_v2 = parse_api_v2(body(pushes), now=NOW)
    mixed_v2 = parse_api_v2(body([pushes[0], _REFUSED, *pushes[1:]]), now=NOW)
    assert whole_v2.problems == []
    assert len(mixed_v2.problems) == 1
    assert mixed_v2.batch.alerts == whole_v2.batch.alerts
    assert (whole_v2.batch.alerts[2].starts_at, whole_v2.batch.alerts[2].ends_at) == (NOW, NOW + timedelta(minutes=5))

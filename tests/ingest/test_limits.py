"""The ingest boundary (alertrouter.ingest.limits): every value the issue's hostile run got past
validation is refused for its own alert, with a problem naming the field, and the rest is kept."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from alertrouter.ingest import decode
from alertrouter.ingest.limits import (
    MAX_ALERTNAME,
    MAX_ANNOTATION_VALUE,
    MAX_ANNOTATIONS,
    MAX_GENERATOR_URL,
    MAX_LABEL_VALUE,
    MAX_LABELS,
    MAX_NAME,
    TIME_MAX,
)
from alertrouter.ingest.payloads import PayloadError, parse_api_v2, parse_webhook

NOW = datetime(2026, 11, 21, 8, 17, tzinfo=UTC)
# As Alertmanager 0.25 sends a firing dcgm-exporter alert (labels from ../shared/reference/gpu-alerts.md).
GOOD: dict[str, Any] = {
    "status": "firing",
    "labels": {
        "alertname": "GPUXidError",
        "instance": "10.0.0.100:9400",
        "Hostname": "gpu-node-100",
        "gpu": "3",
        "UUID": "GPU-5c9f4d1a-8a8e-2b1c-9d3e-7f6a5b4c3d2e",
        "severity": "critical",
    },
    "annotations": {"summary": "XID 79 on GPU 3"},
    "startsAt": "2026-11-21T08:15:30.123Z",
    "endsAt": "0001-01-01T00:00:00Z",
    "generatorURL": "http://prometheus:9090/graph?g0.expr=DCGM_FI_DEV_XID_ERRORS+%3E+0",
    "fingerprint": "a1b2c3d4e5f60718",
}


def webhook(*alerts: dict[str, Any], **envelope: Any) -> bytes:
    return json.dumps({"version": "4", "receiver": "alertrouter", "alerts": list(alerts), **envelope}).encode()


def with_labels(**labels: str) -> dict[str, Any]:
    return {**GOOD, "labels": {**GOOD["labels"], **labels}, "fingerprint": None}


DEEP = "@deep@"  # stands for a value nested `depth` arrays deep (json.dumps itself cannot nest 1,000 deep)


def deepen(body: bytes, depth: int) -> bytes:
    return body.replace(json.dumps(DEEP).encode(), b"[" * depth + b'"x"' + b"]" * depth)


# (the poisoned alert, the field its problem must name)
POISON = [
    pytest.param({**GOOD, "startsAt": "9999-12-31T23:59:59-05:00"}, "alerts[1].startsAt", id="offset-past-9999"),
    pytest.param({**GOOD, "startsAt": "0001-01-01T00:30:00+01:00"}, "alerts[1].startsAt", id="offset-before-year-1"),
    pytest.param({**GOOD, "startsAt": "9000-01-01T00:00:00Z"}, "alerts[1].startsAt", id="at-the-ceiling"),
    pytest.param({**GOOD, "startsAt": "1969-12-31T23:59:59Z"}, "alerts[1].startsAt", id="before-the-epoch"),
    pytest.param({**GOOD, "startsAt": "2026-11-21T08:15:30"}, "alerts[1].startsAt", id="naive-start"),
    pytest.param({**GOOD, "status": "resolved", "endsAt": "2026-11-21T08:20:00"}, "alerts[1].endsAt", id="naive-end"),
    pytest.param(
        {**GOOD, "status": "resolved", "endsAt": "2026-11-21T08:00:00Z"}, "alerts[1].endsAt", id="ends-before-starts"
    ),
    pytest.param(with_labels(node="n" * (MAX_LABEL_VALUE + 1)), "alerts[1].labels.node", id="long-node"),
    pytest.param(with_labels(alertname="A" * (MAX_ALERTNAME + 1)), "alerts[1].labels.alertname", id="long-alertname"),
    pytest.param(with_labels(**{"l" * (MAX_NAME + 1): "v"}), "alerts[1].labels: name", id="long-label-name"),
    pytest.param(
        with_labels(**{f"label_{i}": "v" for i in range(MAX_LABELS)}), "alerts[1].labels: ", id="too-many-labels"
    ),
    pytest.param(
        {**GOOD, "annotations": {"description": "d" * (MAX_ANNOTATION_VALUE + 1)}},
        "alerts[1].annotations.description",
        id="long-annotation",
    ),
]


@pytest.mark.parametrize(("poison", "field"), POISON)
def test_a_poisoned_alert_is_refused_alone_naming_its_field(poison: dict[str, Any], field: str) -> None:
    other = with_labels(gpu="5")
    parsed = parse_webhook(webhook(GOOD, poison, other))
    assert [a.labels["gpu"] for a in parsed.batch.alerts] == ["3", "5"]
    assert parsed.batch.rejected_alerts == 1
    assert len(parsed.problems) == 1, parsed.problems
    assert parsed.problems[0].startswith(field), parsed.problems
    assert len(parsed.problems[0]) < 300  # a hostile name is quoted, not echoed whole


def test_every_accepted_time_is_utc_and_inside_the_limits() -> None:
    start = "2026-11-21T16:15:30+08:00"  # Asia/Shanghai, as a Prometheus there may send it
    parsed = parse_webhook(webhook({**GOOD, "startsAt": start, "status": "resolved", "endsAt": "2026-11-21T08:20Z"}))
    alert = parsed.batch.alerts[0]
    assert alert.starts_at == datetime(2026, 11, 21, 8, 15, 30, tzinfo=UTC)
    assert alert.starts_at.tzinfo is UTC
    assert alert.ends_at is not None
    assert alert.ends_at.tzinfo is UTC
    # The largest offset RFC 3339 allows is normalised too (PostgreSQL refused -23:59 as an offset).
    far = parse_webhook(webhook({**GOOD, "startsAt": "2026-11-21T08:00:00-23:59"})).batch.alerts[0]
    assert far.starts_at == datetime(2026, 11, 22, 7, 59, tzinfo=UTC)


def test_values_at_the_limits_are_accepted() -> None:
    at_limit = with_labels(alertname="A" * MAX_ALERTNAME, node="n" * MAX_LABEL_VALUE, **{"l" * MAX_NAME: "v"})
    parsed = parse_webhook(webhook(at_limit))
    assert parsed.problems == []
    assert len(parsed.batch.alerts) == 1


@pytest.mark.parametrize(
    ("envelope", "field"),
    [
        pytest.param({"truncatedAlerts": 2**31}, "truncatedAlerts", id="truncated-int32"),
        pytest.param({"truncatedAlerts": 2**63}, "truncatedAlerts", id="truncated-int64"),
        pytest.param({"receiver": "r" * 256}, "receiver", id="long-receiver"),
        pytest.param({"commonAnnotations": {"x": DEEP}}, "nested too deeply", id="deep-nesting"),
        pytest.param({"commonAnnotations": {"x\u0000": DEEP}}, "nested too deeply", id="deep-nesting-nul"),
    ],
)
def test_envelope_values_out_of_range_are_a_400_naming_them(envelope: dict[str, Any], field: str) -> None:
    with pytest.raises(PayloadError) as info:
        parse_webhook(deepen(webhook(GOOD, **envelope), 1000))
    assert any(field in p for p in info.value.problems), info.value.problems


def test_api_v2_field_nested_too_deeply_is_a_400_even_beside_fine_alerts() -> None:
    """A push's digest (of the whole payload) waits until it is logged only when its alerts hold just
    Prometheus's fields; a field nested deeper than the digest can serialise is still refused up front."""
    fine = {"labels": {"alertname": "XidError", "Hostname": "gpu-node-01"}}
    deep = {"labels": {"alertname": "XidError", "Hostname": "gpu-node-02"}, "extra": DEEP}
    with pytest.raises(PayloadError) as info:
        parse_api_v2(deepen(json.dumps([fine, deep]).encode(), 600), now=NOW)
    assert any("nested too deeply" in p for p in info.value.problems), info.value.problems
    lazy = parse_api_v2(json.dumps([fine]).encode(), now=NOW).batch
    assert lazy.known_digest is None  # not computed yet ...
    canonical = json.dumps([fine], sort_keys=True, separators=(",", ":")).encode()
    assert lazy.digest == hashlib.sha256(b"api_v2\n" + canonical).hexdigest()  # ... and the same when it is


def test_api_v2_default_end_never_overflows_and_bad_times_name_their_field() -> None:
    pushed = [
        {"labels": {"alertname": "A"}, "startsAt": "8999-12-31T23:58:00Z"},
        {"labels": {"alertname": "B"}, "startsAt": "9999-12-31T23:58:00Z"},
        {"labels": {"alertname": "C"}, "endsAt": "2026-11-21T08:20:00"},
        {"labels": {"alertname": "D"}},
    ]
    parsed = parse_api_v2(json.dumps(pushed).encode(), now=NOW)
    assert [a.labels["alertname"] for a in parsed.batch.alerts] == ["A", "D"]
    assert parsed.batch.alerts[0].ends_at is not None
    assert parsed.batch.alerts[0].ends_at > TIME_MAX.replace(year=8999)
    assert [p.split(":")[0] for p in parsed.problems] == ["[1].startsAt", "[2].endsAt"]


# Alerts at and just past every limit `_check_alert` checks, and the cases where the labels as sent
# differ from the labels kept (empty values dropped): the payload-at-once path (`ingest/decode.py`, whose
# decoder holds most limits itself) must accept nothing the alert-by-alert path refuses.
EDGES = [
    GOOD,
    with_labels(alertname="A" * MAX_ALERTNAME),
    with_labels(alertname="A" * (MAX_ALERTNAME + 1)),
    with_labels(node="n" * MAX_LABEL_VALUE),
    with_labels(node="n" * (MAX_LABEL_VALUE + 1)),
    with_labels(**{"l" * MAX_NAME: "v"}),
    with_labels(**{"l" * (MAX_NAME + 1): "v"}),
    with_labels(**{"é" * MAX_NAME: "v"}),  # characters, not UTF-8 bytes
    with_labels(**{"😀" * MAX_NAME: "v"}),  # nor UTF-16 units (JSON escapes it as a surrogate pair)
    with_labels(**{"": "v"}),
    with_labels(**{"": ""}),  # an empty name with an empty value is dropped, then fine
    with_labels(**{"l" * (MAX_NAME + 1): ""}),  # likewise a long name
    {**GOOD, "labels": {"alertname": "", "gpu": ""}},  # nothing left once empty values are dropped
    {**GOOD, "labels": {"gpu": "3"}},  # no alertname at all
    {**GOOD, "labels": {}},
    {**GOOD, "labels": {f"label_{i}": "v" for i in range(MAX_LABELS)}},
    {**GOOD, "labels": {f"label_{i}": "v" for i in range(MAX_LABELS + 1)}},
    {**GOOD, "labels": {**{f"label_{i}": "v" for i in range(MAX_LABELS)}, "empty": ""}},
    {**GOOD, "annotations": {}},
    {**GOOD, "annotations": {"": "an empty annotation name is kept"}},
    {**GOOD, "annotations": {"d": "d" * MAX_ANNOTATION_VALUE}},
    {**GOOD, "annotations": {"d": "d" * (MAX_ANNOTATION_VALUE + 1)}},
    {**GOOD, "annotations": {"a" * MAX_NAME: "x"}},
    {**GOOD, "annotations": {"a" * (MAX_NAME + 1): "x"}},
    {**GOOD, "annotations": {f"a{i}": "x" for i in range(MAX_ANNOTATIONS)}},
    {**GOOD, "annotations": {f"a{i}": "x" for i in range(MAX_ANNOTATIONS + 1)}},
    {**GOOD, "generatorURL": "u" * MAX_GENERATOR_URL},
    {**GOOD, "generatorURL": "u" * (MAX_GENERATOR_URL + 1)},
]
# The edges the payload-at-once path must take itself (the others it sends alert by alert).
AT_ONCE = {0, 1, 3, 5, 7, 8, 13, 15, 18, 19, 20, 22, 24, 26}


@pytest.mark.parametrize("shape", ["webhook", "api_v2"])
@pytest.mark.parametrize("index", range(len(EDGES)))
def test_the_payload_at_once_path_keeps_what_the_alert_by_alert_path_keeps(shape: str, index: int) -> None:
    alert = dict(EDGES[index])
    if shape == "webhook":
        payload = webhook(GOOD, alert)
        at_once, one_by_one = parse_webhook(payload), parse_webhook(payload, at_once=False)
        taken = decode.webhook_alerts([GOOD, alert]) is not None
    else:
        good, push = (
            {k: v for k, v in a.items() if k not in ("status", "fingerprint", "endsAt")} for a in (GOOD, alert)
        )
        payload = json.dumps([good, push]).encode()
        at_once, one_by_one = parse_api_v2(payload, now=NOW), parse_api_v2(payload, now=NOW, at_once=False)
        taken = decode.pushes(payload) is not None
    assert taken == (index in AT_ONCE)
    assert at_once.batch.alerts == one_by_one.batch.alerts
    assert at_once.problems == one_by_one.problems
    assert at_once.batch.rejected_alerts == one_by_one.batch.rejected_alerts
    assert at_once.batch.digest == one_by_one.batch.digest

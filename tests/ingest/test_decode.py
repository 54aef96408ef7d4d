"""The payload-at-once path (alertrouter.ingest.decode) against the alert-by-alert path it stands in for.

Whatever a payload holds, both ways must answer the same: the same alerts kept (labels, annotations,
times to the microsecond and in UTC, status, fingerprint), the same problems, the same count refused
and the same digest; and the real senders' payloads must be taken at once (else nothing is faster).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alertrouter.ingest import decode
from alertrouter.ingest.limits import MAX_ALERTNAME, MAX_LABEL_VALUE, MAX_NAME
from alertrouter.ingest.payloads import Parsed, PayloadError, parse_api_v2, parse_webhook

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NOW = datetime(2026, 11, 21, 8, 17, tzinfo=UTC)

# Times as senders write them and as they should not: Go's RFC 3339 with up to nine fraction digits
# (Alertmanager and Prometheus send nanoseconds; past six digits one path truncates, a plain decoder
# would round), other zones and separators, Go's zero time, the limits' edges, and non-times.
_DATES = st.sampled_from(
    ["2026-11-21", "0001-01-01", "1969-12-31", "1970-01-01", "8999-12-31", "9000-01-01", "9999-12-31"]
)
_CLOCKS = st.sampled_from(["08:14:03", "00:00:00", "23:59:59", "23:59:60", "24:00:00", "08:14"])
_FRACTIONS = st.one_of(st.just(""), st.text("0123456789", min_size=1, max_size=10).map(lambda d: "." + d))
_ZONES = st.sampled_from(["Z", "z", "+08:00", "-05:00", "+0800", "-00:00", "+23:59", "+24:00", "", " Z"])
_SEPARATORS = st.sampled_from(["T", "t", " ", "_"])
TIMES = st.one_of(
    st.builds(lambda d, s, c, f, z: f"{d}{s}{c}{f}{z}", _DATES, _SEPARATORS, _CLOCKS, _FRACTIONS, _ZONES),
    st.sampled_from(["0001-01-01T00:00:00Z", "2026-11-21T08:14:03.517889512Z", "yesterday", "", "2026-11-21"]),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.none(),
)
_NAMES = st.one_of(
    st.sampled_from(["alertname", "instance", "Hostname", "hostname", "gpu", "UUID", "pci_bus_id", "job", "severity"]),
    st.sampled_from(["service.name", "显卡", "", "l" * MAX_NAME, "l" * (MAX_NAME + 1)]),
    st.text(max_size=4),
)
_VALUES = st.one_of(
    st.sampled_from(["GPUHighTemp", "10.0.0.7:9400", "gpu-node-07", "GPU-5c9f4d1a-8a8e-2b1c-9d3e-7f6a5b4c3d2e"]),
    st.sampled_from(["", "显存 ECC 错误", "😀", "a\x00b", "v" * MAX_LABEL_VALUE, "v" * (MAX_LABEL_VALUE + 1)]),
    st.sampled_from(["A" * MAX_ALERTNAME, "A" * (MAX_ALERTNAME + 1)]),
    st.text(max_size=6),
)
# `st.builds(dict)`, not `st.just({})`: a new empty object each time, since `alerts` adds labels to the
# labels it drew (one shared `{}` came to hold itself, and a payload no JSON encoder could write)
_NOT_TEXT: st.SearchStrategy[bool | int | list[int] | dict[str, Any] | None] = st.one_of(
    st.none(), st.booleans(), st.integers(), st.lists(st.integers(), max_size=2), st.builds(dict)
)
LABELS = st.one_of(
    st.dictionaries(_NAMES, _VALUES, max_size=6).map(lambda d: {"alertname": "GPUHighTemp", **d}),
    st.dictionaries(_NAMES, _VALUES, max_size=4),
    st.dictionaries(_NAMES, st.one_of(_VALUES, _NOT_TEXT), max_size=3),
    _NOT_TEXT,
)
_OPTIONAL: dict[str, st.SearchStrategy[Any]] = {
    "annotations": st.one_of(st.dictionaries(_NAMES, _VALUES, max_size=3), _NOT_TEXT),
    "startsAt": TIMES,
    "endsAt": TIMES,
    "generatorURL": st.one_of(st.just("http://prometheus-0:9090/graph?g0.expr=up"), _NOT_TEXT),
    "status": st.sampled_from(["firing", "resolved", "Firing", "", 1, None]),
    "fingerprint": st.sampled_from(["a1b2c3d4e5f60718", "A1B2C3D4E5F60718", "short", "", None, 7]),
    "starts_at": TIMES,  # pydantic also takes the field names (see "snake_case" below)
    "extra": st.just({"nested": ["x"]}),
}


# As Alertmanager 0.25 and Prometheus send a dcgm-exporter alert (../shared/reference/gpu-alerts.md).
_SENT: dict[str, Any] = {
    "labels": {
        "alertname": "GPUHighTemp",
        "instance": "10.0.0.7:9400",
        "Hostname": "gpu-node-07",
        "gpu": "3",
        "UUID": "GPU-5c9f4d1a-8a8e-2b1c-9d3e-7f6a5b4c3d2e",
        "job": "dcgm",
        "severity": "warning",
    },
    "annotations": {"summary": "GPU 3 on gpu-node-07 is running hot"},
    "startsAt": "2026-11-21T08:14:03.517889412Z",
    "endsAt": "0001-01-01T00:00:00Z",
    "generatorURL": "http://prometheus-0:9090/graph?g0.expr=DCGM_FI_DEV_GPU_TEMP+%3E+85",
}
_WEBHOOK_ONLY = {"status": "firing", "fingerprint": "9f4c3e2a1b0d8e7f"}


@st.composite
def alerts(draw: st.DrawFn, *, webhook: bool) -> Any:
    """A real alert with none, one or a few things changed: a label, a field, or the whole of either."""
    alert: dict[str, Any] = {**_SENT, **(_WEBHOOK_ONLY if webhook else {}), "labels": dict(_SENT["labels"])}
    if not webhook and draw(st.booleans()):
        del alert["endsAt"]  # Prometheus sends no endsAt for an alert that still fires, at times
    for _ in range(draw(st.integers(0, 2))):
        change = draw(st.sampled_from(["label", "new label", "field", "drop", "snake_case", "labels", "alert"]))
        labels = alert.get("labels")
        if change == "label" and isinstance(labels, dict):
            labels[draw(st.sampled_from(sorted(labels) or ["alertname"]))] = draw(_VALUES)
        elif change == "new label" and isinstance(labels, dict):
            labels[draw(_NAMES)] = draw(st.one_of(_VALUES, _NOT_TEXT))
        elif change == "field":
            name = draw(st.sampled_from(sorted(_OPTIONAL)))
            alert[name] = draw(_OPTIONAL[name])
        elif change == "snake_case":  # pydantic takes a field by its name too, where the alias is missing
            alias, name = draw(
                st.sampled_from([("startsAt", "starts_at"), ("endsAt", "ends_at"), ("generatorURL", "generator_url")])
            )
            if alias in alert:
                alert[name] = alert.pop(alias)
        elif change == "drop":
            alert.pop(draw(st.sampled_from(sorted(alert))), None)
        elif change == "labels":
            alert["labels"] = draw(LABELS)
        elif change == "alert":
            return draw(_NOT_TEXT)
    return alert


def encoded(draw: Callable[[st.SearchStrategy[bool]], bool], payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=draw(st.booleans())).encode()


def outcome(parse: Any) -> Any:
    """What a parse answered, for comparing: the problems when it refused everything, else what it kept."""
    try:
        parsed: Parsed = parse()
    except PayloadError as exc:
        return exc.problems
    batch = parsed.batch
    zones = [(str(a.starts_at.tzinfo), a.ends_at and str(a.ends_at.tzinfo)) for a in batch.alerts]
    return batch.alerts, zones, parsed.problems, batch.rejected_alerts, batch.digest, batch.body_digest


def push_answers_the_same_either_way(body: bytes) -> None:
    assert outcome(lambda: parse_api_v2(body, now=NOW)) == outcome(lambda: parse_api_v2(body, now=NOW, at_once=False))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_push_answers_the_same_either_way(data: st.DataObject) -> None:
    push_answers_the_same_either_way(encoded(data.draw, data.draw(st.lists(alerts(webhook=False), max_size=4))))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_webhook_answers_the_same_either_way(data: st.DataObject) -> None:
    envelope = {"version": "4", "receiver": "alertrouter", "status": "firing", "groupKey": "{}:{}"}
    body = encoded(data.draw, {**envelope, "alerts": data.draw(st.lists(alerts(webhook=True), max_size=4))})
    assert outcome(lambda: parse_webhook(body)) == outcome(lambda: parse_webhook(body, at_once=False))


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-21T08:14:03.5178895Z",  # rounding would make it .517890
        "2026-11-21T08:14:03.999999999Z",  # rounding would carry into the next second
        "2026-11-21T16:14:03.999999999+08:00",
    ],
)
def test_go_nanoseconds_are_cut_to_microseconds_as_the_other_path_cuts_them(text: str) -> None:
    push = json.dumps([{"labels": {"alertname": "GPUHighTemp"}, "startsAt": text}]).encode()
    assert decode.pushes(push) is not None
    kept = parse_api_v2(push, now=NOW).batch.alerts[0].starts_at
    assert kept == parse_api_v2(push, now=NOW, at_once=False).batch.alerts[0].starts_at
    assert kept.microsecond == int(text.split(".")[1][:6])


@pytest.mark.parametrize("name", ["alertmanager025_webhook_gpu_node07.json", "webhook_gpu_temp_firing.json"])
def test_alertmanagers_webhooks_are_taken_at_once(name: str) -> None:
    payload = json.loads((FIXTURES / name).read_text())
    assert decode.webhook_alerts(payload["alerts"]) is not None
    body = (FIXTURES / name).read_bytes()
    assert outcome(lambda: parse_webhook(body)) == outcome(lambda: parse_webhook(body, at_once=False))


def test_a_prometheus_push_is_taken_at_once() -> None:
    body = (FIXTURES / "prometheus_push_node_down.json").read_bytes()
    assert decode.pushes(body) is not None
    push_answers_the_same_either_way(body)


def test_times_read_before_answer_as_when_first_read_even_once_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    """The texts of times already read are not read again (Prometheus re-sends each alert's `startsAt`);
    what is kept of them must stay what the other path keeps, also after they were all forgotten."""
    monkeypatch.setattr(decode, "_KNOWN_TIMES_MAX", 3)
    pushes = [
        [{"labels": {"alertname": "GPUHighTemp", "gpu": str(i)}, "startsAt": f"2026-11-21T16:14:0{i}.999999999+08:00"}]
        for i in range(4)
    ]
    for payload in [*pushes, *pushes, [{"labels": {"a": "b"}, "startsAt": "2026-11-21T08:14:03"}], pushes[0]]:
        push_answers_the_same_either_way(json.dumps(payload).encode())
    assert len(decode._KNOWN_TIMES) <= 3 + 1 + 1  # forgotten when over, then this push's one text

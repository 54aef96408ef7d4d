"""The `oncall:` section: people, schedules and escalation policies; problems as file:path: message;
the shipped rules' rota and policy."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from alertrouter.pipeline.route import match_routes
from alertrouter.ruleset import ConfigError, load_ruleset
from alertrouter.ruleset.build import compile_rules
from support.scenario import shipped_pipeline

VALID = """
oncall:
  people:
    - {name: ana, display_name: Ana, mobile: "13800000001", dingtalk: "ding-ana", wecom: "wecom-ana"}
    - {name: bo, mobile: "13800000002"}
  schedules:
    - name: primary
      timezone: Europe/Berlin
      layers:
        - {name: weekly, people: [ana, bo], rotation: 1w, start: "2026-11-02 10:00"}
        - name: nights
          people: [bo]
          rotation: 1d
          start: 2026-11-02 20:00
          restrict: {from: "20:00", to: "08:00"}
      overrides:
        - {from: "2026-12-24 00:00", to: "2026-12-27 00:00", person: bo, note: holiday cover}
  escalations:
    - name: crit
      steps:
        - {after: 10m, receivers: [second]}
        - {after: 30m, receivers: [second, lead]}
route:
  receiver: first
  escalation: crit
  routes:
    - {matchers: ['severity="warning"'], receiver: first, escalation: none}
    - {matchers: ['team="db"'], receiver: first}
receivers:
  - {name: first}
  - {name: lead}
  - name: second
    channels:
      - {channel: chat, mentions: {oncall: [primary]}}
      - {channel: sms, oncall: [primary]}
channels:
  - {name: chat, type: dingtalk, access_token: "${TOKEN}"}
  - name: sms
    type: sms
    provider: aliyun
    aliyun: {access_key_id: "${KEY}", access_key_secret: "${SECRET}", sign_name: "n", template_code: "SMS_1"}
"""


ENV = {"TOKEN": "t", "KEY": "k", "SECRET": "s"}


def problems(tmp_path: Path, text: str) -> list[str]:
    (tmp_path / "rules.yml").write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_ruleset(tmp_path, ENV)
    return [str(p).split("rules.yml:", 1)[1] for p in caught.value.problems]


def test_a_valid_section_builds_the_rota_and_policies(tmp_path: Path) -> None:
    (tmp_path / "rules.yml").write_text(VALID)
    pipeline = compile_rules(load_ruleset(tmp_path, ENV))
    rota = pipeline.rota
    schedule = rota.schedules["primary"]
    assert schedule.who(datetime(2026, 11, 3, 12, 0, tzinfo=UTC)).person == "ana"
    assert schedule.who(datetime(2026, 11, 3, 22, 0, tzinfo=UTC)).person == "bo"  # 23:00 in Berlin: nights
    assert schedule.who(datetime(2026, 12, 25, 12, 0, tzinfo=UTC)).source == "override"
    policy = pipeline.escalations["crit"]
    assert [s.after for s in policy.steps] == [timedelta(minutes=10), timedelta(minutes=30)]
    assert policy.severities == frozenset({"critical"})
    routes = {
        "critical": match_routes(pipeline.route, {"severity": "critical"}),
        "warning": match_routes(pipeline.route, {"severity": "warning"}),
        "db": match_routes(pipeline.route, {"severity": "critical", "team": "db"}),
    }
    assert {k: [r.escalation for r in v] for k, v in routes.items()} == {
        "critical": ["crit"],
        "warning": [None],  # `escalation: none` turns the inherited policy off
        "db": ["crit"],  # inherited
    }


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("people: [ana, bo]", "people: [ana, cy]"), "oncall.schedules[0].layers[0].people[1]: undefined person 'cy'"),
        (("person: bo, note", "person: zed, note"), "oncall.schedules[0].overrides[0].person: undefined person 'zed'"),
        (
            ("receivers: [second, lead]", "receivers: [second, boss]"),
            "oncall.escalations[0].steps[1].receivers[1]: undefined receiver 'boss'",
        ),
        (
            ("escalation: crit\n", "escalation: crit2\n"),
            "route.escalation: undefined escalation policy 'crit2' (known: crit)",
        ),
        (
            ("mentions: {oncall: [primary]}", "mentions: {oncall: [primry]}"),
            "receivers[2].channels[0].mentions.oncall[0]: undefined on-call schedule 'primry'",
        ),
        (
            ("{channel: sms, oncall: [primary]}", "{channel: chat, oncall: [primary]}"),
            "receivers[2].channels[1].oncall: chat robots post to their group",
        ),
        (
            ("{channel: sms, oncall: [primary]}", "{channel: sms, mentions: {oncall: [primary]}}"),
            "receivers[2].channels[1].mentions: mentions apply to chat robots, not sms",
        ),
        (("- {name: bo, mobile", "- {name: ana, mobile"), "oncall.people[1].name: duplicate name 'ana'"),
    ],
)
def test_cross_references_are_checked_with_their_path(tmp_path: Path, change: tuple[str, str], expected: str) -> None:
    assert VALID.count(change[0]) == 1
    found = problems(tmp_path, VALID.replace(*change))
    assert any(p.startswith(expected) for p in found), found


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("after: 30m", "after: 5m"), "must be later than the step before it"),
        (("rotation: 1d", "rotation: 30m"), "a rotation is at least 1h"),
        (("timezone: Europe/Berlin", "timezone: Europe/Berlinn"), "unknown time zone"),
        (('start: "2026-11-02 10:00"', 'start: "next monday"'), "is not a date and time"),
        (('to: "08:00"', 'to: "8am"'), "is not a time of day"),
        (('to: "2026-12-27 00:00"', 'to: "2026-12-23 00:00"'), "`to` must be after `from`"),
    ],
)
def test_schema_problems_name_the_path(tmp_path: Path, change: tuple[str, str], expected: str) -> None:
    assert VALID.count(change[0]) == 1
    found = problems(tmp_path, VALID.replace(*change))
    assert any(expected in p and p.startswith("oncall.") for p in found), found


def test_the_shipped_rules_escalate_critical_incidents_and_name_schedules() -> None:
    pipeline = shipped_pipeline()
    (route,) = match_routes(pipeline.route, {"severity": "critical", "region": "north"})
    assert route.escalation == "critical-unacked"
    (warning,) = match_routes(pipeline.route, {"severity": "warning"})
    assert warning.escalation is None
    steps = pipeline.escalations["critical-unacked"].steps
    assert [s.receivers for s in steps] == [("oncall-secondary",), ("team-leader",), ("oncall-voice",)]
    monday = datetime(2026, 11, 23, 2, 0, tzinfo=UTC)  # 10:00 in Shanghai: li.lei's second week
    assert pipeline.rota.on_call("gpu-primary", monday) is not None
    primary, secondary = (pipeline.rota.on_call(s, monday) for s in ("gpu-primary", "gpu-secondary"))
    assert primary is not None
    assert secondary is not None
    assert (primary.name, secondary.name) == ("li.lei", "wang.fang")
    assert primary.mobile == ""  # from the environment, unset here

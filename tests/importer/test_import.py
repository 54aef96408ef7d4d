"""`alertrouter import alertmanager`: what it writes for each kind of receiver, the secrets it never
writes, and the report it prints of what it mapped, changed and could not map."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from alertrouter.cli.main import main
from alertrouter.pipeline.route import match_routes
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules

CONFIGS = Path(__file__).parent / "configs"

# Every credential the fixture configs hold: none may appear in a file written or in what is printed.
SECRETS = [
    "Sm7pPassw0rd-not-for-files",
    "WeChatApiSecret-0123456789",
    "d1c0ffee0123456789abcdefDDTOKEN",
    "0a1b2c3d-wecom-robot-KEY",
    "feishu-hook-id-SECRET",
    "SLACKSECRET",
    "OTHERWEBHOOKTOKEN",
]


def _import(config: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["import", "alertmanager", str(config), "--out", str(out)])
    printed = capsys.readouterr()
    return code, printed.out, printed.err


def _sections(out: Path) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for file in sorted(out.glob("*.yml")):
        merged.update(yaml.safe_load(file.read_text(encoding="utf-8")))
    return merged


@pytest.mark.parametrize("config", ["webhook-dingtalk", "prometheusalert"])
def test_no_secret_is_written_or_printed(tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str]) -> None:
    source = (CONFIGS / f"{config}.yml").read_text(encoding="utf-8")
    held = [s for s in SECRETS if s in source]
    assert held  # the fixture does hold credentials
    code, out, err = _import(CONFIGS / f"{config}.yml", tmp_path / "rules", capsys)
    assert code == 0, err
    written = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "rules").iterdir())
    for secret in held:
        assert secret not in written
        assert secret not in out + err


def test_prometheus_alert_robots_become_channels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _import(CONFIGS / "prometheusalert.yml", tmp_path / "rules", capsys)
    assert code == 0
    sections = _sections(tmp_path / "rules")
    channels = {c["name"]: c for c in sections["channels"]}
    assert channels == {
        "dingtalk-web-hook-prometheusalert": {
            "name": "dingtalk-web-hook-prometheusalert",
            "type": "dingtalk",
            "access_token": "${DINGTALK_WEB_HOOK_PROMETHEUSALERT_TOKEN:-}",
            "secret": "${DINGTALK_WEB_HOOK_PROMETHEUSALERT_SECRET:-}",
        },
        "wecom-prometheusalert-wx": {
            "name": "wecom-prometheusalert-wx",
            "type": "wecom",
            "key": "${WECOM_PROMETHEUSALERT_WX_KEY:-}",
        },
        "feishu-prometheusalert-fs": {
            "name": "feishu-prometheusalert-fs",
            "type": "feishu",
            "url": "https://open.feishu.cn/open-apis/bot/v2/hook/",
            "hook": "${FEISHU_PROMETHEUSALERT_FS_HOOK:-}",
        },
    }
    receivers = {r["name"]: r.get("channels") for r in sections["receivers"]}
    # One robot named by two receivers is one channel (one rate limit); the `at` mobile is mentioned.
    assert receivers == {
        "web.hook.prometheusalert": [
            {"channel": "dingtalk-web-hook-prometheusalert", "mentions": {"mobiles": ["18888888888"]}}
        ],
        "prometheusalert-wx": ["wecom-prometheusalert-wx"],
        "prometheusalert-fs": ["feishu-prometheusalert-fs"],
        "slack-and-dd": ["dingtalk-web-hook-prometheusalert"],
    }
    # Slack and the other webhook are reported, named by receiver and line, the URL without its query.
    slack = f"receiver slack-and-dd ({CONFIGS / 'prometheusalert.yml'} line 31): 1 slack integration(s): "
    assert slack + "alertrouter has no slack channel" in out
    assert "webhook to http://elsewhere.example.com:9000/hooks/alert (query left out) is not mapped" in out
    assert "DINGTALK_WEB_HOOK_PROMETHEUSALERT_TOKEN: access_token of the DingTalk robot in receiver " in out
    assert "global.resolve_timeout 1m: alertrouter resolves alerts posted without endsAt after 5m" in out


def test_relay_email_and_wechat_receivers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _import(CONFIGS / "webhook-dingtalk.yml", tmp_path / "rules", capsys)
    assert code == 0
    sections = _sections(tmp_path / "rules")
    channels = {c["name"]: c for c in sections["channels"]}
    assert channels["dingtalk-webhook1"]["access_token"] == "${DINGTALK_WEBHOOK1_TOKEN:-}"
    assert channels["email-dba"] == {
        "name": "email-dba",
        "type": "email",
        "host": "smtp.example.com",
        "security": "starttls",
        "port": 587,
        "username": "alertmanager@example.com",
        "password": "${EMAIL_DBA_PASSWORD:-}",
        "from": "alertmanager@example.com",
    }
    assert channels["wecom-dba-pager"] == {
        "name": "wecom-dba-pager",
        "type": "wecom",
        "key": "${WECOM_DBA_PAGER_KEY:-}",
    }
    receivers = {r["name"]: r.get("channels") for r in sections["receivers"]}
    assert receivers["dba"] == [{"channel": "email-dba", "to": ["dba@example.com", "dba-lead@example.com"]}]
    assert receivers["dba-pager"] == ["wecom-dba-pager", "dingtalk-webhook2"]
    assert "wechat_configs (WeCom application 1000002 of corp ww0123456789abcdef, to_party=2) -> channel " in out
    assert "prometheus-webhook-dingtalk target webhook1 -> channel dingtalk-webhook1" in out
    assert f"receiver dba ({CONFIGS / 'webhook-dingtalk.yml'} line 45): headers not carried" in out


def test_send_resolved_and_timers_follow_alertmanager(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _import(CONFIGS / "webhook-dingtalk.yml", tmp_path / "rules", capsys)[0] == 0
    pipeline = compile_rules(load_ruleset(tmp_path / "rules", env={}))
    policy = {m.receiver: m.policy for m in match_routes(pipeline.route, {"team": "gpu"})}
    # webhook_legacy's webhook says send_resolved: false; the root's timers are the config's, every severity.
    assert policy["webhook_legacy"].send_resolved is False
    assert {str(v) for v in policy["webhook_legacy"].repeat_interval.values()} == {"2:00:00"}
    assert match_routes(pipeline.route, {"service": "mysql"})[0].policy.send_resolved is True
    # Without timers Alertmanager's defaults are stated: alertrouter's own differ per severity.
    assert _import(CONFIGS / "nested-continue.yml", tmp_path / "nested", capsys)[0] == 0
    nested = compile_rules(load_ruleset(tmp_path / "nested", env={}))
    root = match_routes(nested.route, {})[0].policy
    assert (str(root.group_wait), str(root.group_interval)) == ("0:00:30", "0:05:00")
    assert {str(v) for v in root.repeat_interval.values()} == {"4:00:00"}


def test_inhibit_rules_are_carried_without_hold_down(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _import(CONFIGS / "kube-prometheus-stack.yml", tmp_path / "rules", capsys)[0] == 0
    rules = compile_rules(load_ruleset(tmp_path / "rules", env={})).inhibit_rules
    assert [(str(r.source[0]) if r.source else "", [str(m) for m in r.target], r.equal) for r in rules] == [
        ('severity="critical"', ['severity=~"warning|info"'], ("namespace", "alertname")),
        ('severity="warning"', ['severity="info"'], ("namespace", "alertname")),
        ('alertname="InfoInhibitor"', ['severity="info"'], ("namespace",)),
        ("", ['alertname="InfoInhibitor"'], ()),
    ]
    assert {r.hold_down.total_seconds() for r in rules} == {0}


def test_text_that_reads_as_a_reference_is_kept_as_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "am.yml"
    config.write_text(
        "route:\n  receiver: a\n  routes:\n    - {match: {path: '${HOME}'}, receiver: b}\n"
        "    - {matchers: ['cost=~\"\\\\$\\\\$[0-9]+\"'], receiver: b}\n"
        "receivers: [{name: a}, {name: b}]\n"
    )
    assert _import(config, tmp_path / "rules", capsys)[0] == 0
    pipeline = compile_rules(load_ruleset(tmp_path / "rules", env={"HOME": "/root"}))
    assert [m.receiver for m in match_routes(pipeline.route, {"path": "${HOME}"})] == ["b"]
    assert [m.receiver for m in match_routes(pipeline.route, {"path": "/root"})] == ["a"]
    assert [m.receiver for m in match_routes(pipeline.route, {"cost": "$$12"})] == ["b"]


BAD = [
    ("route:\n  receiver: a\n  routes: [}\nreceivers: []\n", 3, "not YAML: expected"),
    ("- receiver: a\n", 1, "not an Alertmanager config: the file is a list"),
    (
        "global:\n  scrape_interval: 15s\nscrape_configs:\n  - job_name: node\n",
        3,
        "unknown top-level key 'scrape_configs'",
    ),
    ("receivers: [{name: a}]\n", 1, "not an Alertmanager config: no route"),
    (
        "route:\n  receiver: a\n  routes:\n    - matchers: ['x=\"1\"']\n      receiver: nobody\n"
        "receivers: [{name: a}]\n",
        5,
        "route.routes[0].receiver: undefined receiver 'nobody' used in route",
    ),
    (
        "route:\n  receiver: a\n  routes:\n    - matchers: ['x=~\"(\"']\nreceivers: [{name: a}]\n",
        4,
        "route.routes[0].matchers[0]: invalid matcher",
    ),
    ("route:\n  receiver: a\n  recevier: b\nreceivers: [{name: a}]\n", 3, "unknown key 'recevier' in a route"),
    (
        "route: {receiver: a}\nreceivers:\n  - name: a\n  - name: a\n",
        4,
        "receiver name 'a' is not unique (first at line 3)",
    ),
    (
        "route:\n  receiver: a\n  routes: [{receiver: a, mute_time_intervals: [lunch]}]\nreceivers: [{name: a}]\n",
        3,
        "undefined time interval 'lunch' used in route",
    ),
    ("route: {receiver: a}\nreceivers:\n  - name: a\n    emial_configs: []\n    url: x\n", 5, "unknown key 'url'"),
    ("route: {receiver: a}\nreceivers:\n  - name: a\n    email_configs:\n      - from: a@b.c\n", 5, "needs to"),
    ("route: {receiver: a, group_wait: soon}\nreceivers: [{name: a}]\n", 1, "invalid duration 'soon'"),
    ("route:\n  receiver: a\n  receiver: b\nreceivers: [{name: a}]\n", 3, "duplicate key 'receiver' (first at line 2)"),
]


@pytest.mark.parametrize(("text", "line", "problem"), BAD, ids=[b[2][:40] for b in BAD])
def test_what_is_not_an_alertmanager_config_is_named_and_nothing_written(
    tmp_path: Path, text: str, line: int, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "alertmanager.yml"
    config.write_text(text)
    code, out, err = _import(config, tmp_path / "out" / "rules", capsys)
    assert code == 2
    assert err.startswith(f"import: {config}:{line}: ")
    assert problem in err
    assert err.rstrip().endswith("nothing written")
    assert out == ""
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_an_output_directory_with_files_is_left_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rules"
    out.mkdir()
    (out / "mine.yml").write_text("# mine\n")
    code, printed, err = _import(CONFIGS / "kube-prometheus-stack.yml", out, capsys)
    assert (code, printed) == (2, "")
    assert f"{out}: exists and is not an empty directory; nothing written" in err
    assert [p.name for p in tmp_path.iterdir()] == ["rules"]
    assert [p.name for p in out.iterdir()] == ["mine.yml"]


def test_the_report_says_what_was_mapped_and_changed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _import(CONFIGS / "kube-prometheus-stack.yml", tmp_path / "rules", capsys)
    assert code == 0
    assert out.splitlines()[1:3] == [
        "mapped exactly (3):",
        "  - route tree: 2 route(s), matchers as written (match, match_re, matchers), continue, "
        "group_wait/group_interval/repeat_interval (Alertmanager's defaults stated on the root), time intervals",
    ]
    assert "  - 1 receiver(s) with the same names: null" in out
    assert "group_by: alertrouter makes incidents before routing them, keyed by ['namespace', 'alertname']" in out
    assert "message text: alertrouter writes its own messages; Alertmanager's templates and the integrations'" in out
    assert "not mapped (0):\n  (none)" in out
    assert sorted(p.name for p in (tmp_path / "rules").iterdir()) == ["aggregation.yml", "inhibit.yml", "routes.yml"]


def test_rules_alertrouter_would_refuse_are_not_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Alertmanager takes a receiver name of any length; alertrouter stores names of at most 255 characters.
    name = "r" * 300
    config = tmp_path / "am.yml"
    config.write_text(f"route: {{receiver: {name}}}\nreceivers: [{{name: {name}}}]\n")
    code, out, err = _import(config, tmp_path / "rules", capsys)
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"import: {tmp_path / 'rules'}: alertrouter would refuse the imported rules; nothing written",
        f"{tmp_path / 'rules'}/routes.yml:receivers[0].name: String should have at most 255 characters",
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["am.yml"]

"""Channels in the rules: check-config names the file, the path and the problem; secrets only from the
environment; receivers reference channels that exist; `render` and `send-test` on the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from alertrouter.cli.main import main
from alertrouter.ruleset import ConfigError, load_ruleset
from alertrouter.ruleset.build import unconfigured_channels
from support.fakes.dingtalk import FakeDingTalk

REPO = Path(__file__).resolve().parents[2]

ROBOT = """\
channels:
  - name: robot
    type: dingtalk
    access_token: ${DT_TOKEN}
    secret: ${DT_SECRET:-}
route: {receiver: oncall}
receivers:
  - name: oncall
    channels: [robot]
"""


def problems(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> list[str]:
    path = tmp_path / "rules.yml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_ruleset(path, env={"DT_TOKEN": "t0k", **(env or {})})
    return [str(p).removeprefix(f"{path}:") for p in caught.value.problems]


def test_valid_channel_and_receiver(tmp_path: Path) -> None:
    (tmp_path / "rules.yml").write_text(ROBOT)
    ruleset = load_ruleset(tmp_path, env={"DT_TOKEN": "t0k"})
    (channel,) = ruleset.channels
    assert channel.name == "robot"
    assert channel.type == "dingtalk"
    assert unconfigured_channels(ruleset) == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (ROBOT.replace("${DT_TOKEN}", "abcdef123456"), "channels[0].access_token: secrets must be ${ENV_VAR}"),
        (ROBOT.replace("${DT_SECRET:-}", "${DT_SECRET:-NOTSEC}"), "channels[0].secret: a DingTalk signing secret"),
        (
            ROBOT.replace("channels: [robot]", "channels: [robott]"),
            "receivers[0].channels[0].channel: undefined channel",
        ),
        (ROBOT.replace("    secret: ${DT_SECRET:-}\n", "    failover: nowhere\n"), "channels[0].failover: undefined"),
        (ROBOT.replace("type: dingtalk", "type: slack"), "channels[0]: Input tag 'slack'"),
        (
            ROBOT + "  - {name: pager, channels: [{channel: robot, to: ['+8613800000000']}]}\n",
            "receivers[1].channels[0].to: chat robots post to their group",
        ),
    ],
)
def test_problems_name_file_path_and_what(tmp_path: Path, text: str, expected: str) -> None:
    found = problems(tmp_path, text)
    assert any(p.startswith(expected) for p in found), found


def test_sms_template_variables_must_be_known_fields(tmp_path: Path) -> None:
    text = """\
channels:
  - name: sms
    type: sms
    provider: aliyun
    aliyun: {access_key_id: "${K}", access_key_secret: "${S}", sign_name: x, template_code: SMS_1}
    params: {level: severity, where: datacenter}
"""
    found = problems(tmp_path, text, {"K": "k", "S": "s"})
    assert any(
        p.startswith("channels[0].params: Value error, variable 'where': unknown field 'datacenter'")
        or p.startswith("channels[0].params: variable 'where': unknown field 'datacenter'")
        for p in found
    ), found


def test_sms_receiver_needs_numbers(tmp_path: Path) -> None:
    text = """\
channels:
  - {name: sms, type: sms, provider: generic, generic: {url: "http://gw.example"}}
receivers:
  - {name: pager, channels: [sms]}
"""
    assert "receivers[0].channels[0].to: an SMS channel needs the phone numbers to send to" in problems(tmp_path, text)


def test_shipped_rules_load_with_every_channel_unconfigured(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", str(REPO / "rules")]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("ok: ")
    assert "warning: channel dingtalk-core: access_token empty" in captured.err


def test_render_prints_a_sample(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ALERTROUTER_CONFIG", str(REPO / "rules"))
    assert main(["render", "dingtalk/firing.md", "--sample"]) == 0
    out = capsys.readouterr().out
    assert "GPUHighTemp" in out
    assert "严重" in out  # in the shipped rules' language (zh-CN) unless asked otherwise
    assert main(["render", "dingtalk/firing.md", "--sample", "--language", "en"]) == 0
    assert "CRITICAL" in capsys.readouterr().out
    assert main(["render", "dingtalk/nonsense.md", "--sample"]) == 1
    assert "available:" in capsys.readouterr().err


def test_send_test_reports_the_vendors_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeDingTalk({"good-token": None}) as fake:
        rules = tmp_path / "rules"
        rules.mkdir()
        text = ROBOT.replace("type: dingtalk", f"type: dingtalk\n    url: {fake.url}/robot/send")
        text += "  - {name: broken, channels: [bad]}\n"
        text = text.replace(
            "channels:\n  - name: robot",
            "channels:\n  - {name: bad, type: dingtalk, url: "
            f"'{fake.url}/robot/send', access_token: '${{BAD_TOKEN}}'}}\n  - name: robot",
        )
        (rules / "rules.yml").write_text(text)
        monkeypatch.setenv("DT_TOKEN", "good-token")
        monkeypatch.setenv("BAD_TOKEN", "no-such-token")
        assert main(["send-test", "oncall", "--config", str(rules)]) == 0
        assert "robot (dingtalk): ok" in capsys.readouterr().out
        assert len(fake.messages("good-token")) == 1
        assert main(["send-test", "broken", "--config", str(rules)]) == 1
        out = capsys.readouterr().out
        assert "bad (dingtalk): FAILED:" in out
        assert "300001" in out
        assert "no-such-token" not in out
        assert main(["send-test", "nobody", "--config", str(rules)]) == 1
        (rules / "rules.yml").write_text(text.replace("  - name: oncall\n", "  - name: oncall\n    language: zh-CN\n"))
        assert main(["send-test", "oncall", "--config", str(rules)]) == 0
        chinese = fake.messages("good-token")[-1]["markdown"]
        assert chinese["title"] == "[提示] alertrouter 测试消息（接收方 oncall）"  # in the receiver's language

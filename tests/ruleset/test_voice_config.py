"""Voice channels in the rules: provider settings, spoken fields, the vendors' limits on all variables
of a call, secrets only from the environment, receivers with numbers, and unconfigured when unset."""

from __future__ import annotations

from pathlib import Path

import pytest

from alertrouter.ruleset import ConfigError, load_ruleset
from alertrouter.ruleset.build import unconfigured_channels
from alertrouter.ruleset.channels import VoiceChannelConfig

VOICE = """\
channels:
  - name: voice
    type: voice
    provider: aliyun
    aliyun: {access_key_id: "${K:-}", access_key_secret: "${S:-}", tts_code: TTS_100000001}
receivers:
  - name: oncall-voice
    channels: [{channel: voice, to: ["${PHONE:-}"]}]
"""


def problems(tmp_path: Path, text: str, env: dict[str, str]) -> list[str]:
    path = tmp_path / "rules.yml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_ruleset(path, env=env)
    return [str(p).removeprefix(f"{path}:") for p in caught.value.problems]


def test_unset_credentials_leave_the_channel_unconfigured(tmp_path: Path) -> None:
    (tmp_path / "rules.yml").write_text(VOICE)
    ruleset = load_ruleset(tmp_path, env={})
    assert unconfigured_channels(ruleset) == {"voice": ["aliyun.access_key_id", "aliyun.access_key_secret"]}
    (channel,) = ruleset.channels
    assert isinstance(channel, VoiceChannelConfig)
    assert (channel.params, channel.play_times, channel.daily_cap_per_number) == ({"headline": "headline"}, 2, 10)


def test_a_configured_voice_receiver_needs_numbers(tmp_path: Path) -> None:
    found = problems(tmp_path, VOICE, {"K": "k", "S": "s"})
    assert "receivers[0].channels[0].to: a voice channel needs the phone numbers to call, or `oncall:`" in found


def test_a_voice_receiver_may_call_whoever_is_on_call(tmp_path: Path) -> None:
    rota = """\
oncall:
  people: [{name: ann, mobile: "13800000000"}]
  schedules:
    - name: primary
      timezone: Asia/Shanghai
      layers: [{people: [ann], rotation: 1w, start: "2026-11-02 10:00"}]
"""
    text = VOICE.replace('to: ["${PHONE:-}"]', "oncall: [primary]") + rota
    (tmp_path / "rules.yml").write_text(text)
    ruleset = load_ruleset(tmp_path, env={"K": "k", "S": "s"})
    assert [r.name for r in ruleset.receivers] == ["oncall-voice"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("${S:-}", "plaintextsecret"), "channels[0].aliyun.access_key_secret: secrets must be ${ENV_VAR}"),
        (("provider: aliyun", "provider: tencent"), "channels[0]: provider tencent needs its"),
        (("tts_code: TTS_100000001}", "tts_code: T}\n    params: {u: link}"), "channels[0].params"),
        (("tts_code: TTS_100000001}", "tts_code: T}\n    play_times: 4"), "channels[0].play_times"),
        (("tts_code: TTS_100000001}", "tts_code: T}\n    params: {}"), "channels[0].params"),
        (
            ("tts_code: TTS_100000001}", "tts_code: T}\n    params: {a: headline, b: node, c: summary}\n"
             "    param_max_length: 90"),
            "channels[0]: 3 variables of up to 90 characters make 270; aliyun takes at most 249",
        ),
    ],
)  # fmt: skip
def test_problems(tmp_path: Path, change: tuple[str, str], expected: str) -> None:
    found = problems(tmp_path, VOICE.replace(*change), {"PHONE": "13800000000"})
    assert any(p.startswith(expected) for p in found), found


@pytest.mark.parametrize(
    ("resolved", "reason", "called"),
    [(False, "first", True), (False, "repeat", True), (False, "grew", False), (True, "resolved", False)],
)
def test_which_messages_call(tmp_path: Path, resolved: bool, reason: str, called: bool) -> None:
    (tmp_path / "rules.yml").write_text(VOICE)
    (channel,) = load_ruleset(tmp_path, env={}).channels
    assert channel.wants(resolved=resolved, reason=reason) is called

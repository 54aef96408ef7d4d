"""`global.language` / `global.timezone` and a receiver's own: checked when the rules load, and which one
a receiver's messages get."""

from __future__ import annotations

from pathlib import Path

import pytest

from alertrouter.message.i18n import Locale
from alertrouter.ruleset import ConfigError, load_ruleset

RECEIVERS = """
receivers:
  - name: oncall-core
  - name: oncall-eu
    language: en
    timezone: Europe/Berlin
  - name: oncall-night
    timezone: America/Los_Angeles
"""


def rules(tmp_path: Path, text: str) -> Path:
    (tmp_path / "a.yml").write_text(text, encoding="utf-8")
    return tmp_path


def test_the_code_defaults_are_english_and_utc(tmp_path: Path) -> None:
    ruleset = load_ruleset(rules(tmp_path, RECEIVERS), {})
    assert (ruleset.global_.language, ruleset.global_.timezone) == ("en", "UTC")
    assert ruleset.locale("oncall-core") == Locale("en", "UTC")


def test_a_receiver_overrides_what_it_sets(tmp_path: Path) -> None:
    text = "global:\n  language: zh-CN\n  timezone: Asia/Shanghai\n" + RECEIVERS
    ruleset = load_ruleset(rules(tmp_path, text), {})
    assert ruleset.locale("oncall-core") == Locale("zh-CN", "Asia/Shanghai")
    assert ruleset.locale("oncall-eu") == Locale("en", "Europe/Berlin")
    assert ruleset.locale("oncall-night") == Locale("zh-CN", "America/Los_Angeles")
    assert ruleset.locale("gone-since-reload") == Locale("zh-CN", "Asia/Shanghai")  # a row older than the rules


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("global:\n  language: zh\n", "unknown language 'zh'"),
        ("global:\n  timezone: Asia/Beijing\n", "unknown time zone 'Asia/Beijing'"),
        ("receivers:\n  - name: r\n    language: cn\n", "unknown language 'cn'"),
        ("receivers:\n  - name: r\n    timezone: CST+8\n", "unknown time zone"),
    ],
)
def test_an_unknown_language_or_zone_is_a_config_error(tmp_path: Path, text: str, found: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_ruleset(rules(tmp_path, text), {})
    assert found in str(caught.value)

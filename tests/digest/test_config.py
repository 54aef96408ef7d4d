"""The `digest:` block of a receiver: validated with the file and path of each problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from alertrouter.digest.send import digest_targets
from alertrouter.ruleset import ConfigError, load_ruleset

REPO = Path(__file__).resolve().parents[2]

RULES = """\
route: {{receiver: digest}}
receivers:
  - name: digest
    digest: {digest}
channels:
  - {{name: mail, type: email, host: "${{SMTP_HOST:-}}", from: a@example.com}}
  - {{name: robot, type: dingtalk, access_token: "${{DT_TOKEN}}"}}
"""


def problems(tmp_path: Path, digest: str, env: dict[str, str] | None = None) -> list[str]:
    path = tmp_path / "rules.yml"
    path.write_text(RULES.format(digest=digest))
    with pytest.raises(ConfigError) as caught:
        load_ruleset(path, env={"DT_TOKEN": "t0k", **(env or {})})
    return [str(p).removeprefix(f"{path}:") for p in caught.value.problems]


@pytest.mark.parametrize(
    ("digest", "expected"),
    [
        (
            "{channel: mail, timezone: Mars/Olympus}",
            "receivers[0].digest.timezone: unknown time zone 'Mars/Olympus' (IANA names",
        ),
        (
            "{channel: mail, schedule: 'monday 9am'}",
            "receivers[0].digest.schedule: schedule 'monday 9am': expected a day and a time",
        ),
        ("{channel: robot}", "receivers[0].digest.channel: robot is a dingtalk channel; must be email"),
        ("{channel: nowhere}", "receivers[0].digest.channel: undefined channel 'nowhere'"),
        ("{timezone: UTC}", "receivers[0].digest.channel: Field required"),
        ("{channel: mail, every: week}", "receivers[0].digest.every: unknown key"),
    ],
)
def test_bad_digest_blocks(tmp_path: Path, digest: str, expected: str) -> None:
    found = problems(tmp_path, digest)
    assert any(p.startswith(expected) for p in found), found


def test_configured_channel_needs_recipients(tmp_path: Path) -> None:
    found = problems(tmp_path, "{channel: mail}", env={"SMTP_HOST": "smtp.example.com"})
    assert found == ["receivers[0].digest.to: no recipients here nor in the email channel's `to`"]


def test_valid_block_and_defaults(tmp_path: Path) -> None:
    (tmp_path / "rules.yml").write_text(RULES.format(digest="{channel: mail, to: [ops@example.com]}"))
    ruleset = load_ruleset(tmp_path, env={"DT_TOKEN": "t0k", "SMTP_HOST": "smtp.example.com"})
    (target,) = digest_targets(ruleset)
    assert (target.receiver, str(target.schedule), target.tz.key) == ("digest", "mon 09:00", "UTC")
    assert target.channel is not None
    assert target.recipients == ["ops@example.com"]


def test_shipped_rules_send_the_info_route_to_a_digest() -> None:
    ruleset = load_ruleset(REPO / "rules", {})
    (target,) = digest_targets(ruleset)
    assert target.receiver == "weekly-digest"
    assert (str(target.schedule), target.tz.key, target.channel_name) == ("mon 09:00", "Asia/Shanghai", "email-ops")
    assert target.channel is None  # no SMTP_HOST on a fresh machine: unconfigured, recorded not sent

"""The README stays true: every setting and command is documented, and the first commands are the real ones."""

from __future__ import annotations

import re
from pathlib import Path

from alertrouter.settings import Settings

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def test_every_setting_is_documented() -> None:
    for name in Settings.model_fields:
        assert f"`ALERTROUTER_{name.upper()}`" in README, f"ALERTROUTER_{name.upper()} missing from README"


def test_documented_settings_exist() -> None:
    documented = set(re.findall(r"`ALERTROUTER_([A-Z_]+)`", README))
    known = {name.upper() for name in Settings.model_fields} | {"TEST_PG_URL", "EXTERNAL_URL", "FUZZ_SEED", "FUZZ_N"}
    assert documented <= known, documented - known


def test_readme_starts_with_the_two_commands_and_ci_runs_the_second() -> None:
    first_block = README.split("```sh", 1)[1].split("```", 1)[0]
    commands = [line for line in first_block.splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2
    assert commands[0].endswith("alertrouter serve")
    assert commands[1] == "bash .ci/test"
    assert "exec bash .ci/test" in (REPO / ".ci" / "run").read_text()

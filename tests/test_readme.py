"""The README stays short and true: it starts with the real two commands, and the rest lives in docs/."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def test_readme_starts_with_the_two_commands_and_ci_runs_the_second() -> None:
    first_block = README.split("```sh", 1)[1].split("```", 1)[0]
    commands = [line for line in first_block.splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2
    assert commands[0].endswith("alertrouter serve")
    assert commands[1] == "bash .ci/test"
    assert "exec bash .ci/test" in (REPO / ".ci" / "run").read_text()


def test_readme_is_at_most_300_lines() -> None:
    lines = README.count("\n")
    assert lines <= 300, f"README.md has {lines} lines: move the detail to docs/en/"


def test_readme_links_every_page_of_the_site() -> None:
    pages = sorted(p.name for p in (REPO / "docs" / "en").glob("*.md"))
    missing = [name for name in pages if f"(docs/en/{name}" not in README]
    assert not missing, f"README.md does not link {missing}"

"""docs/en/configuration.md (and its Chinese twin) document every setting and every rules key, and nothing else.

Settings come from `Settings.model_fields`; rules keys from the `alertrouter.ruleset` models, walked by alias
from `RuleFile`, so a key added to the schema fails here until the page says what it is. The key tables are
generated (`tests/support/config_reference.py`): the page must hold what the generator renders now.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from alertrouter.ruleset.schema import RuleFile
from alertrouter.settings import Settings
from support.config_reference import BEGIN, END, render, walk_keys

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
PAGES = {"en": DOCS / "en" / "configuration.md", "zh": DOCS / "zh" / "configuration.md"}
# Variables the docs name that are not `Settings`: the rules' `${ALERTROUTER_EXTERNAL_URL}`, and the test suite's.
NOT_SETTINGS = {"EXTERNAL_URL", "TEST_PG_URL", "FUZZ_SEED", "FUZZ_N"}


def _page(language: str) -> str:
    path = PAGES[language]
    assert path.exists(), f"{path.relative_to(REPO)} is missing: the configuration page exists in both languages"
    return path.read_text()


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_setting_is_documented(language: str) -> None:
    page = _page(language)
    missing = [f"ALERTROUTER_{n.upper()}" for n in Settings.model_fields if f"`ALERTROUTER_{n.upper()}`" not in page]
    assert not missing, f"missing from docs/{language}/configuration.md: {missing}"


def test_documented_settings_exist() -> None:
    known = {name.upper() for name in Settings.model_fields} | NOT_SETTINGS
    pages = [REPO / "README.md", *DOCS.rglob("*.md")]
    for page in pages:
        documented = set(re.findall(r"`ALERTROUTER_([A-Z_]+)`", page.read_text()))
        assert documented <= known, f"{page.relative_to(REPO)} documents unknown settings {documented - known}"


def test_every_top_level_rules_key_is_documented() -> None:
    page = _page("en")
    keys = [name for name in (f.alias or n for n, f in RuleFile.model_fields.items())]
    assert "global" in keys
    missing = [key for key in keys if f"`{key}:`" not in page and f"\n{key}:" not in page]
    assert not missing, f"top-level keys without an example in docs/en/configuration.md: {missing}"


def test_every_schema_key_is_in_the_configuration_page() -> None:
    page = _page("en")
    keys = walk_keys()
    assert {"global", "node_labels", "hold_down", "daily_cap_per_number", "warn_if_never_heard"} <= keys
    missing = sorted(key for key in keys if f"`{key}`" not in page)
    assert not missing, f"rules keys missing from docs/en/configuration.md: {missing}"


def test_generated_key_tables_are_up_to_date() -> None:
    page = _page("en")
    assert BEGIN in page, "the generated section's first marker is gone from docs/en/configuration.md"
    assert END in page, "the generated section's last marker is gone from docs/en/configuration.md"
    current = BEGIN + page.split(BEGIN, 1)[1].split(END, 1)[0] + END + "\n"
    assert current == render(), "run: .venv/bin/python tests/support/config_reference.py"

"""The site's shape: mkdocs.yml lists every English page once, and each Chinese page has an English twin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def _nav_files(nav: list[Any]) -> list[str]:
    out: list[str] = []
    for entry in nav:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            out += _nav_files(value) if isinstance(value, list) else [value]
    return out


def _config() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    return config


def test_nav_lists_every_english_page_once() -> None:
    nav = _nav_files(_config()["nav"])
    assert len(nav) == len(set(nav))
    assert sorted(nav) == sorted(p.name for p in (DOCS / "en").glob("*.md"))


def test_chinese_pages_have_english_twins_and_translated_titles() -> None:
    english = {p.name for p in (DOCS / "en").glob("*.md")}
    chinese = {p.name for p in (DOCS / "zh").glob("*.md")} if (DOCS / "zh").exists() else set()
    assert chinese <= english, chinese - english
    i18n = next(p["i18n"] for p in _config()["plugins"] if isinstance(p, dict) and "i18n" in p)
    zh = next(lang for lang in i18n["languages"] if lang["locale"] == "zh")
    titles = {title for entry in _config()["nav"] for title in entry}
    assert titles - {"Home"} <= set(zh["nav_translations"]), titles - set(zh["nav_translations"])


def test_site_builds_offline() -> None:
    theme = _config()["theme"]
    assert theme["name"] == "material"
    assert theme["font"] is False  # Google Fonts would be fetched by every reader's browser

"""Every relative link of README.md and docs/**/*.md points at a file that exists (and, within the English
pages, at a heading that exists), so moving a page or an image cannot leave a dead link behind."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
SOURCES = [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")


def links(text: str) -> list[str]:
    """Link targets outside code blocks and code spans."""
    return LINK.findall(CODE.sub("", FENCE.sub("", text)))


def slugify(heading: str) -> str:
    """A heading's anchor as the site makes it (Python-Markdown's `toc` slugify, which GitHub's agrees with on
    these pages): ASCII letters, digits, `_` and `-`, lower case, runs of spaces and dashes one dash."""
    text = unicodedata.normalize("NFKD", heading.replace("`", "")).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    """The heading slugs of `page`, and the `<a id="...">` anchors the Chinese pages set (a Chinese heading's
    own slug is empty of ASCII, so each section carries the English page's anchor explicitly)."""
    text = FENCE.sub("", page.read_text())
    headings = re.findall(r"^#{1,6} (.+?)\s*$", text, re.M)
    return {slugify(heading) for heading in headings} | set(re.findall(r'<a id="([^"]+)"></a>', text))


def test_slugs_are_the_sites() -> None:
    assert slugify("Prometheus lookup (`topology.prometheus`)") == "prometheus-lookup-topologyprometheus"
    assert slugify("Rules (`rules/*.yml`)") == "rules-rulesyml"
    assert slugify("Source liveness: heartbeats") == "source-liveness-heartbeats"


def test_link_finder_sees_links_and_skips_code() -> None:
    text = "[a](x.md) ![i](../assets/p.png) `[no](y.md)`\n```\n[no](z.md)\n```\n[b](https://e.org) [c](#h)"
    assert links(text) == ["x.md", "../assets/p.png", "https://e.org", "#h"]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(source: Path) -> None:
    broken = []
    for target in links(source.read_text()):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (source.parent / path).resolve() if path else source
        if not file.exists() and file.parent == DOCS / "zh" and (DOCS / "en" / file.name).exists():
            continue  # a page with no Chinese version: the site shows the English one (fallback_to_default)
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and file.parent == DOCS / "en" and anchor not in anchors(file):
            broken.append(f"{target} (no such heading)")
    assert not broken, f"{source.relative_to(REPO)}: dead links {broken}"


@pytest.mark.parametrize("source", sorted((DOCS / "en").glob("*.md")), ids=lambda p: p.name)
def test_english_links_into_chinese_pages_land(source: Path) -> None:
    """An English page with no Chinese twin is shown in the Chinese site as it is, so its links into pages
    that do have a Chinese version must find their anchors there too."""
    if (DOCS / "zh" / source.name).exists():
        return
    missing = []
    for target in links(source.read_text()):
        path, _, anchor = target.partition("#")
        twin = DOCS / "zh" / path
        if path.endswith(".md") and anchor and twin.exists() and anchor not in anchors(twin):
            missing.append(target)
    assert not missing, f"{source.name}: anchors missing from the Chinese twins: {missing}"

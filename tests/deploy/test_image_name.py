"""alertrouter's image has one name, tagged with the package's version: docker-compose.yml builds and runs it,
every overlay of deploy/kubernetes runs it, and the Dockerfile's release step builds and pushes it. A version
bump in pyproject.toml that forgets one of them fails here, before a cluster pulls an image nobody pushed."""

from __future__ import annotations

import re
import tomllib
from typing import Any

import yaml

from support.procs import REPO

IMAGE = "ghcr.io/alertrouter/alertrouter"  # registry/owner/name: what the release pushes
DOCKERFILE = REPO / "deploy" / "docker" / "Dockerfile"


def reference() -> str:
    version = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"a release version, not {version!r}"
    return f"{IMAGE}:{version}"


def test_compose_builds_and_runs_the_released_reference() -> None:
    service = yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))["services"]["alertrouter"]
    assert service["image"] == reference(), "compose tags what it builds with `image:`, and pulls it by that name"
    assert service["build"]["dockerfile"] == "deploy/docker/Dockerfile", "`docker compose build` still builds it"


def test_every_overlay_runs_the_released_reference(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    name, objects = overlay
    images = [
        container["image"]
        for obj in objects
        for container in [
            *obj.get("spec", {}).get("template", {}).get("spec", {}).get("initContainers", []),
            *obj.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []),
        ]
    ]
    assert images, f"{name}: no container found"
    assert set(images) == {reference()}, f"{name}: {images}"


def test_the_release_step_builds_and_pushes_that_reference() -> None:
    """The header's commands, run with VERSION set as they set it, name the reference the deployments run."""
    header = DOCKERFILE.read_text(encoding="utf-8").split("\nFROM ", 1)[0]
    version = reference().rsplit(":", 1)[1]
    commands = [line.removeprefix("#").strip().replace("$VERSION", version) for line in header.splitlines()]
    build = [c for c in commands if c.startswith("docker build -")]
    push = [c for c in commands if c.startswith("docker push ")]
    assert len(build) == 1, build
    assert f" -t {reference()} " in build[0]
    assert push == [f"docker push {reference()}"]
    assert "pyproject.toml" in next(c for c in commands if c.startswith("VERSION=")), "the version comes from one place"

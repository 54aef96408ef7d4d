"""docker-compose.yml and the Dockerfile it builds, read as compose and BuildKit read them: `${...}` interpolation,
the final stage's ENTRYPOINT/CMD/ENV/WORKDIR, and `drift()`, what the compose file has that the process
stand-in (support/compose.py) does not reproduce."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from support.procs import ALERTMANAGER, REPO

__all__ = [
    "COMPOSE_FILE",
    "CONTAINER_PORTS",
    "IMAGE_PROGRAMS",
    "PROMETHEUS",
    "ComposeError",
    "dockerfile_stages",
    "drift",
    "image_of",
    "interpolate",
    "load_compose",
]

COMPOSE_FILE = REPO / "docker-compose.yml"
PROMETHEUS = shutil.which("prometheus")
# Where each service listens inside its container: what `<service>:<port>` in the configs refers to.
CONTAINER_PORTS = {"postgres": 5432, "alertrouter": 9095, "alertmanager": 9093, "prometheus": 9090}
# The programs that stand in for the images' entrypoints.
IMAGE_PROGRAMS = {"prom/prometheus": PROMETHEUS, "prom/alertmanager": ALERTMANAGER}
# Compose keys of a service support/compose.py reproduces (or, for ports/restart/image, knowingly needs not).
SERVICE_KEYS = {
    "build",
    "image",
    "restart",
    "command",
    "environment",
    "volumes",
    "secrets",
    "ports",
    "depends_on",
    "healthcheck",
}
TOP_LEVEL_KEYS = {"name", "services", "secrets", "volumes"}
SECRET_KEYS = {"source", "target", "uid", "gid", "mode"}
# ${VAR}, ${VAR:?err}, ${VAR?err}, ${VAR:-default}, ${VAR-default}, and $$ (a literal $).
REFERENCE = re.compile(r"\$\$|\$\{(?P<var>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")


class ComposeError(AssertionError):
    """The compose file asks for something the process stand-in does not reproduce (or compose would refuse)."""


def load_compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def drift(compose: Mapping[str, Any]) -> list[str]:
    """What the compose file has that `ComposeStack` would not reproduce: new services, keys, volumes, secrets."""
    problems = [f"top-level key {key!r}" for key in sorted(set(compose) - TOP_LEVEL_KEYS)]
    services = compose.get("services") or {}
    for name in sorted(set(services) ^ set(CONTAINER_PORTS)):
        known = "not in the compose file" if name in CONTAINER_PORTS else "unknown to tests/support/compose.py"
        problems.append(f"service {name!r}: {known}")
    volumes = set(compose.get("volumes") or {})
    for name, service in services.items():
        problems += [f"services.{name}.{key}" for key in sorted(set(service) - SERVICE_KEYS)]
        for volume in service.get("volumes") or []:
            if not isinstance(volume, str):
                problems.append(f"services.{name}.volumes: long form {volume!r}")
                continue
            source = volume.split(":")[0]
            if source.startswith("./"):
                if not (REPO / source).exists():
                    problems.append(f"services.{name}.volumes: {source} is not in the repo")
            elif source not in volumes:
                problems.append(f"services.{name}.volumes: {source!r} is neither a repo path nor a named volume")
        for secret in service.get("secrets") or []:
            if not isinstance(secret, dict) or set(secret) - SECRET_KEYS or "target" not in secret:
                problems.append(f"services.{name}.secrets: {secret!r} (long form with a target expected)")
        image = str(service.get("image", ""))
        if "build" not in service and name != "postgres" and image.split(":")[0] not in IMAGE_PROGRAMS:
            problems.append(f"services.{name}.image {image!r}: no program stands in for it")
    for name, secret in (compose.get("secrets") or {}).items():
        if set(secret) != {"environment"}:
            problems.append(f"secrets.{name}: only `environment:` secrets are reproduced")
    return problems


def interpolate(node: Any, env: Mapping[str, str]) -> Any:
    """The compose file with `${...}` resolved from `env` as compose does; a missing required variable raises."""
    if isinstance(node, dict):
        return {key: interpolate(value, env) for key, value in node.items()}
    if isinstance(node, list):
        return [interpolate(item, env) for item in node]
    if not isinstance(node, str):
        return node

    def resolve(match: re.Match[str]) -> str:
        if match[0] == "$$":
            return "$"
        value, op, arg = env.get(match["var"]), match["op"] or "", match["arg"] or ""
        unset = value is None or (op.startswith(":") and value == "")
        if op.endswith("?") and unset:
            raise ComposeError(f"compose refuses to start: {match['var']}: {arg}")
        if op.endswith("-") and unset:
            return arg
        return value or ""

    return REFERENCE.sub(resolve, node)


def dockerfile_stages(text: str) -> list[list[tuple[str, str]]]:
    """(INSTRUCTION, arguments) of each build stage from its FROM on; continuation lines joined, comments dropped."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    stages: list[list[tuple[str, str]]] = []
    for line in re.sub(r"\\\n", " ", "\n".join(lines)).splitlines():
        keyword, _, rest = line.strip().partition(" ")
        if keyword.upper() == "FROM":
            stages.append([])
        if keyword and stages:
            stages[-1].append((keyword.upper(), rest.strip()))
    return stages


def image_of(dockerfile: Path) -> dict[str, Any]:
    """ENTRYPOINT, CMD (exec form), ENV and WORKDIR of the final stage of `dockerfile`."""
    final = dockerfile_stages(dockerfile.read_text(encoding="utf-8"))[-1]
    env: dict[str, str] = {}
    image: dict[str, Any] = {"entrypoint": [], "command": [], "env": env, "workdir": "/"}
    for keyword, rest in final:
        if keyword == "ENV" and "=" not in rest.split()[0]:  # the legacy `ENV KEY value with spaces`
            key, value = rest.split(None, 1)
            env[key] = value
        elif keyword == "ENV":  # KEY=value pairs (values without spaces or quotes, as the Dockerfile has)
            for pair in rest.split():
                key, value = pair.split("=", 1)
                env[key] = value
        elif keyword in ("ENTRYPOINT", "CMD"):
            image["entrypoint" if keyword == "ENTRYPOINT" else "command"] = json.loads(rest)
        elif keyword == "WORKDIR":
            image["workdir"] = rest
    return image

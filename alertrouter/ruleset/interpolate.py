"""`${ENV_VAR}` references in rule files, so secrets never have to be written in them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from alertrouter.ruleset.errors import ConfigProblem, format_loc

__all__ = ["interpolate"]

# ${NAME}, ${NAME:-default}; $$ is a literal dollar sign.
_REF = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\{([^}]*)\}?")


def interpolate(
    node: Any,
    env: Mapping[str, str],
    file: str,
    problems: list[ConfigProblem],
    loc: tuple[str | int, ...] = (),
) -> Any:
    """Return `node` with every string's references replaced; unset variables become problems."""
    if isinstance(node, dict):
        return {k: interpolate(v, env, file, problems, (*loc, str(k))) for k, v in node.items()}
    if isinstance(node, list):
        return [interpolate(v, env, file, problems, (*loc, i)) for i, v in enumerate(node)]
    if not isinstance(node, str) or "$" not in node:
        return node

    def replace(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name, default, bad = m.group(1), m.group(2), m.group(3)
        if name is None:
            problems.append(ConfigProblem(file, format_loc(loc), f"invalid environment reference '${{{bad or ''}}}'"))
            return ""
        if name in env:
            return env[name]
        if default is not None:
            return default
        problems.append(ConfigProblem(file, format_loc(loc), f"environment variable {name} is not set"))
        return ""

    return _REF.sub(replace, node)

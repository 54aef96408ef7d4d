"""Config problems that name the file, the path inside it, and what is wrong."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["ConfigError", "ConfigProblem", "format_loc"]


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    file: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.path}: {self.message}" if self.path else f"{self.file}: {self.message}"


class ConfigError(Exception):
    """One or more problems; the server refuses to start on any of them."""

    def __init__(self, problems: Sequence[ConfigProblem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def format_loc(loc: Iterable[str | int]) -> str:
    """`("global", "node_labels", 2)` -> `global.node_labels[2]`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out

"""Reading an alertmanager.yml: YAML as Alertmanager's decoder reads it, with the line of every key and item."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

from alertrouter.ruleset.errors import format_loc

__all__ = ["Loc", "SourceError", "SourceFile", "read_source"]

Loc = tuple[str | int, ...]


class SourceError(Exception):
    """Input that is not an Alertmanager config: the file, the line (0 when unknown), where, and why."""

    def __init__(self, file: str, line: int, where: str, message: str) -> None:
        self.file, self.line, self.where, self.message = file, line, where, message
        at = f"{file}:{line}" if line else file
        super().__init__(f"{at}: {where}: {message}" if where else f"{at}: {message}")


class _Loader(yaml.SafeLoader):
    """SafeLoader with Go's reading of numbers: `17:00` is text (YAML 1.1 would read 1020)."""


_NUMBERS = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _NUMBERS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$"),
    list("-+0123456789"),
)
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?)$"),
    list("-+0123456789."),
)


@dataclass
class SourceFile:
    """The decoded document and, per path (`("route", "routes", 0, "receiver")`), the line it starts on."""

    name: str
    data: Any
    lines: dict[Loc, int] = field(default_factory=dict)

    def line(self, path: Iterable[str | int]) -> int:
        """The line of `path`, else of its nearest ancestor that has one (a missing key: its mapping)."""
        at = tuple(path)
        while at and at not in self.lines:
            at = at[:-1]
        return self.lines.get(at, 1)

    def error(self, path: Iterable[str | int], message: str) -> SourceError:
        at = tuple(path)
        return SourceError(self.name, self.line(at), format_loc(at), message)


def _build(loader: _Loader, node: yaml.Node, path: Loc, lines: dict[Loc, int], file: str) -> Any:
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)  # `<<: *anchor` merge keys
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node)
            if not isinstance(key, str | int | bool | float) or key is None:
                raise SourceError(file, key_node.start_mark.line + 1, format_loc(path), "keys must be plain text")
            key = str(key) if not isinstance(key, str) else key
            if key in out:
                first = lines.get((*path, key), 0)
                raise SourceError(
                    file,
                    key_node.start_mark.line + 1,
                    format_loc(path),
                    f"duplicate key {key!r} (first at line {first})",
                )
            lines[(*path, key)] = key_node.start_mark.line + 1
            out[key] = _build(loader, value_node, (*path, key), lines, file)
        return out
    if isinstance(node, yaml.SequenceNode):
        items = []
        for i, item in enumerate(node.value):
            lines[(*path, i)] = item.start_mark.line + 1
            items.append(_build(loader, item, (*path, i), lines, file))
        return items
    return loader.construct_object(node)


def read_source(name: str, text: str) -> SourceFile:
    """Decode `text`; raise `SourceError` naming the line for what is not YAML or not one document."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        lines: dict[Loc, int] = {}
        data = None if node is None else _build(loader, node, (), lines, name)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "unreadable"
        raise SourceError(name, mark.line + 1 if mark else 0, "", f"not YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise SourceError(name, 0, "", f"not YAML: {exc}") from None
    finally:
        loader.dispose()
    return SourceFile(name, data, lines)

"""Read `rules/*.yml` (or one file), interpolate `${ENV}`, validate, merge and cross-check."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from alertrouter.labels import fallback_note
from alertrouter.ruleset.build import compile_rules
from alertrouter.ruleset.channels import SECRET_FIELDS
from alertrouter.ruleset.errors import ConfigError, ConfigProblem, format_loc
from alertrouter.ruleset.interpolate import interpolate
from alertrouter.ruleset.schema import RuleFile, Ruleset

__all__ = ["load_ruleset", "matcher_notes", "rule_files"]


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys instead of silently keeping the last one."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, yaml.Mark] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first at line {seen[key].line + 1})", key_node.start_mark
            )
        seen[key] = key_node.start_mark
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

# YAML 1.1 reads `17:00` as the base-60 number 1020; Alertmanager's YAML (and YAML 1.2) reads the text
# `17:00`, which is what `start_time: 17:00` and `days_of_month: [1:5]` mean. Numbers here are decimal.
_NUMBERS = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}
_StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _NUMBERS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$"),
    list("-+0123456789"),
)
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


def rule_files(path: Path) -> list[Path]:
    """The files a path stands for: itself, or the top-level `*.yml`/`*.yaml` of a directory."""
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix in (".yml", ".yaml") and p.is_file())
    return [path]


def _parse_file(path: Path, text: str, env: Mapping[str, str], problems: list[ConfigProblem]) -> RuleFile | None:
    name = str(path)
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problems.append(ConfigProblem(name, where, f"invalid YAML: {exc.problem or exc}"))
        return None
    except yaml.YAMLError as exc:
        problems.append(ConfigProblem(name, "", f"invalid YAML: {exc}"))
        return None
    if data is None:
        return RuleFile.model_validate({})
    if not isinstance(data, dict):
        problems.append(ConfigProblem(name, "", f"must be a mapping of sections, not {type(data).__name__}"))
        return None
    before = len(problems)
    _check_secret_references(data, name, problems)
    data = interpolate(data, env, name, problems)
    if len(problems) > before:
        return None
    try:
        return RuleFile.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            loc = format_loc(_without_union_tag(err["loc"]))
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "unknown key" if len(err["loc"]) > 1 else "unknown section"
            problems.append(ConfigProblem(name, loc, msg))
        return None


def _without_union_tag(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """pydantic puts the channel type in the path of a discriminated union (`channels[0].dingtalk.secret`);
    the file has no such key, so the path shown is `channels[0].secret`."""
    if len(loc) > 2 and loc[0] == "channels" and isinstance(loc[1], int) and loc[2] in SECRET_FIELDS:
        return (*loc[:2], *loc[3:])
    return loc


def _check_secret_references(data: dict[str, Any], file: str, problems: list[ConfigProblem]) -> None:
    """Secrets (robot tokens, keys, passwords) must come from the environment, never the file itself."""
    topology = data.get("topology")
    lookup = topology.get("prometheus") if isinstance(topology, dict) else None
    token = lookup.get("bearer_token") if isinstance(lookup, dict) else None
    if isinstance(token, str) and token and "${" not in token:
        where = format_loc(("topology", "prometheus", "bearer_token"))
        problems.append(ConfigProblem(file, where, "secrets must be ${ENV_VAR} references, not written in the file"))
    channels = data.get("channels")
    if not isinstance(channels, list):
        return
    for i, item in enumerate(channels):
        if not isinstance(item, dict):
            continue
        for path in SECRET_FIELDS.get(str(item.get("type")), ()):
            node: Any = item
            for part in path:
                node = node.get(part) if isinstance(node, dict) else None
            if isinstance(node, str) and node and "${" not in node:
                where = format_loc(("channels", i, *path))
                problems.append(
                    ConfigProblem(file, where, "secrets must be ${ENV_VAR} references, not written in the file")
                )


def load_ruleset(path: Path, env: Mapping[str, str] | None = None) -> Ruleset:
    """Load and validate; raise `ConfigError` listing every problem found, not just the first."""
    env = os.environ if env is None else env
    problems: list[ConfigProblem] = []
    if not path.exists():
        raise ConfigError([ConfigProblem(str(path), "", "no such file or directory")])
    files = rule_files(path)
    if not files:
        raise ConfigError([ConfigProblem(str(path), "", "no *.yml or *.yaml files")])

    digest = hashlib.sha256()
    merged: dict[str, Any] = {}
    owner: dict[str, str] = {}
    origins: dict[str, list[str]] = {}
    for file in files:
        text = file.read_text(encoding="utf-8")
        digest.update(file.name.encode() + b"\0" + text.encode() + b"\0")
        parsed = _parse_file(file, text, env, problems)
        if parsed is None:
            continue
        for section in parsed.model_fields_set:
            value = getattr(parsed, section)
            key = RuleFile.model_fields[section].alias or section
            if isinstance(value, list):
                merged.setdefault(key, []).extend(value)
                origins.setdefault(key, []).extend([f"{file}:{key}[{i}]" for i in range(len(value))])
            elif key in merged:
                problems.append(ConfigProblem(str(file), key, f"section already defined in {owner[key]}"))
            else:
                merged[key] = value
                origins[key] = [f"{file}:{key}"]
            owner.setdefault(key, str(file))
    if problems:
        raise ConfigError(problems)
    ruleset = Ruleset.model_validate(
        {
            **merged,
            "sources": tuple(str(f) for f in files),
            "config_hash": digest.hexdigest()[:16],
            "origins": origins,
        }
    )
    compile_rules(ruleset)  # cross-references and the route tree: raises ConfigError naming file and path
    return ruleset


def _matcher_lists(data: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(path, value) of every matcher list in one file's raw sections."""
    found: list[tuple[str, Any]] = []
    for section, keys in (
        ("inhibit_rules", ("source_matchers", "target_matchers")),
        ("aggregation", ("matchers",)),
        ("heartbeats", ("matchers",)),
    ):
        items = data.get(section)
        for i, item in enumerate(items if isinstance(items, list) else ()):
            if isinstance(item, dict):
                found += [(f"{section}[{i}].{key}", item[key]) for key in keys if key in item]
    routes: list[tuple[str, Any]] = [("route", data.get("route"))]
    while routes:
        path, route = routes.pop()
        if isinstance(route, dict):
            if "matchers" in route:
                found.append((f"{path}.matchers", route["matchers"]))
            children = route.get("routes")
            routes += [(f"{path}.routes[{k}]", c) for k, c in enumerate(children if isinstance(children, list) else ())]
    return found


def matcher_notes(path: Path) -> list[ConfigProblem]:
    """Matchers that load but that only Alertmanager's classic parser reads as written (Alertmanager
    warns about each on load: its UTF-8 grammar is to become the only one); for `check-config`."""
    notes: list[ConfigProblem] = []
    for file in rule_files(path) if path.exists() else []:
        try:
            data = yaml.load(file.read_text(encoding="utf-8"), Loader=_StrictLoader)  # noqa: S506 - a SafeLoader
        except yaml.YAMLError:
            continue  # reported by load_ruleset
        for where, value in _matcher_lists(data if isinstance(data, dict) else {}):
            for j, text in enumerate(value if isinstance(value, list) else [value]):
                if isinstance(text, str) and (note := fallback_note(text)):
                    at = f"{where}[{j}]" if isinstance(value, list) else where
                    notes.append(ConfigProblem(str(file), at, f"{text!r}: {note}"))
    return notes
